"""End to end: Nova's IronicDriver.spawn()/destroy() against a real Ironic.

Driver level, with Nova's objects, database and test fixtures; Nova's
``[ironic]`` options point at the real Ironic with ``auth_type = none`` and
an ``endpoint_override``.  While spawn() waits for the deploy (the node is
held in ``wait call-back`` by the real conductor), an operator undeploys the
node, or puts it in maintenance and deletes it, through the real API.

* With the fix, spawn() fails with IronicNodeLost (an InstanceDeployFailure,
  so the compute manager reschedules or errors the build) whose message is
  its generic text, e.g. "The bare metal node of instance <uuid> was torn
  down or deleted outside of Nova during the deploy." (it becomes the
  instance fault, which the server's owner reads); what Ironic showed is in
  the compute log, at WARNING, from nova.virt.ironic.driver.  destroy() then leaves the node
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

Each test prints one line ``e2e: spawn() raised <class> ...`` that
``python -m novaseries run --ironic real`` reads for its table.

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
    import openstack.proxy
    from oslo_utils.fixture import uuidsentinel as uuids

    from nova.compute import task_states
    from nova.compute import vm_states
    from nova import context as nova_context
    from nova import exception
    from nova.network import model as network_model
    from nova import objects
    from nova import test
    from nova import utils as nova_utils
    from nova.virt import fake as fake_virt
    from nova.virt.ironic import driver as ironic_driver
except ImportError as e:  # pragma: no cover
    _guard.skip_or_raise('Nova is needed', e)

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


class TestSpawnAgainstRealIronic(test.TestCase):
    """IronicDriver.spawn() while an operator tears the node down."""

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

    def test_nova_runs_in_the_concurrency_mode_asked_for(self):
        # novaseries runs these tests in each of Nova's concurrency modes
        # (OS_NOVA_DISABLE_EVENTLET_PATCHING, read by nova.monkey_patch):
        # the driver's threads are the ones that mode gives.
        threads = os.environ.get('OS_NOVA_DISABLE_EVENTLET_PATCHING',
                                 '').lower() in ('1', 'true', 'yes')
        self.assertEqual(threads, nova_utils.concurrency_mode_threading())
        print('e2e: nova concurrency mode: %s' % (
            'threading' if threads else 'eventlet'))

    def _prepare(self, image_url=None):
        """An available node, an instance on it, the image; then spawn.

        :param image_url: the deploy image (default: the real image; the
            missing image answers 404, so the deploy fails in Ironic).
        """
        self.node = self.client.create_available_node()
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

    def _spawn_in_background(self, image_url=None):
        self._prepare(image_url)
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
            # generic text, which may only name our node and instance,
            # nothing of what Ironic said.
            fmt = exception.IronicNodeLost.msg_fmt
            self.assertLessEqual(
                set(re.findall(r'%\((\w+)\)', fmt)), {'node', 'instance'})
            self.assertEqual(
                fmt % {'node': self.node, 'instance': self.instance.uuid},
                str(error))
            self.assertIn(self.instance.uuid, str(error))
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
            'it waited for Ironic (no request)'
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

    def _assert_unprovisioned(self):
        """After destroy(): the node is available, with no instance."""
        node = self.client.wait_state(self.node, 'available', timeout=30)
        self.assertIsNone(node['instance_uuid'])
        self.assertEqual({}, node['instance_info'])
        self.assertIsNone(node['target_provision_state'])
        return node

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
        # what the API's delete does first (a copy: spawn() refreshes its own)
        deleting = objects.Instance.get_by_uuid(self.ctx, self.instance.uuid)
        deleting.task_state = task_states.DELETING
        deleting.save()
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


class _RealGetEndpoint(fixtures.Fixture):
    """Undo OpenStackSDKFixture's mock of Proxy.get_endpoint."""

    def _setUp(self):
        self.useFixture(fixtures.MonkeyPatch(
            'openstack.proxy.Proxy.get_endpoint', _REAL_GET_ENDPOINT))
