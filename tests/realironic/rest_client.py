"""A minimal Ironic REST client for preparing nodes in the tests (urllib,
an explicit microversion).  What the tests compare goes through
openstacksdk, as Nova's driver does; this only enrolls nodes, moves them
and reads them back."""

import json
import time
import urllib.error
import urllib.request

from novaseries.realironic import RealIronicError


class Client:
    """Minimal Ironic REST client (urllib) with an explicit microversion."""

    def __init__(self, url, microversion="1.109"):
        self.url = url.rstrip("/")
        self.microversion = microversion

    def request(self, method, path, body=None, microversion=None):
        """:returns: (status, decoded JSON body or None)."""
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + "/v1" + path, data=data, method=method)
        req.add_header("X-OpenStack-Ironic-API-Version", microversion or self.microversion)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                raw = resp.read()
                status = resp.status
        except urllib.error.HTTPError as e:
            raw = e.read()
            status = e.code
        return status, (json.loads(raw) if raw else None)

    def ok(self, method, path, body=None, microversion=None):
        status, data = self.request(method, path, body, microversion)
        if status >= 300:
            raise RealIronicError(f"{method} {path}: HTTP {status} {data}")
        return data

    def node(self, node):
        return self.ok("GET", f"/nodes/{node}")

    def wait_state(self, node, states, timeout=60):
        """Poll until provision_state is in ``states`` and the lock is free."""
        states = {states} if isinstance(states, str) else set(states)
        deadline = time.monotonic() + timeout
        while True:
            n = self.node(node)
            if n["provision_state"] in states and not n["reservation"]:
                return n
            settled = not n["reservation"] and not n["target_provision_state"]
            if time.monotonic() > deadline or (settled and n["last_error"]):
                raise RealIronicError(
                    f"node {node} did not reach {sorted(states)} in {timeout} s: "
                    f"{n['provision_state']}/{n['target_provision_state']} "
                    f"reservation={n['reservation']} last_error={n['last_error']}")
            time.sleep(0.05)

    def create_available_node(self, name=None, **extra):
        """Enroll a fake-hardware node and bring it to ``available``, power off.

        :returns: the node's uuid.
        """
        body = {"driver": "fake-hardware", "deploy_interface": "direct",
                "boot_interface": "fake", "power_interface": "fake",
                "management_interface": "fake", "network_interface": "noop",
                "properties": {"cpus": 1, "memory_mb": 1024, "local_gb": 10,
                               "cpu_arch": "x86_64"}}
        if name:
            body["name"] = name
        body.update(extra)
        node = self.ok("POST", "/nodes", body)["uuid"]
        self.ok("PUT", f"/nodes/{node}/states/provision", {"target": "manage"})
        self.wait_state(node, "manageable")
        self.ok("PUT", f"/nodes/{node}/states/provision", {"target": "provide"})
        self.wait_state(node, "available")
        self.ok("PUT", f"/nodes/{node}/states/power", {"target": "power off"})
        deadline = time.monotonic() + 30
        while self.node(node)["power_state"] != "power off":
            if time.monotonic() > deadline:
                raise RealIronicError(f"node {node} did not power off")
            time.sleep(0.05)
        return node
