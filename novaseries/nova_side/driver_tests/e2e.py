"""What the end-to-end tests of Nova's IronicDriver against a real Ironic
share (``test_e2e.py``, ``test_e2e_nodeleak.py``): Nova's imports (after
its monkey patching), what the tree is expected to show, and
:class:`DriverAgainstRealIronic`, their base class.  Not a test module.

Whether the tests expect the series' fix (``EXPECT_FIXED``) is detected
from the tree (does ``nova.exception`` have ``IronicNodeLost``?) unless
``REALIRONIC_EXPECT`` says ``fixed`` or ``bug``.  Whether they expect the
node-leak change is detected from the tree, for each bug
(``EXPECT_NODELEAK_FIXED``, ``EXPECT_REAP_FIXED``: does the driver have
``_unprovision_when_unlocked``, resp. ``_deleted_instances_on_ring_nodes``?)
unless
``REALIRONIC_EXPECT_NODELEAK`` says ``fixed`` or ``bug`` for both: the
changes are not part of the series that ``REALIRONIC_EXPECT``
(``--expect``) is about (CI runs these tests on master-all, which has
them, with ``--expect fixed``).

Each test prints one line ``e2e: spawn() raised <class> ...`` (the lock
tests print ``e2e: destroy() ...`` lines too: what the real Ironic
answered, and when), for whoever reads the test run's output; nothing
parses them.

The deploy image is the local HTTP image of ``novaseries.ironic.service``:
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
    import nova.conf
    from nova import context as nova_context
    from nova import exception
    from nova.network import model as network_model
    from nova import objects
    from nova import test
    from nova.virt import fake as fake_virt
    from nova.virt.ironic import driver as ironic_driver
except ImportError as e:  # pragma: no cover
    _guard.skip_or_raise('Nova is needed', e)

import json  # noqa: E402
import os  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
import uuid  # noqa: E402
import warnings  # noqa: E402

from novaseries.ironic import rest, run_env  # noqa: E402

import contract_backends  # noqa: E402


#: The unpatched Proxy.get_endpoint: nova.test mocks it (OpenStackSDKFixture)
#: because unit tests never talk to a real service; these do.
_REAL_GET_ENDPOINT = openstack.proxy.Proxy.get_endpoint

#: True: the tests expect the fixed behaviour (patch "fix" of the series).
#: Detected from the tree unless REALIRONIC_EXPECT says "fixed" or "bug"
#: (then a tree that does not match fails instead of switching
#: expectations).
_EXPECT = os.environ.get(run_env.EXPECT, run_env.EXPECT_AUTO)
EXPECT_FIXED = (hasattr(exception, 'IronicNodeLost')
                if _EXPECT == run_env.EXPECT_AUTO else _EXPECT == run_env.EXPECT_FIXED)

#: True: the tests expect the change for bug 2169776 (patches/nodeleak:
#: destroy() retries the tear-down of a locked node).  Detected from the tree unless
#: REALIRONIC_EXPECT_NODELEAK says "fixed" or "bug"; not REALIRONIC_EXPECT:
#: the change is not part of the series that --expect is about.
_EXPECT_NODELEAK = os.environ.get(run_env.EXPECT_NODELEAK, run_env.EXPECT_AUTO)
EXPECT_NODELEAK_FIXED = (
    hasattr(ironic_driver.IronicDriver, '_unprovision_when_unlocked')
    if _EXPECT_NODELEAK == run_env.EXPECT_AUTO
    else _EXPECT_NODELEAK == run_env.EXPECT_FIXED)

#: True: the tests expect the change for bug 2169200 (patches/nodeleak:
#: the driver also lists the deleted instances of the nodes its hash ring owns,
#: so that the compute manager's periodic task reaps them).  The same
#: switch: "fixed" or "bug" applies to both node-leak bugs (a tree with
#: all of patches/nodeleak, or with none of it); "auto" detects each fix on
#: its own (does the driver have ``_deleted_instances_on_ring_nodes``?), so
#: that a tree with 2169776's fix and not 2169200's (``--upto 0003``) is
#: judged right.
EXPECT_REAP_FIXED = (
    hasattr(ironic_driver.IronicDriver, '_deleted_instances_on_ring_nodes')
    if _EXPECT_NODELEAK == run_env.EXPECT_AUTO
    else _EXPECT_NODELEAK == run_env.EXPECT_FIXED)

CONF = nova.conf.CONF


class DriverAgainstRealIronic(test.TestCase):
    """A real IronicDriver, an instance and a node of the real Ironic."""

    #: seconds to wait for spawn() to return after the operator action
    SPAWN_TIMEOUT = 60

    def setUp(self):
        super().setUp()
        self.useFixture(_RealGetEndpoint())
        self.ironic = contract_backends.ironic()
        self.client = rest.Client(self.ironic.url)
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
            ``contract_backends.FAKE_DEPLOY_DELAY`` twice, then goes ``active``.
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
        <message>`` (for the reader of the test run's output)."""
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


class _RealGetEndpoint(fixtures.Fixture):
    """Undo OpenStackSDKFixture's mock of Proxy.get_endpoint."""

    def _setUp(self):
        self.useFixture(fixtures.MonkeyPatch(
            'openstack.proxy.Proxy.get_endpoint', _REAL_GET_ENDPOINT))
