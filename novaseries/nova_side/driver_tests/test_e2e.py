"""End to end: Nova's IronicDriver.spawn()/destroy() against a real Ironic.

Driver level, with Nova's objects, database and test fixtures; Nova's
``[ironic]`` options point at the real Ironic with ``auth_type = none`` and
an ``endpoint_override``.  While spawn() waits for the deploy (the node is
held in ``wait call-back`` by the real conductor), an operator undeploys the
node, or puts it in maintenance and deletes it, through the real API.

* With the fix, spawn() fails with IronicNodeLost (an InstanceDeployFailure,
  so the compute manager reschedules or errors the build) whose message is
  its generic text, "The bare metal node was torn down or deleted outside
  of Nova during the deploy." (it becomes the instance fault, which the
  server's owner reads); what Ironic showed is in the compute log, at
  WARNING, from nova.virt.ironic.driver.  destroy() then leaves the node
  ``available`` with no VIF, no instance_uuid and empty instance_info (or,
  when it was deleted, does not fail).
* Without it (the reproducer tree), spawn() raises InstanceNotFound: the bug.

Two more cases that are not the bug, for both trees:

* the real deploy fails (the image URL answers 404): spawn() raises
  InstanceDeployFailure with Ironic's last_error (not IronicNodeLost), and
  destroy() leaves the node ``available``;
* the user deletes the server while the node is in ``wait call-back``
  (task_state DELETING in the database): with the series, spawn() raises
  UnexpectedDeletingTaskStateError (no reschedule); on the reproducer tree,
  InstanceDeployFailure "provisioning was aborted".  destroy() then
  unprovisions the node.

The set-up they share, and what the tree is expected to show, is in
``e2e.py``.
"""

import e2e  # first: Nova's monkey patching, or this module's skip

import os
import re
import time

from nova import exception
from nova import utils as nova_utils


class TestSpawnAgainstRealIronic(e2e.DriverAgainstRealIronic):
    """IronicDriver.spawn() while an operator tears the node down."""

    def test_nova_runs_in_the_concurrency_mode_asked_for(self):
        # novaseries runs these tests in each of Nova's concurrency modes
        # (OS_NOVA_DISABLE_EVENTLET_PATCHING, read by nova.monkey_patch):
        # the driver's threads are the ones that mode gives.
        threads = os.environ.get('OS_NOVA_DISABLE_EVENTLET_PATCHING',
                                 '').lower() in ('1', 'true', 'yes')
        self.assertEqual(threads, nova_utils.concurrency_mode_threading())
        print('e2e: nova concurrency mode: %s' % (
            'threading' if threads else 'eventlet'))

    def _driver_warnings(self):
        """The WARNING lines nova.virt.ironic.driver logged so far."""
        return [line for line in self.stdlog.logger.output.splitlines()
                if ' WARNING [nova.virt.ironic.driver] ' in line]

    def _assert_deploy_failed(self, result, logged):
        """spawn() failed the way the tree under test must fail.

        :param logged: regular expression (``{node}`` is the node's uuid)
            that a WARNING line of nova.virt.ironic.driver must match on
            the fixed tree: the reason, which is not in the message.
        """
        error = result.get('error')
        if e2e.EXPECT_FIXED:
            self.assertTrue(hasattr(exception, 'IronicNodeLost'),
                            'REALIRONIC_EXPECT=fixed on a tree without the '
                            'fix')
            self.assertIsInstance(error, exception.IronicNodeLost, result)
            self.assertIsInstance(error, exception.InstanceDeployFailure)
            self.assertNotIsInstance(error, exception.InstanceNotFound)
            # The message becomes the instance fault: IronicNodeLost's
            # generic text, which names neither the node nor anything
            # Ironic said (the node may be another tenant's by now).
            fmt = exception.IronicNodeLost.msg_fmt
            self.assertEqual([], re.findall(r'%\((\w+)\)', fmt))
            self.assertEqual(fmt, str(error))
            self.assertNotIn(self.node, str(error))
            warnings = self._driver_warnings()
            pattern = logged.format(node=re.escape(self.node))
            self.assertTrue(
                any(re.search(pattern, line) for line in warnings),
                'no WARNING of nova.virt.ironic.driver matches %r: %s' % (
                    pattern, warnings))
            print('e2e: logged: %s' % [
                line.split('] ', 1)[-1] for line in warnings])
        else:
            # the bug: the manager takes this as "the user deleted it"
            self.assertIsInstance(error, exception.InstanceNotFound, result)

    def test_undeploy_in_wait_callback(self):
        thread, result = self._spawn_in_background()
        node = self.client.wait_state(self.node, 'wait call-back')
        self.assertEqual(self.instance.uuid, node['instance_uuid'])
        self.client.ok('PUT', '/nodes/%s/states/provision' % self.node,
                       {'target': 'deleted'})
        self._wait_spawn(thread, result, 'the undeploy')
        # seen while Ironic is still ``deleting``, or once it cleared the
        # association
        self._assert_deploy_failed(
            result, r'Ironic node {node} (is being|was) torn down during '
            r'the deploy')
        if not e2e.EXPECT_FIXED:
            self.client.wait_state(self.node, 'available')
            return
        # what the compute manager does next for a failed deploy
        t0 = time.monotonic()
        self.driver.destroy(self.ctx, self.instance, self.network_info)
        print('destroy() returned after %.1f s; %s' % (
            time.monotonic() - t0,
            'spawn() had waited for Ironic to tear the node down'
            if 'Ironic tore down node %s' % self.node in
            self.stdlog.logger.output else 'Ironic was done already'))
        node = self.client.wait_state(self.node, 'available', timeout=30)
        self.assertIsNone(node['instance_uuid'])
        self.assertEqual({}, node['instance_info'])
        self.assertIsNone(node['target_provision_state'])
        self.assertEqual([], self.client.ok(
            'GET', '/nodes/%s/vifs' % self.node)['vifs'])

    def test_maintenance_and_delete_in_wait_callback(self):
        thread, result = self._spawn_in_background()
        self.client.wait_state(self.node, 'wait call-back')
        status, _body = self.client.request('DELETE', '/nodes/%s' % self.node)
        self.assertEqual(409, status)  # associated with the instance
        self.client.ok('PUT', '/nodes/%s/maintenance' % self.node,
                       {'reason': 'e2e'})
        self.client.ok('DELETE', '/nodes/%s' % self.node)
        self._wait_spawn(thread, result, 'the delete')
        self._assert_deploy_failed(
            result, r'Ironic node {node} was deleted during the deploy')
        if not e2e.EXPECT_FIXED:
            return
        # destroy() must cope with the node being gone
        self.driver.destroy(self.ctx, self.instance, self.network_info)
        status, _body = self.client.request('GET', '/nodes/%s' % self.node)
        self.assertEqual(404, status)

    def test_deploy_failed(self):
        """The real deploy fails (the image URL answers 404): Ironic moves
        the node from ``deploying`` to ``deploy failed`` with a last_error,
        and spawn() raises InstanceDeployFailure with that last_error, on
        both trees (not IronicNodeLost: the node is not lost)."""
        thread, result = self._spawn_in_background(
            image_url=self.ironic.missing_image_url)
        self._wait_spawn(thread, result, 'spawn() started')
        error = result.get('error')
        node = self.client.node(self.node)
        self.assertEqual('deploy failed', node['provision_state'])
        self.assertTrue(node['last_error'])
        self.assertIsInstance(error, exception.InstanceDeployFailure, result)
        lost = getattr(exception, 'IronicNodeLost', None)
        if lost is not None:
            self.assertNotIsInstance(error, lost)
        self.assertNotIsInstance(error, exception.InstanceNotFound)
        self.assertIn('Failed to provision instance', str(error))
        self.assertIn(node['last_error'], str(error))
        # what the compute manager does next for a failed deploy
        t0 = time.monotonic()
        self.driver.destroy(self.ctx, self.instance, self.network_info)
        print('destroy() returned after %.1f s' % (time.monotonic() - t0))
        self._assert_unprovisioned()

    def test_user_delete_in_wait_callback(self):
        """The user deletes the server while the node is in ``wait
        call-back``: the API sets task_state DELETING in the database, and
        spawn()'s next poll sees it (instance.refresh()).  With the series,
        spawn() raises UnexpectedDeletingTaskStateError (no reschedule);
        before it (REALIRONIC_EXPECT=bug), InstanceDeployFailure "provisioning
        was aborted".  destroy() then unprovisions the node."""
        thread, result = self._spawn_in_background()
        node = self.client.wait_state(self.node, 'wait call-back')
        self.assertEqual(self.instance.uuid, node['instance_uuid'])
        self._user_delete()
        self._wait_spawn(thread, result, 'task_state DELETING')
        error = result.get('error')
        if e2e.EXPECT_FIXED:
            self.assertIsInstance(
                error, exception.UnexpectedDeletingTaskStateError, result)
        else:
            self.assertIsInstance(error, exception.InstanceDeployFailure,
                                  result)
            self.assertNotIsInstance(
                error, exception.UnexpectedDeletingTaskStateError)
            self.assertIn('provisioning was aborted', str(error))
        # the node was not touched by the failed spawn()
        self.assertEqual('wait call-back',
                         self.client.node(self.node)['provision_state'])
        t0 = time.monotonic()
        self.driver.destroy(self.ctx, self.instance, self.network_info)
        print('destroy() returned after %.1f s' % (time.monotonic() - t0))
        self._assert_unprovisioned()

    def test_driver_connection(self):
        """Record what Nova's connection to Ironic is like (no assertion on
        retries; printed for the report)."""
        conn = self.driver.ironic_connection
        print('nova [ironic] connection: endpoint %s, status_code_retries %s,'
              ' retriable %s' % (conn.get_endpoint(),
                                 getattr(conn, 'status_code_retries', None),
                                 getattr(conn, 'retriable_status_codes',
                                         None)))
        self.assertEqual(self.ironic.url.rstrip('/') + '/v1',
                         conn.get_endpoint().rstrip('/'))
