"""The operator's controls of the real Ironic behind the main job's
scenarios: the requests ``baremetal node undeploy``, ``maintenance set``,
``delete``, ``abort`` send, and another deploy's claim of a node, each
recorded as the operator's (``actor: operator``) with what it is for.

Standard library only: the player, in Nova's venv, imports it.
"""

import time

from novaseries.ironic import real_deploy, request_log, rest


class OperatorControls:
    """The fixture's operator controls, on a real Ironic; mixed into
    ``real_backend.RealIronicBackend``, whose REST ``client``, request
    recording (``_why``), node reads (``_get_json``, ``_wait_node``),
    history (``_lock``, ``_append_history``) and ``image_patch`` they use.

    Each raises AssertionError when Ironic refuses it, as the operator's
    CLI would fail.
    """

    def _operator(self, why, method, path, body=None, microversion=None):
        self._why.text = why
        try:
            status, data = self.client.request(method, path, body,
                                               microversion)
        finally:
            self._why.text = None
        if status >= 300:
            # what the operator's CLI would raise: the fixture's operator
            # controls raise too
            raise AssertionError('%s %s: %s %s' % (method, path, status,
                                                   rest.faultstring(data)))
        return data

    def undeploy(self, node):
        """``baremetal node undeploy``."""
        self._operator('undeploy', 'PUT', '/nodes/%s/states/provision' % node,
                       {'target': 'deleted'})

    def set_maintenance(self, node, on=True, reason=None):
        """``baremetal node maintenance set/unset``."""
        if on:
            self._operator('maintenance', 'PUT', '/nodes/%s/maintenance' % node,
                           {'reason': reason or 'operator'})
        else:
            self._operator('maintenance', 'DELETE',
                           '/nodes/%s/maintenance' % node)

    def delete_node(self, node):
        """``baremetal node delete``."""
        t0 = time.monotonic()
        self._operator('delete', 'DELETE', '/nodes/%s' % node)
        with self._lock:
            self._append_history(node, (request_log.DELETED, None), t0)

    def wait_cleared(self, node, timeout=30):
        """Wait until Ironic no longer associates the node with an instance
        (the end of its ``deleting``), reading it every 50 ms.

        :param timeout: seconds.
        :raises AssertionError: still associated after ``timeout``.
        """
        self._wait_node(
            node, lambda n: not n['instance_uuid'], timeout, 0.05,
            lambda n: 'node %s still has instance %s after %ss' % (
                node, n['instance_uuid'], timeout))

    def associate(self, node, instance_id):
        """Another deploy claims the free node: what Nova's driver sends
        for a deploy (``instance_uuid``, the image with its checksum, then
        the ``active`` verb), for another instance."""
        self._operator('associate', 'PATCH', '/nodes/%s' % node, [
            {'op': 'add', 'path': '/instance_uuid', 'value': instance_id}] +
            self.image_patch([{'op': 'add', 'path': real_deploy.IMAGE_SOURCE,
                               'value': 'other-image'}]))
        self._operator('associate', 'PUT', '/nodes/%s/states/provision' % node,
                       {'target': 'active'})

    def fail_deploy(self, node):
        """The deploy fails in Ironic: a real failure, set up before the
        deploy (:attr:`fail_next_deploy`: its image answers 404, so Ironic
        fails it in ``prepare``); here only checked.

        :raises AssertionError: the node is not ``deploy failed``.
        """
        n = self._get_json(node, observer=True)
        if n is None or n['provision_state'] != 'deploy failed':
            raise AssertionError('node %s is not deploy failed: %s' % (
                node, n and n['provision_state']))

    def abort(self, node):
        """``baremetal node abort`` (:func:`~novaseries.ironic.rest.
        abort_request`: above openstacksdk's microversion)."""
        self._operator('abort', *rest.abort_request(node))
