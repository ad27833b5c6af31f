"""End to end: the node-leak change (``patches/nodeleak``) against a real Ironic.

The delete of a server whose node Ironic is still ``deploying``
(bug 2169776, the ``nodeleak`` change): Ironic's conductor holds the node's
lock for all of ``deploying`` and refuses the tear-down with 409
(NodeLocked).  ``TestDestroyWhileDeploying`` deploys with the ``fake``
deploy interface, which ``contract_backends.FAKE_DEPLOY_DELAY`` keeps in
``deploying`` (lock held) for about 4 s before it goes ``active``:

* with that change, destroy() retries the tear-down every
  ``[ironic] api_retry_interval`` until the lock is released, and the node
  ends ``available`` without the instance; when the lock outlasts
  ``[ironic] api_max_retries`` retries, destroy() raises NovaException;
* without it, destroy() raises openstack's ConflictException (409) and the
  node goes on to ``active`` with the deleted server's instance.

And the periodic reaper and a node left deployed for a server Nova
deleted alone (bug 2169200, the ``nodeleak`` change too):
``TestReapLeakedNode`` deploys a node through the driver, deletes the
instance in Nova's database only (the API's local delete, as when the
nova-compute is down), then runs a new ``ComputeManager``'s
``_cleanup_running_deleted_instances`` (the ironic driver, a fresh node
cache):

* with that change, the driver lists the deleted instance, and ``reap``
  tears the node down (``deleting`` to ``available``, no instance_uuid);
  ``log`` only logs it and sends Ironic reads only;
* without it, nothing is listed, the task does nothing and the node stays
  ``active`` with the deleted instance.

The set-up they share with ``test_e2e.py``, and what the tree is expected
to show, is in ``e2e.py``.
"""

import e2e  # first: Nova's monkey patching, or this module's skip

import threading
import time

import fixtures
from openstack import exceptions as sdk_exc
from oslo_utils import timeutils

from nova.compute import manager as compute_manager
from nova.compute import power_state
from nova.compute import vm_states
from nova import context as nova_context
from nova import exception
from nova.network import model as network_model
from nova import objects
from nova.tests import fixtures as nova_fixtures
from nova.virt import fake as fake_virt
from nova.virt.ironic import driver as ironic_driver


class TestDestroyWhileDeploying(e2e.DriverAgainstRealIronic):
    """The user deletes the server while Ironic is ``deploying`` its node
    (bug 2169776).

    The node deploys with the ``fake`` deploy interface, which the real
    Ironic keeps in ``deploying`` with the node's lock held for about 4 s
    (``contract_backends.FAKE_DEPLOY_DELAY``), then ``active``.  As soon as it is
    ``deploying``, the test sets task_state DELETING (what the API's delete
    does first); spawn() sees it at its next poll (within 1 s) and ends, and
    the compute manager's clean-up calls destroy(), while Ironic still holds
    the lock and answers the tear-down request (``PUT
    .../states/provision {"target": "deleted"}``) with 409 NodeLocked.

    Expected (``e2e.EXPECT_NODELEAK_FIXED``): with the change, destroy() retries it
    every ``[ironic] api_retry_interval`` (1 s here) until the lock is gone
    and the node ends ``available`` without the instance; when the lock
    outlasts ``[ironic] api_max_retries`` retries, NovaException.  Without
    it, destroy() raises openstack's ConflictException after one request and
    the node goes ``active`` with the deleted server's instance.
    """

    def _delete_while_deploying(self):
        """spawn() on a ``fake`` deploy node; once Ironic holds the node in
        ``deploying``, the user deletes the server; spawn() ends at its next
        poll.  Asserts that the node is still ``deploying``, locked, for
        the instance: what destroy() meets next."""
        self._record_requests()
        thread, result = self._spawn_in_background(deploy_interface='fake')
        deadline = time.monotonic() + 30
        while True:
            node = self.client.node(self.node)
            if node['provision_state'] == 'deploying' and node['reservation']:
                break
            self.assertLess(time.monotonic(), deadline,
                            'node %s never deploying and locked: %s' % (
                                self.node, node))
            time.sleep(0.05)
        self.t_deploying = time.monotonic()
        self._user_delete()
        self._wait_spawn(thread, result, 'task_state DELETING')
        # nova 34.0.0: InstanceDeployFailure "provisioning was aborted";
        # with the teardown series: UnexpectedDeletingTaskStateError
        self.assertIsInstance(result.get('error'), (
            exception.InstanceDeployFailure,
            exception.UnexpectedDeletingTaskStateError), result)
        node = self.client.node(self.node)
        self.assertEqual(
            ('deploying', self.instance.uuid),
            (node['provision_state'], node['instance_uuid']),
            'the deploy was over before destroy(): %s' % node)
        self.assertTrue(node['reservation'], node)

    def _destroy(self):
        """destroy(), timed: :returns: (error or None, the tear-down
        requests it sent: [(seconds after destroy() started, status,
        fault)]).  Prints ``e2e: destroy() ...`` lines."""
        mark = len(self.sent)
        t0 = time.monotonic()
        error = None
        try:
            self.driver.destroy(self.ctx, self.instance, self.network_info)
        except Exception as e:  # noqa: BLE001 - checked by the test
            error = e
        took = time.monotonic() - t0
        puts = [(t - t0, status, fault)
                for t, method, path, status, fault in self.sent[mark:]
                if method == 'PUT' and path.endswith('/states/provision')]
        print('e2e: destroy() %s after %.1f s (%.1f s after the node was '
              'seen deploying): %s' % (
                  'raised %s' % type(error).__name__ if error else
                  'returned', took, time.monotonic() - self.t_deploying,
                  error or ''))
        print('e2e: destroy() requested the tear-down %d time(s): %s' % (
            len(puts), ', '.join('%d at +%.2f s' % (status, t)
                                 for t, status, _f in puts)))
        faults = sorted({f for _t, _s, f in puts if f})
        if faults:
            print('e2e: Ironic said: %s' % faults)
        logged = [line.split('] ', 1)[-1].split(': Failed to set', 1)[0]
                  for line in self.stdlog.logger.output.splitlines()
                  if '[nova.virt.ironic.driver]' in line and 'locked' in line]
        if logged:
            print('e2e: logged: %s' % logged)
        return error, puts

    def _assert_left_deployed(self):
        """The leak: the node finishes its deploy (``active``) for the
        instance nobody tore it down for."""
        node = self.client.wait_state(self.node, 'active', timeout=30)
        self.assertEqual(self.instance.uuid, node['instance_uuid'])
        print('e2e: node %s %.1f s after it was seen deploying, still '
              'with the instance' % (
                  node['provision_state'],
                  time.monotonic() - self.t_deploying))

    def test_delete_while_deploying(self):
        self._delete_while_deploying()
        error, puts = self._destroy()
        self.assertTrue(puts)
        self.assertEqual(409, puts[0][1])
        self.assertIn('is locked by host', puts[0][2])
        if not e2e.EXPECT_NODELEAK_FIXED:
            # the bug: one request, its 409 ends destroy() (the build's
            # clean-up, then the delete, fail)
            self.assertIsInstance(error, sdk_exc.ConflictException,
                                  'destroy() did not fail with 409')
            self.assertEqual(409, error.status_code)
            self.assertEqual(1, len(puts))
            self._assert_left_deployed()
            return
        self.assertIsNone(error, 'destroy() raised %r' % error)
        # refused while Ironic held the lock, accepted once it let go
        self.assertEqual([409] * (len(puts) - 1) + [202],
                         [status for _t, status, _f in puts])
        self.assertGreater(len(puts), 1)
        self.assertIn('Ironic node %s is locked in provision state '
                      'deploying; reading it again in 1 s to request its '
                      'tear-down (retry 1 of 60)' % self.node,
                      self.stdlog.logger.output)
        self._assert_unprovisioned()
        print('e2e: node available, no instance, %.1f s after it was seen '
              'deploying' % (time.monotonic() - self.t_deploying))

    def test_delete_while_deploying_lock_outlasts_retries(self):
        """One retry, 1 s later: the lock (about 4 s) outlasts it."""
        self.flags(api_max_retries=1, api_retry_interval=1, group='ironic')
        self._delete_while_deploying()
        error, puts = self._destroy()
        self.assertEqual(409, puts[0][1])
        if e2e.EXPECT_NODELEAK_FIXED:
            self.assertIs(type(error), exception.NovaException, error)
            # 1 + api_max_retries requests, all refused
            self.assertEqual([409, 409], [s for _t, s, _f in puts])
            self.assertGreaterEqual(puts[1][0], 1.0)
            # the message can become the server's fault: no node
            self.assertIn(self.instance.uuid, str(error))
            self.assertNotIn(self.node, str(error))
            self.assertIn('Ironic node %s stayed locked in provision state '
                          'deploying' % self.node, self.stdlog.logger.output)
        else:
            self.assertIsInstance(error, sdk_exc.ConflictException,
                                  'destroy() did not fail with 409')
            self.assertEqual(1, len(puts))
        node = self.client.node(self.node)
        self.assertEqual(self.instance.uuid, node['instance_uuid'])
        self.assertEqual('deploying', node['provision_state'])
        self._assert_left_deployed()


class TestReapLeakedNode(e2e.DriverAgainstRealIronic):
    """The periodic reaper and a node left deployed for a deleted server
    (bug 2169200).

    The driver deploys a node for an instance against the real Ironic
    (``fake`` deploy interface: ``deploying`` for about 4 s, then
    ``active``; spawn() returns).  The server is then deleted by the API
    alone, as when its nova-compute is down: the test does in Nova's
    database what the API's local delete does (vm_state DELETED,
    terminated_at, then ``Instance.destroy()``), and nothing reaches the
    driver, so the node stays ``active`` for the deleted instance.  Then a
    restarted nova-compute: a new ``ComputeManager`` whose driver is the
    tree's ``IronicDriver`` (``compute_driver = ironic.IronicDriver``, a
    fresh node cache), and the manager's own periodic task
    ``_cleanup_running_deleted_instances`` once, as it runs at start-up,
    with ``[DEFAULT] running_deleted_instance_action = log``; then again
    with ``reap`` (the default), from another new ComputeManager.  (Neutron
    is Nova's NeutronFixture: the reap deallocates the instance's network,
    which has no port here.)  One test, not one per action: a second
    deploy would cost about 12 s.

    Expected (``e2e.EXPECT_REAP_FIXED``): with the change, the driver lists the
    deleted instance (list_instance_uuids()); ``log`` logs the WARNING and
    sends Ironic reads only; ``reap`` tears the node down: one tear-down
    request (202), Ironic goes through ``deleting`` (and ``cleaning``,
    which passes in milliseconds here) to ``available`` without
    instance_uuid.  Without it, the driver does not list it, neither run
    does anything but reads and the node stays ``active`` with the deleted
    instance (the leak).
    """

    def setUp(self):
        super().setUp()
        # what the reap's _shutdown_instance asks Neutron (no ports)
        self.useFixture(nova_fixtures.NeutronFixture(self))

    def _deploy_and_delete_in_nova(self):
        """spawn() to ``active``; then the API's local delete.

        Asserts that a fresh driver lists the live instance before the
        delete (from its node cache, on both trees)."""
        self._prepare(deploy_interface='fake')
        # a live instance of this nova-compute, with the (empty) network
        # info cache the API creates with every instance
        self.instance.host = e2e.CONF.host
        self.instance.info_cache = objects.InstanceInfoCache(
            instance_uuid=self.instance.uuid,
            network_info=network_model.NetworkInfo([]))
        self.instance.save()
        thread, result = self._spawn_in_background(prepared=True)
        t0 = time.monotonic()
        thread.join(self.SPAWN_TIMEOUT)
        self.assertFalse(thread.is_alive(), 'spawn() still waiting %d s '
                         'after it started: %s' % (
                             self.SPAWN_TIMEOUT, self.client.node(self.node)))
        self.assertTrue(result.get('returned'), result)
        node = self.client.wait_state(self.node, 'active')
        self.assertEqual(self.instance.uuid, node['instance_uuid'])
        print('e2e: spawn() returned after %.1f s: node active' % (
            time.monotonic() - t0))
        # what the build saves next
        self.instance.vm_state = vm_states.ACTIVE
        self.instance.task_state = None
        self.instance.power_state = power_state.RUNNING
        self.instance.launched_at = timeutils.utcnow()
        self.instance.save()
        self.assertIn(self.instance.uuid, ironic_driver.IronicDriver(
            fake_virt.FakeVirtAPI()).list_instance_uuids())
        # the API's local delete (nova.compute.api.API._do_delete with
        # local=True, then Instance.destroy()), on its own copy
        deleted = objects.Instance.get_by_uuid(self.ctx, self.instance.uuid)
        deleted.vm_state = vm_states.DELETED
        deleted.task_state = None
        deleted.terminated_at = timeutils.utcnow()
        deleted.save()
        deleted.destroy()
        node = self.client.node(self.node)
        self.assertEqual(('active', self.instance.uuid),
                         (node['provision_state'], node['instance_uuid']))

    def _new_compute_manager(self):
        """A ComputeManager, as a restarted nova-compute has: its driver
        is a new IronicDriver (``compute_driver``) with an empty node
        cache, whose connection to the real Ironic is made on first use.
        Its Placement client gets the endpoint of nova.test's mock
        (OpenStackSDKFixture's, undone for Ironic in these tests): the
        periodic task does not use Placement."""
        with fixtures.MockPatch('openstack.proxy.Proxy.get_endpoint'):
            manager = compute_manager.ComputeManager()
        self.assertIsInstance(manager.driver, ironic_driver.IronicDriver)
        self.assertIsNone(manager.driver._ironic_connection)
        return manager

    def _watch_node(self):
        """Poll the node every 0.05 s in a thread: :returns: (the list of
        (provision_state, instance_uuid is set) it records, collapsing
        repeats; a function that stops the poller)."""
        seen = []
        done = threading.Event()

        def watch():
            while not done.is_set():
                node = self.client.node(self.node)
                obs = (node['provision_state'],
                       node['instance_uuid'] is not None)
                if not seen or seen[-1] != obs:
                    seen.append(obs)
                done.wait(0.05)
        thread = threading.Thread(target=watch, daemon=True)
        thread.start()

        def stop():
            done.set()
            thread.join(5)
        self.addCleanup(stop)
        return seen, stop

    def _run_task(self, action):
        """A restarted nova-compute (a new ComputeManager, so a new driver)
        runs its periodic task once, with ``running_deleted_instance_action
        = action``.

        :returns: (what the new driver listed first, the requests it sent
            during the task: [(method, path, status)], the node's states
            seen meanwhile: [(provision_state, instance_uuid set?)]).
            Prints ``e2e: ...`` lines."""
        self.flags(compute_driver='ironic.IronicDriver',
                   running_deleted_instance_action=action,
                   running_deleted_instance_timeout=0)
        manager = self._new_compute_manager()
        listed = manager.driver.list_instance_uuids()
        sent = self._record_requests(manager.driver)
        seen, stop_watching = self._watch_node()
        t0 = time.monotonic()
        manager._cleanup_running_deleted_instances(
            nova_context.get_admin_context())
        took = time.monotonic() - t0
        if e2e.EXPECT_REAP_FIXED and action == 'reap':
            self.client.wait_state(self.node, 'available', timeout=30)
        stop_watching()
        requests = [(method, path.replace(self.node, '<node>'), status)
                    for _t, method, path, status, _f in sent]
        summary = []
        for request in requests:
            if summary and summary[-1][0] == request:
                summary[-1][1] += 1
            else:
                summary.append([request, 1])
        print('e2e: [%s] the new driver listed %s; '
              '_cleanup_running_deleted_instances took %.1f s; requests: %s'
              % (action, 'the deleted instance' if self.instance.uuid in
                 listed else 'no deleted instance', took, ', '.join(
                     '%s %s %d%s' % (r + (' (x%d)' % n if n > 1 else '',))
                     for r, n in summary) or 'none'))
        print('e2e: [%s] node seen: %s' % (action, ' -> '.join(
            '%s%s' % (state, ' (instance)' if associated else '')
            for state, associated in seen)))
        return listed, requests, seen

    def _assert_left_deployed(self, requests, seen):
        """The driver sent Ironic nothing but reads, and the node is still
        ``active`` for the deleted instance, idle."""
        self.assertLessEqual({method for method, _p, _s in requests},
                             {'GET'}, requests)
        self.assertEqual([('active', True)], seen)
        node = self.client.node(self.node)
        self.assertEqual(
            ('active', self.instance.uuid, None, None),
            (node['provision_state'], node['instance_uuid'],
             node['target_provision_state'], node['reservation']))

    def test_log_then_reap_node_of_deleted_instance(self):
        """``log`` first, then ``reap``: what doc/operators.rst advises for
        the upgrade (review the leaked nodes, then let Nova reap them)."""
        self._deploy_and_delete_in_nova()
        warning = ("Detected instance with name label '%s' which is marked "
                   "as DELETED but still present on host." %
                   self.instance.name)
        reaping = ("Destroying instance with name label '%s' which is "
                   "marked as DELETED but still present on host." %
                   self.instance.name)

        # log: a WARNING (with the change), Ironic only read
        listed, requests, seen = self._run_task('log')
        if e2e.EXPECT_REAP_FIXED:
            self.assertEqual([self.instance.uuid], listed)
            self.assertIn(warning, self.stdlog.logger.output)
        else:
            self.assertNotIn(self.instance.uuid, listed)
            self.assertNotIn(warning, self.stdlog.logger.output)
        self._assert_left_deployed(requests, seen)

        # reap
        listed, requests, seen = self._run_task('reap')
        output = self.stdlog.logger.output
        self.assertNotIn('Periodic cleanup failed to delete instance',
                         output)
        if not e2e.EXPECT_REAP_FIXED:
            # the bug: not listed, so never reaped
            self.assertNotIn(self.instance.uuid, listed)
            self.assertNotIn(reaping, output)
            self._assert_left_deployed(requests, seen)
            print('e2e: [reap] node left active for the deleted instance')
            # tidy up for the next tests (they do not wait for it)
            self.addCleanup(self.client.request, 'PUT',
                            '/nodes/%s/states/provision' % self.node,
                            {'target': 'deleted'})
            return
        self.assertEqual([self.instance.uuid], listed)
        self.assertIn(reaping, output)
        # one tear-down request, accepted
        self.assertEqual(
            [('PUT', '/v1/nodes/<node>/states/provision', 202)],
            [r for r in requests if r[0] != 'GET'])
        # Ironic tore it down: deleting, then cleaning (automated cleaning
        # is off: it passes quickly, but on a loaded machine the driver's
        # last read may still see it), then available, without the
        # instance
        self.assertEqual(('active', True), seen[0])
        self.assertIn(('deleting', True), seen)
        self.assertLessEqual({state for state, _a in seen},
                             {'active', 'deleting', 'cleaning', 'available'})
        self.assertIn(seen[-1], {('cleaning', False), ('available', False)})
        node = self.client.wait_state(self.node, 'available', timeout=30)
        self.assertIsNone(node['instance_uuid'])
        self.assertEqual({}, node['instance_info'])
        self.assertIsNone(node['target_provision_state'])
        # the next run finds nothing left
        self.assertEqual(
            [], self._new_compute_manager().driver.list_instance_uuids())
