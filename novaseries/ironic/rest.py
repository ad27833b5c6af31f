"""A minimal Ironic REST client (urllib, an explicit microversion).

For the operator's side of the tests and of ``run --ironic real``: enrol
nodes, move them, read them back, undeploy them.  What Nova sends goes
through openstacksdk, as Nova's driver does; this client is what an
operator's ``baremetal`` commands send.  Standard library only: the
harness, the real-Ironic tests and the scenario player (in Nova's venv)
import it.
"""

import json
import time
import urllib.error
import urllib.request

from novaseries.ironic.service import RealIronicError

#: The microversion the client sends unless told otherwise: what
#: openstacksdk 4.22 caps the baremetal Node resource at.
MICROVERSION = "1.109"
#: The microversion ``baremetal node abort`` (ironicclient) sends: aborting
#: a node in ``wait call-back`` needs it, above :data:`MICROVERSION`.
ABORT_MICROVERSION = "1.110"


def abort_request(node):
    """``baremetal node abort`` of ``node`` as ironicclient sends it:
    ``(method, path, body, microversion)``."""
    return ("PUT", f"/nodes/{node}/states/provision", {"target": "abort"},
            ABORT_MICROVERSION)


class Client:
    """Minimal Ironic REST client (urllib) with an explicit microversion.

    :param url: the API's root, e.g. ``http://127.0.0.1:6385``.
    :param microversion: ``X-OpenStack-Ironic-API-Version`` of every request
        unless a request gives its own.
    :param record: optional callable; after each request it gets a dict
        ``{'method', 'path', 'status', 'microversion', 't0', 't1',
        'faultstring'}`` (``t0``/``t1``: ``time.monotonic()`` before and
        after; ``faultstring``: Ironic's error text for a status >= 400,
        else None).
    :param timeout: seconds a request may take.
    """

    def __init__(self, url, microversion=MICROVERSION, record=None, timeout=30):
        self.url = url.rstrip("/")
        self.microversion = microversion
        self.record = record
        self.timeout = timeout

    def request(self, method, path, body=None, microversion=None):
        """One request to ``/v1<path>``.

        :returns: (HTTP status, decoded JSON body or None).
        :raises OSError: the connection failed (URLError, timeout).
        """
        data = json.dumps(body).encode() if body is not None else None
        version = microversion or self.microversion
        req = urllib.request.Request(self.url + "/v1" + path, data=data, method=method)
        req.add_header("X-OpenStack-Ironic-API-Version", version)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        t0 = time.monotonic()
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                raw = resp.read()
                status = resp.status
        except urllib.error.HTTPError as e:
            raw = e.read()
            status = e.code
        decoded = json.loads(raw) if raw else None
        if self.record is not None:
            self.record({"method": method, "path": "/v1" + path, "status": status,
                         "microversion": version, "t0": t0, "t1": time.monotonic(),
                         "faultstring": faultstring(decoded) if status >= 400 else None})
        return status, decoded

    def ok(self, method, path, body=None, microversion=None):
        """:meth:`request`, whose status must be below 300.

        :raises RealIronicError: any other status (method, path, status and
            Ironic's answer in the message).
        """
        status, data = self.request(method, path, body, microversion)
        if status >= 300:
            raise RealIronicError(f"{method} {path}: HTTP {status} {data}")
        return data

    def node(self, node):
        """``GET /v1/nodes/<node>`` (a dict; RealIronicError on 404)."""
        return self.ok("GET", f"/nodes/{node}")

    def wait_state(self, node, states, timeout=60, interval=0.05):
        """Poll until provision_state is in ``states`` and the lock is free.

        :returns: the node (dict).
        :raises RealIronicError: not reached within ``timeout`` seconds, or
            the node settled with a ``last_error``.
        """
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
            time.sleep(interval)

    def create_available_node(self, name=None, **extra):
        """Enroll a fake-hardware node and bring it to ``available``, power off.

        ``extra``: more fields of the node's POST body (e.g.
        ``deploy_interface``, ``resource_class``).

        :returns: the node's uuid.
        :raises RealIronicError: a refusal, or a state not reached in time.
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


def faultstring(body):
    """Ironic's error text from an error body (``{"error_message": "<JSON
    string with faultstring>"}``, double-encoded), or None."""
    if not isinstance(body, dict) or "error_message" not in body:
        return None
    msg = body["error_message"]
    try:
        return json.loads(msg).get("faultstring")
    except (TypeError, ValueError, AttributeError):
        return str(msg)
