# -*- coding: utf-8 -*-
"""The operator's side of pike's runs against the pike-era Ironic: plain
REST calls (``requests``) to its API.  Python 2.7 code, imported by bare
name (this folder is the run's top-level directory) by the driver's
end-to-end tests (``test_pike_e2e``) and the whole-stack player
(``play_pike_stack``).
"""

import json
import os
import time

import requests

from e2e_report import green_stacks

#: Seconds to wait for Ironic before a wait fails.
TIMEOUT = 60


class Operator(object):
    """The operator's side: plain REST calls to the real Ironic.

    :param url: Ironic's API root (no ``/v1``).
    :param microversion: the ``X-OpenStack-Ironic-API-Version`` to send.
    """

    def __init__(self, url, microversion):
        self.url = url.rstrip('/') + '/v1'
        self.headers = {'X-OpenStack-Ironic-API-Version': microversion,
                        'Content-Type': 'application/json'}

    def request(self, method, path, body=None):
        """:returns: (status, decoded JSON body or None)."""
        resp = requests.request(
            method, self.url + path, headers=self.headers, timeout=30,
            data=json.dumps(body) if body is not None else None)
        return resp.status_code, (resp.json() if resp.content else None)

    def ok(self, method, path, body=None):
        """:meth:`request`; :raises AssertionError: an answer >= 300."""
        status, data = self.request(method, path, body)
        if status >= 300:
            raise AssertionError('%s %s: HTTP %s %s' % (method, path, status,
                                                        data))
        return data

    def node(self, node):
        return self.ok('GET', '/nodes/%s' % node)

    def wait_for(self, node, check, what, timeout=TIMEOUT):
        """Poll the node until ``check(node_dict)`` is true, unlocked.

        :raises AssertionError: not within ``timeout`` seconds (with the
            green threads' stacks).
        """
        deadline = time.time() + timeout
        while True:
            n = self.node(node)
            if check(n) and not n['reservation']:
                return n
            if time.time() > deadline:
                raise AssertionError('node %s: no %s in %d s: %s/%s '
                                     'last_error=%s; the green threads:\n%s'
                                     % (node, what, timeout,
                                        n['provision_state'],
                                        n['target_provision_state'],
                                        n['last_error'], green_stacks()))
            time.sleep(0.05)

    def wait_state(self, node, state, timeout=TIMEOUT):
        return self.wait_for(node, lambda n: n['provision_state'] == state,
                             state, timeout)

    def set_state(self, node, target):
        self.ok('PUT', '/nodes/%s/states/provision' % node,
                {'target': target})

    def create_available_node(self, deploy_interface='direct', name=None,
                              resource_class=None):
        """Enroll a fake-hardware node with one port (no physical network,
        so that a VIF attach needs no Neutron); bring it to ``available``
        through manage and provide, powered off.  The network interface is
        Ironic's default (``flat``).  :returns: the node's uuid."""
        fields = {
            'driver': 'fake-hardware', 'deploy_interface': deploy_interface,
            'boot_interface': 'fake', 'power_interface': 'fake',
            'management_interface': 'fake',
            'properties': {'cpus': 1, 'memory_mb': 1024, 'local_gb': 10,
                           'cpu_arch': 'x86_64'}}
        if name:
            fields['name'] = name
        if resource_class:
            fields['resource_class'] = resource_class
        node = self.ok('POST', '/nodes', fields)['uuid']
        self.ok('POST', '/ports', {'node_uuid': node,
                                   'address': '52:54:00:%02x:%02x:%02x' % (
                                       tuple(bytearray(os.urandom(3))))})
        self.set_state(node, 'manage')
        self.wait_state(node, 'manageable')
        self.set_state(node, 'provide')
        self.wait_state(node, 'available')
        self.ok('PUT', '/nodes/%s/states/power' % node,
                {'target': 'power off'})
        self.wait_for(node, lambda n: n['power_state'] == 'power off',
                      'power off')
        return node
