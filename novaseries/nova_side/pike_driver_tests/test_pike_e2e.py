# -*- coding: utf-8 -*-
"""End to end on stable/pike: pike's IronicDriver against pike's Ironic.

Runs in pike's test venv (Python 2.7, python-ironicclient 1.17), with a
pike tree (patched or unpatched) on PYTHONPATH, against the pike-era Ironic
that ``novaseries.ironic.driver_runs.run_pike`` started on 127.0.0.1 (API and
conductor over RabbitMQ, ``fake-hardware`` with ``direct`` deploy, ``flat``
network against a fake Neutron; its URLs come in ``REALIRONIC_*``
variables; see doc/real-ironic.rst).  Nova's ``[ironic]`` options point at
it with ``auth_type = none`` and ``api_endpoint``; the driver speaks API
microversion 1.32, as pike's client wrapper asks.  The driver's requests
are recorded at the keystoneauth session (method, path, status), so that
each test can say what the driver sent and how Ironic answered.

The server has one VIF, which spawn() attaches to the node
(``node.vif_attach``; the flat network interface keeps it in the port's
``internal_info``, so ``GET /nodes/<node>/vifs`` shows it).  While spawn()
waits for the deploy (the conductor holds the node in ``wait call-back``:
no agent ever calls back), an operator undeploys the node, or puts it in
maintenance and deletes it; or the user deletes the server (task_state
DELETING in the database).  Then destroy() runs, as the compute manager's
clean-up of a failed build does on both trees.

* Patched tree: spawn() raises IronicNodeLost (an InstanceDeployFailure:
  the manager reschedules or errors the build) with its generic message;
  a user delete raises UnexpectedDeletingTaskStateError.
* Unpatched tree (REALIRONIC_EXPECT=bug): spawn() raises InstanceNotFound,
  which pike's manager takes for a user delete (the bug); a user delete
  raises InstanceDeployFailure "provisioning was aborted".

What the node must look like at the end, and what the driver may send, is
written in each test.  Each test prints ``e2e-pike:`` lines (what spawn()
raised, what destroy() sent, the node's VIFs) for whoever reads the run's
log; nothing parses them.

No sleeps of their own: the waits poll the real Ironic, bounded.
"""

from __future__ import print_function

import os
import re
import threading
import time
import unittest
import uuid

REQUIRED = os.environ.get('REALIRONIC_REQUIRED') == '1'

try:
    import fixtures
    from keystoneauth1 import session as ks_session

    from nova.compute import task_states
    from nova.compute import vm_states
    from nova import context as nova_context
    from nova import exception
    from nova.network import model as network_model
    from nova import objects
    from nova import test
    from nova.virt import fake as fake_virt
    from nova.virt.ironic import client_wrapper
    from nova.virt.ironic import driver as ironic_driver

    from e2e_report import green_stacks, summary
    import pike_operator
except ImportError as e:  # pragma: no cover
    if REQUIRED:
        raise
    raise unittest.SkipTest('pike Nova is needed (%s)' % e)

URL = os.environ.get('REALIRONIC_URL')
IMAGE_URL = os.environ.get('REALIRONIC_IMAGE_URL')
#: The image's md5: what the pike-era Ironic checks for an http image_source.
IMAGE_MD5 = os.environ.get('REALIRONIC_IMAGE_MD5')
IRONIC_VERSION = os.environ.get('REALIRONIC_IRONIC_VERSION', '?')
if not (URL and IMAGE_URL and IMAGE_MD5):
    if REQUIRED:
        raise RuntimeError('REALIRONIC_URL, REALIRONIC_IMAGE_URL and '
                           'REALIRONIC_IMAGE_MD5 must be set')
    raise unittest.SkipTest('no real Ironic (REALIRONIC_URL unset)')

_EXPECT = os.environ.get('REALIRONIC_EXPECT', 'auto')
#: True: the tests expect the fix (patch 0001 of patches/pike).
EXPECT_FIXED = (hasattr(exception, 'IronicNodeLost') if _EXPECT == 'auto'
                else _EXPECT == 'fixed')

#: The microversion pike's driver sends (nova.virt.ironic.client_wrapper).
PIKE_MICROVERSION = '%d.%d' % client_wrapper.IRONIC_API_VERSION

#: Seconds to wait for the driver or Ironic before a test fails.
TIMEOUT = pike_operator.TIMEOUT


class Operator(pike_operator.Operator):
    """The operator's side, at the microversion pike's driver sends."""

    def __init__(self, url, microversion=None):
        super(Operator, self).__init__(url, microversion or PIKE_MICROVERSION)


class _RecordRequests(fixtures.Fixture):
    """Record every request of the driver's ironicclient session as
    ``(method, path, status)`` (status None when no response came)."""

    def __init__(self, record):
        super(_RecordRequests, self).__init__()
        self.record = record

    def _setUp(self):
        real = ks_session.Session.request
        record = self.record

        def request(session, url, method, **kwargs):
            path, _, query = url.split('/v1', 1)[-1].partition('?')
            if 'instance_uuid=' in query:
                path += '?instance_uuid'  # node.get_by_instance_uuid
            try:
                resp = real(session, url, method, **kwargs)
            except Exception as e:
                record.append((method, path,
                               getattr(e, 'http_status', None)))
                raise
            record.append((method, path, resp.status_code))
            return resp

        self.useFixture(fixtures.MonkeyPatch(
            'keystoneauth1.session.Session.request', request))


class TestPikeDriverAgainstRealIronic(test.TestCase):
    """pike's IronicDriver.spawn()/rebuild()/destroy() while an operator
    tears the node down."""

    def setUp(self):
        super(TestPikeDriverAgainstRealIronic, self).setUp()
        self.operator = Operator(URL)
        self.sent = []
        self.useFixture(_RecordRequests(self.sent))
        # api_retry_interval: the real conductor takes seconds; 60 polls
        # or 409 retries of 1 s each are plenty for it.
        self.flags(auth_type='none', api_endpoint=URL + '/v1',
                   api_retry_interval=1, api_max_retries=60, group='ironic')
        self.ctx = nova_context.get_admin_context()
        self.driver = ironic_driver.IronicDriver(fake_virt.FakeVirtAPI())
        self.vif_id = str(uuid.uuid4())
        self.network_info = network_model.NetworkInfo([
            network_model.VIF(id=self.vif_id, address='fa:16:3e:00:00:01',
                              network=network_model.Network(
                                  id=str(uuid.uuid4()), bridge=None,
                                  label='e2e', subnets=[]))])

    # -- set-up

    def _prepare(self, deploy_interface='direct'):
        """An available node and an instance on it; the image meta."""
        self.node = self.operator.create_available_node(deploy_interface)
        # Nova sends a Glance image uuid; this image is the real Ironic's
        # local http image, whose checksum Ironic requires (Glance would
        # have given it).
        self.operator.ok('PATCH', '/nodes/%s' % self.node, [
            {'op': 'add', 'path': '/instance_info/image_checksum',
             'value': IMAGE_MD5}])
        flavor = objects.Flavor(
            id=1, flavorid='bm', name='baremetal', memory_mb=1024, vcpus=1,
            root_gb=10, ephemeral_gb=0, swap=0, extra_specs={},
            rxtx_factor=1.0, vcpu_weight=None, disabled=False,
            is_public=True)
        self.instance = objects.Instance(
            context=self.ctx, uuid=str(uuid.uuid4()),
            project_id='project', user_id='user',
            image_ref='155d900f-4e14-4e4c-a73d-069cbf4541e6',
            display_name='realironic-pike-e2e', host='compute',
            node=self.node, vm_state=vm_states.BUILDING,
            task_state=task_states.SPAWNING, power_state=0, flavor=flavor,
            instance_type_id=flavor.id, memory_mb=1024, vcpus=1, root_gb=10,
            ephemeral_gb=0, config_drive='', system_metadata={},
            metadata={})
        self.instance.create()
        self.image_meta = objects.ImageMeta.from_dict(
            {'id': IMAGE_URL, 'disk_format': 'raw',
             'container_format': 'bare', 'properties': {}})

    def _in_background(self, func, *args):
        """Run ``func(*args)``; :returns: (thread, result dict)."""
        result = {}

        def run():
            try:
                func(*args)
                result['returned'] = True
            except Exception as e:  # checked by the test
                result['error'] = e

        thread = threading.Thread(target=run)
        thread.daemon = True
        thread.start()
        return thread, result

    def _spawn_in_background(self):
        self._prepare()
        return self._in_background(
            self.driver.spawn, self.ctx, self.instance, self.image_meta, [],
            None, self.network_info)

    def _wait(self, thread, result, what, after):
        t0 = time.time()
        thread.join(TIMEOUT)
        if thread.is_alive():
            self.fail('%s still waiting %d s after %s (node %s); where the '
                      'green threads are:\n%s' % (
                          what, TIMEOUT, after, self.operator.node(self.node),
                          green_stacks()))
        error = result.get('error')
        print('e2e-pike: %s raised %s %.1f s after %s: %s' % (
            what, type(error).__name__ if error is not None else 'nothing',
            time.time() - t0, after, error))
        return error

    # -- checks

    def _assert_node_lost(self, error, logged):
        """The deploy failed the way the tree under test fails.

        :param logged: regular expression (``{node}``: the node's uuid) that
            the driver's WARNING must match on the patched tree.
        """
        if not EXPECT_FIXED:
            # the bug: pike's manager takes this for a user delete
            self.assertIsInstance(error, exception.InstanceNotFound)
            return
        self.assertIsInstance(error, exception.IronicNodeLost)
        self.assertIsInstance(error, exception.InstanceDeployFailure)
        self.assertNotIsInstance(error, exception.InstanceNotFound)
        # The message becomes the instance fault: nothing of the node or
        # of what Ironic said.
        self.assertEqual(exception.IronicNodeLost.msg_fmt, str(error))
        self.assertNotIn(self.node, str(error))
        pattern = logged.format(node=re.escape(self.node))
        self.assertTrue(re.search(pattern, self.stdlog.logger.output),
                        'no driver log line matches %r' % pattern)

    def _vifs(self):
        return [v['id'] for v in self.operator.ok(
            'GET', '/nodes/%s/vifs' % self.node)['vifs']]

    def _destroy(self):
        """destroy() as the manager's clean-up calls it; report and check
        what it sent.  :returns: the requests destroy() sent."""
        start = len(self.sent)
        t0 = time.time()
        self.driver.destroy(self.ctx, self.instance, self.network_info)
        sent = self.sent[start:]
        print('e2e-pike: destroy() returned after %.1f s; sent %s' % (
            time.time() - t0, summary(sent)))
        self._assert_no_refusal_left(sent)
        return sent

    def _assert_no_refusal_left(self, sent):
        """Every change Ironic refused with 409 was retried until Ironic
        answered otherwise."""
        for i, (method, path, status) in enumerate(sent):
            if status != 409 or method == 'GET':
                continue
            later = [s for m, p, s in sent[i + 1:]
                     if (m, p) == (method, path) and s != 409]
            self.assertTrue(later and later[0] < 500,
                            '%s %s refused with 409 and not retried to an '
                            'answer: %s' % (method, path, sent))

    def _assert_clean(self, vifs_left=()):
        """The node ends available, with nothing of the instance.

        :param vifs_left: the VIFs the tree under test leaves attached.
        """
        node = self.operator.wait_state(self.node, 'available')
        vifs = self._vifs()
        print('e2e-pike: node %s at the end: %s, instance_uuid %s, VIFs %s'
              % (self.node, node['provision_state'], node['instance_uuid'],
                 vifs))
        self.assertIsNone(node['instance_uuid'])
        self.assertEqual({}, node['instance_info'])
        self.assertIsNone(node['target_provision_state'])
        self.assertEqual(list(vifs_left), vifs)
        return node

    def _wait_callback(self):
        """The deploy waits for the agent; the server's VIF is attached."""
        node = self.operator.wait_state(self.node, 'wait call-back')
        self.assertEqual(self.instance.uuid, node['instance_uuid'])
        self.assertEqual([self.vif_id], self._vifs())
        return node

    # -- tests

    def test_undeploy_in_wait_callback(self):
        thread, result = self._spawn_in_background()
        self._wait_callback()
        self.operator.set_state(self.node, 'deleted')
        error = self._wait(thread, result, 'spawn()', 'the undeploy')
        self._assert_node_lost(
            error, r'Ironic node {node} (is being torn down outside of Nova|'
            r'is no longer associated with the instance)')
        self._destroy()
        # Ironic 9.x does not detach VIFs when it tears a node down; the
        # unpatched destroy() finds no node for the instance and leaves the
        # VIF on the node's port, where it blocks the next deploy's attach.
        self._assert_clean(vifs_left=[] if EXPECT_FIXED else [self.vif_id])

    def test_maintenance_and_delete_in_wait_callback(self):
        thread, result = self._spawn_in_background()
        self._wait_callback()
        status, _body = self.operator.request('DELETE',
                                              '/nodes/%s' % self.node)
        self.assertEqual(409, status)  # associated with the instance
        self.operator.ok('PUT', '/nodes/%s/maintenance' % self.node,
                         {'reason': 'e2e'})
        self.operator.ok('DELETE', '/nodes/%s' % self.node)
        error = self._wait(thread, result, 'spawn()', 'the delete')
        self._assert_node_lost(
            error, r'Ironic node {node} was deleted during the deployment\.')
        sent = self._destroy()
        # the node is gone: destroy() only looked for it
        self.assertEqual(['GET'], sorted(set(m for m, _p, _s in sent)))
        self.assertEqual(404, self.operator.request(
            'GET', '/nodes/%s' % self.node)[0])

    def test_user_delete_in_wait_callback(self):
        thread, result = self._spawn_in_background()
        self._wait_callback()
        # what the API's delete does first (a copy: spawn() refreshes its
        # own)
        deleting = objects.Instance.get_by_uuid(self.ctx, self.instance.uuid)
        deleting.task_state = task_states.DELETING
        deleting.save()
        error = self._wait(thread, result, 'spawn()', 'task_state DELETING')
        if EXPECT_FIXED:
            self.assertIsInstance(
                error, exception.UnexpectedDeletingTaskStateError)
        else:
            self.assertIsInstance(error, exception.InstanceDeployFailure)
            self.assertIn('provisioning was aborted', str(error))
        # the failed spawn() did not touch the node
        self.assertEqual('wait call-back',
                         self.operator.node(self.node)['provision_state'])
        self._destroy()
        self._assert_clean()

    def test_node_claimed_by_another_instance_before_destroy(self):
        """Undeploy in wait call-back; once Ironic is done, another
        instance is deployed onto the node before destroy() runs.
        destroy() must not change anything of that deploy."""
        thread, result = self._spawn_in_background()
        self._wait_callback()
        self.operator.set_state(self.node, 'deleted')
        self._wait(thread, result, 'spawn()', 'the undeploy')
        self.operator.wait_state(self.node, 'available')
        other = str(uuid.uuid4())
        self.operator.ok('PATCH', '/nodes/%s' % self.node, [
            {'op': 'add', 'path': '/instance_uuid', 'value': other},
            {'op': 'add', 'path': '/instance_info/image_source',
             'value': IMAGE_URL}])
        sent = self._destroy()
        self.assertEqual(['GET'], sorted(set(m for m, _p, _s in sent)))
        node = self.operator.node(self.node)
        self.assertEqual(other, node['instance_uuid'])
        self.assertEqual(IMAGE_URL, node['instance_info']['image_source'])
        vifs = self._vifs()
        print('e2e-pike: node %s claimed by another instance: VIFs %s' % (
            self.node, vifs))
        # The pike-era Ironic left the VIF on the node; neither tree touches a node
        # another instance has, the patched one says what is left.
        self.assertEqual([self.vif_id], vifs)
        if EXPECT_FIXED:
            self.assertIn("The instance's VIFs %s, if still attached to Ironic "
                          "node %s, are left there: the node is now "
                          "associated with instance %s." % (
                              self.vif_id, self.node, other),
                          self.stdlog.logger.output)

    def test_rebuild_undeploy_in_wait_callback(self):
        """A rebuild of an ACTIVE server: the node is undeployed while the
        rebuild waits in ``wait call-back``.  Patched: IronicNodeLost (the
        manager sets ERROR with a fault); unpatched: InstanceNotFound
        ("Instance was deleted while rebuilding", left in REBUILD)."""
        # Deploy with the fake deploy interface (straight to active) ...
        self._prepare(deploy_interface='fake')
        self.driver.spawn(self.ctx, self.instance, self.image_meta, [], None,
                          self.network_info)
        self.assertEqual('active',
                         self.operator.node(self.node)['provision_state'])
        # ... then switch to direct (only allowed in maintenance), so that
        # the rebuild waits for an agent.
        self.operator.ok('PUT', '/nodes/%s/maintenance' % self.node,
                         {'reason': 'e2e'})
        self.operator.ok('PATCH', '/nodes/%s' % self.node, [
            {'op': 'replace', 'path': '/deploy_interface',
             'value': 'direct'}])
        self.operator.ok('DELETE', '/nodes/%s/maintenance' % self.node)
        self.instance.vm_state = vm_states.ACTIVE
        self.instance.task_state = task_states.REBUILDING
        self.instance.save()
        thread, result = self._in_background(
            self.driver.rebuild, self.ctx, self.instance, self.image_meta,
            [], None, None, None, None, self.network_info)
        self._wait_callback()
        self.operator.set_state(self.node, 'deleted')
        error = self._wait(thread, result, 'rebuild()', 'the undeploy')
        self._assert_node_lost(
            error, r'Ironic node {node} (is being torn down outside of Nova|'
            r'is no longer associated with the instance)')
        # the failed rebuild's clean-up is the delete of the ERROR server
        self._destroy()
        self._assert_clean(vifs_left=[] if EXPECT_FIXED else [self.vif_id])
