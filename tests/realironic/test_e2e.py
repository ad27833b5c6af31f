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

And the delete of a server whose node Ironic is still ``deploying``
(bug 2169776, the ``nodeleak`` change): Ironic's conductor holds the node's
lock for all of ``deploying`` and refuses the tear-down with 409
(NodeLocked).  ``TestDestroyWhileDeploying`` deploys with the ``fake``
deploy interface, which ``backends.FAKE_DEPLOY_DELAY`` keeps in
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

Which of the two is expected is detected from the tree, for each bug (does
the driver have ``_unprovision_when_unlocked``, resp.
``_deleted_instances_on_ring_nodes``?) unless
``REALIRONIC_EXPECT_NODELEAK`` says ``fixed`` or ``bug`` for both: the
changes are not part of the series that ``REALIRONIC_EXPECT``
(``--expect``) is about (CI runs these tests on master-all, which has
them, with ``--expect fixed``).

Each test prints one line ``e2e: spawn() raised <class> ...`` that
``python -m novaseries run --ironic real`` reads for its table (the lock
tests print ``e2e: destroy() ...`` lines too: what the real Ironic
answered, and when).

The deploy image is the local HTTP image of ``novaseries.realironic``:
image_meta.id is its URL, so the driver sends it as instance_info
image_source.  Ironic requires a checksum for an http image, which Nova does
not send (Nova sends a Glance image UUID, and Glance is not here), so the
test adds image_os_hash_algo/value to the node's instance_info itself before
spawn().  The instance's image_ref stays a UUID, as in Nova.
"""

import _guard

try:
    from nova import monkey_patch
    monkey_patch.patch()
    import fixtures
    from openstack import exceptions as sdk_exc
    import openstack.proxy
    from oslo_utils.fixture import uuidsentinel as uuids
    from oslo_utils import timeutils

    from nova.compute import manager as compute_manager
    from nova.compute import power_state
    from nova.compute import task_states
    from nova.compute import vm_states
    import nova.conf
    from nova import context as nova_context
    from nova import exception
    from nova.network import model as network_model
    from nova import objects
    from nova import test
    from nova.tests import fixtures as nova_fixtures
    from nova import utils as nova_utils
    from nova.virt import fake as fake_virt
    from nova.virt.ironic import driver as ironic_driver
except ImportError as e:  # pragma: no cover
    _guard.skip_or_raise('Nova is needed', e)

import json  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
import uuid  # noqa: E402
import warnings  # noqa: E402

import backends  # noqa: E402
import rest_client  # noqa: E402


#: The unpatched Proxy.get_endpoint: nova.test mocks it (OpenStackSDKFixture)
#: because unit tests never talk to a real service; these do.
_REAL_GET_ENDPOINT = openstack.proxy.Proxy.get_endpoint

#: True on a tree with the fix (patch "fix" of the series).  Detected from
#: the tree unless REALIRONIC_EXPECT says "fixed" or "bug" (then a tree that
#: does not match fails instead of switching expectations).
_EXPECT = os.environ.get('REALIRONIC_EXPECT', 'auto')
FIXED = (hasattr(exception, 'IronicNodeLost') if _EXPECT == 'auto'
         else _EXPECT == 'fixed')

#: True on a tree with the change for bug 2169776 (patches/nodeleak: destroy()
#: retries the tear-down of a locked node).  Detected from the tree unless
#: REALIRONIC_EXPECT_NODELEAK says "fixed" or "bug"; not REALIRONIC_EXPECT:
#: that change is not in the series' tree that CI tests with --expect fixed.
_EXPECT_NODELEAK = os.environ.get('REALIRONIC_EXPECT_NODELEAK', 'auto')
NODELEAK_FIXED = (
    hasattr(ironic_driver.IronicDriver, '_unprovision_when_unlocked')
    if _EXPECT_NODELEAK == 'auto' else _EXPECT_NODELEAK == 'fixed')

#: True on a tree with the change for bug 2169200 (patches/nodeleak: the
#: driver also lists the deleted instances of the nodes its hash ring owns,
#: so that the compute manager's periodic task reaps them).  The same
#: switch: "fixed" or "bug" applies to both node-leak bugs (a tree with
#: all of patches/nodeleak, or with none of it); "auto" detects each fix on
#: its own (does the driver have ``_deleted_instances_on_ring_nodes``?), so
#: that a tree with 2169776's fix and not 2169200's (``--upto 0003``) is
#: judged right.
REAP_FIXED = (
    hasattr(ironic_driver.IronicDriver, '_deleted_instances_on_ring_nodes')
    if _EXPECT_NODELEAK == 'auto' else _EXPECT_NODELEAK == 'fixed')

CONF = nova.conf.CONF


class _DriverAgainstRealIronic(test.TestCase):
    """A real IronicDriver, an instance and a node of the real Ironic."""

    #: seconds to wait for spawn() to return after the operator action
    SPAWN_TIMEOUT = 60

    def setUp(self):
        super().setUp()
        self.useFixture(_RealGetEndpoint())
        self.ironic = backends.ironic()
        self.client = rest_client.Client(self.ironic.url)
        self.flags(auth_type='none', endpoint_override=self.ironic.url,
                   api_retry_interval=1, api_max_retries=60, group='ironic')
        self.ctx = nova_context.get_admin_context()
        self.driver = ironic_driver.IronicDriver(fake_virt.FakeVirtAPI())

    def _prepare(self, image_url=None, deploy_interface='direct'):
        """An available node, an instance on it, the image; then spawn.

        :param image_url: the deploy image (default: the real image; the
            missing image answers 404, so the deploy fails in Ironic).
        :param deploy_interface: the node's: ``direct`` waits in ``wait
            call-back``; ``fake`` stays ``deploying`` (lock held) for
            ``backends.FAKE_DEPLOY_DELAY`` twice, then goes ``active``.
        """
        self.node = self.client.create_available_node(
            deploy_interface=deploy_interface)
        # Nova does not send a checksum for the image (see the docstring).
        self.client.ok('PATCH', '/nodes/%s' % self.node, [
            {'op': 'add', 'path': '/instance_info/image_os_hash_algo',
             'value': 'sha256'},
            {'op': 'add', 'path': '/instance_info/image_os_hash_value',
             'value': self.ironic.image_sha256}])
        flavor = objects.Flavor(
            id=1, flavorid='bm', name='baremetal', memory_mb=1024, vcpus=1,
            root_gb=10, ephemeral_gb=0, swap=0, extra_specs={},
            rxtx_factor=1.0, vcpu_weight=None, disabled=False,
            is_public=True, description=None)
        self.instance = objects.Instance(
            context=self.ctx, uuid=str(uuid.uuid4()),
            project_id=self.ctx.project_id or 'project',
            user_id=self.ctx.user_id or 'user', image_ref=uuids.image,
            display_name='realironic-e2e', host='compute', node=self.node,
            compute_id=1,
            vm_state=vm_states.BUILDING, task_state=task_states.SPAWNING,
            power_state=0, flavor=flavor, instance_type_id=flavor.id,
            memory_mb=1024, vcpus=1, root_gb=10, ephemeral_gb=0,
            config_drive='', system_metadata={}, metadata={})
        self.instance.create()
        with warnings.catch_warnings():
            # an http URL is not a UUID (ImageMeta.id is a UUIDField)
            warnings.simplefilter('ignore')
            self.image_meta = objects.ImageMeta.from_dict(
                {'id': image_url or self.ironic.image_url,
                 'disk_format': 'raw',
                 'container_format': 'bare', 'properties': {}})
        self.network_info = network_model.NetworkInfo([])

    def _spawn_in_background(self, image_url=None, deploy_interface='direct',
                             prepared=False):
        """spawn() in a daemon thread.  :param prepared: ``_prepare()``
        was called already (else it is called here)."""
        if not prepared:
            self._prepare(image_url, deploy_interface)
        self.driver.prepare_for_spawn(self.instance)
        result = {}

        def spawn():
            try:
                self.driver.spawn(self.ctx, self.instance, self.image_meta,
                                  [], None, {}, self.network_info)
                result['returned'] = True
            except Exception as e:  # noqa: BLE001 - checked by the test
                result['error'] = e

        # daemon: a spawn() still polling after a failed test must not keep
        # the test process alive
        thread = threading.Thread(target=spawn, daemon=True)
        thread.start()
        return thread, result

    def _wait_spawn(self, thread, result, after='the operator action'):
        """Wait (bounded) for spawn() to end, and print one line that says
        what it raised: ``e2e: spawn() raised <class> <s> s after <what>:
        <message>`` (read by ``novaseries run --ironic real``)."""
        t0 = time.monotonic()
        thread.join(self.SPAWN_TIMEOUT)
        if thread.is_alive():
            self.fail('spawn() still waiting %d s after %s (node %s)' % (
                self.SPAWN_TIMEOUT, after, self.client.node(self.node)))
        error = result.get('error')
        print('e2e: spawn() raised %s %.1f s after %s: %s' % (
            type(error).__name__ if error is not None else 'nothing',
            time.monotonic() - t0, after, error))
        return result

    def _user_delete(self):
        """What the API's delete does first: task_state DELETING in the
        database (on a copy: spawn() refreshes its own)."""
        deleting = objects.Instance.get_by_uuid(self.ctx, self.instance.uuid)
        deleting.task_state = task_states.DELETING
        deleting.save()

    def _record_requests(self, driver=None):
        """Record every HTTP request of a driver's connection (default
        ``self.driver``; each keystoneauth retry is one) in ``self.sent``:
        (monotonic time, method, path, status, Ironic's faultstring or
        None).  :returns: ``self.sent``."""
        self.sent = []
        driver = driver or self.driver
        rsession = driver.ironic_connection.session.session
        send = rsession.send

        def recording_send(request, **kwargs):
            resp = send(request, **kwargs)
            fault = None
            if resp.status_code >= 400:
                try:
                    fault = json.loads(resp.json()['error_message'])[
                        'faultstring']
                except Exception:  # noqa: BLE001 - only for the report
                    fault = resp.text[:200]
            self.sent.append((time.monotonic(), request.method,
                              request.path_url.split('?')[0],
                              resp.status_code, fault))
            return resp
        rsession.send = recording_send
        self.addCleanup(vars(rsession).pop, 'send', None)
        return self.sent

    def _assert_unprovisioned(self):
        """After destroy(): the node is available, with no instance."""
        node = self.client.wait_state(self.node, 'available', timeout=30)
        self.assertIsNone(node['instance_uuid'])
        self.assertEqual({}, node['instance_info'])
        self.assertIsNone(node['target_provision_state'])
        return node


class TestSpawnAgainstRealIronic(_DriverAgainstRealIronic):
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
        if FIXED:
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
        if not FIXED:
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
        if not FIXED:
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
        if FIXED:
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


class TestDestroyWhileDeploying(_DriverAgainstRealIronic):
    """The user deletes the server while Ironic is ``deploying`` its node
    (bug 2169776).

    The node deploys with the ``fake`` deploy interface, which the real
    Ironic keeps in ``deploying`` with the node's lock held for about 4 s
    (``backends.FAKE_DEPLOY_DELAY``), then ``active``.  As soon as it is
    ``deploying``, the test sets task_state DELETING (what the API's delete
    does first); spawn() sees it at its next poll (within 1 s) and ends, and
    the compute manager's clean-up calls destroy(), while Ironic still holds
    the lock and answers the tear-down request (``PUT
    .../states/provision {"target": "deleted"}``) with 409 NodeLocked.

    Expected (``NODELEAK_FIXED``): with the change, destroy() retries it
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
        if not NODELEAK_FIXED:
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
        if NODELEAK_FIXED:
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


class TestReapLeakedNode(_DriverAgainstRealIronic):
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

    Expected (``REAP_FIXED``): with the change, the driver lists the
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
        self.instance.host = CONF.host
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
        if REAP_FIXED and action == 'reap':
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
        if REAP_FIXED:
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
        if not REAP_FIXED:
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


class _RealGetEndpoint(fixtures.Fixture):
    """Undo OpenStackSDKFixture's mock of Proxy.get_endpoint."""

    def _setUp(self):
        self.useFixture(fixtures.MonkeyPatch(
            'openstack.proxy.Proxy.get_endpoint', _REAL_GET_ENDPOINT))
