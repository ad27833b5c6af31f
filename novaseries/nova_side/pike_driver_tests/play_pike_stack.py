# -*- coding: utf-8 -*-
"""The whole-stack player of pike: nova 16.1.8's API, conductor,
scheduler, placement and nova-compute with the real ironic driver
(python-ironicclient 1.17), in pike's own functional test framework
(``ProviderUsageBaseTestCase``, Python 2.7, eventlet), against the
pike-era Ironic (``novaseries.ironic.pike.PikeIronic``) that
``novaseries.mainjob.pike_job`` started on 127.0.0.1.

Run by ``python -m unittest play_pike_stack`` in pike's test venv, with a
pike tree (patched or not) and this folder on ``PYTHONPATH``; it imports
nothing of the harness.  Its input, in environment variables:

* ``REALIRONIC_URL``, ``REALIRONIC_IMAGE_URL``, ``REALIRONIC_IMAGE_MD5``:
  the Ironic's API, its HTTP image and that image's md5;
* ``PIKESTACK_SCENARIOS``: a JSON list of scenario definitions (the
  harness's ``Scenario.describe()``: ``name``, ``kind``, ``action``,
  ``nodes``, ``max_attempts``, ``delete_on_reschedule``);
* ``PIKESTACK_OUT``: a folder; each scenario writes ``<name>.json`` there,
  the main job's observation (keys: ``scenario_table.OBSERVATION``, the
  ones this player can fill), which the harness judges.

One test per scenario (``test_<name>``, dashes as underscores).  A
scenario that fails to play still writes its observation, with the
traceback in ``error``.

Pike's differences from the main job's player, as played here: Nova's
API takes a Glance image uuid and the fake Glance answers for it, so the
deploy's ``image_source`` is replaced by the Ironic's HTTP image (with its
md5) on its way to Ironic, and recorded as the Glance uuid; nodes report
inventory once they went through manage and provide (power state known);
the allocations are recorded once the scenario has settled, then the
resource tracker's periodic task is run by hand once and the allocations
recorded again (``allocations_after_periodic``: pike's periodic task
removes those of a deleted instance on its host's nodes).
"""

from __future__ import print_function

import json
import os
import re
import time
import traceback

from nova import context as nova_context
from nova import exception
from nova.tests import fixtures as nova_fixtures
from nova.tests.functional import test_servers
from nova.virt.ironic import client_wrapper

import pike_operator
import pike_stack_hooks as hooks

URL = os.environ.get('REALIRONIC_URL')
IMAGE_URL = os.environ.get('REALIRONIC_IMAGE_URL')
IMAGE_MD5 = os.environ.get('REALIRONIC_IMAGE_MD5')
SCENARIOS = json.loads(os.environ.get('PIKESTACK_SCENARIOS') or '[]')
OUT = os.environ.get('PIKESTACK_OUT')

#: How the observation names a real Ironic (``checks.REAL_IRONIC``).
REAL_IRONIC = 'real Ironic'
#: The microversion pike's driver sends, which the operator speaks too.
PIKE_MICROVERSION = '%d.%d' % client_wrapper.IRONIC_API_VERSION
#: The image the server boots (one of pike's fake Glance images).
IMAGE = '155d900f-4e14-4e4c-a73d-069cbf4541e6'
#: An image URL the Ironic's image server does not have: node.validate
#: fails, and so does the spawn on that node (action ``fail``).
MISSING_IMAGE = '/no-such-image'
#: ``[ironic] api_retry_interval`` (s): the deploy wait's poll interval
#: and the wait between retries of a refused request.
POLL_INTERVAL = 0.2
#: Provision states Ironic leaves a node in until someone acts.
STABLE = frozenset(['available', 'active', 'wait call-back',
                    'deploy failed', 'manageable', 'enroll'])
#: The compute host of the run.
HOST = 'pike-compute'


def fired(action, at):
    """A ``hooks_fired`` label (``checks.fired``)."""
    return '%s@%s' % (action, at)


class PikeStack(test_servers.ProviderUsageBaseTestCase):
    """One scenario through pike's whole stack against the real Ironic."""

    compute_driver = 'ironic.IronicDriver'

    def setUp(self):
        super(PikeStack, self).setUp()
        self.operator = pike_operator.Operator(URL, PIKE_MICROVERSION)
        self.flags(auth_type='none', api_endpoint=URL + '/v1',
                   api_retry_interval=POLL_INTERVAL, api_max_retries=300,
                   group='ironic')
        self.builds = self.useFixture(hooks.Builds())
        self.records = self.useFixture(hooks.Records())
        self.network = self.useFixture(hooks.PortNetwork())
        self.image = self.useFixture(hooks.HttpImage(IMAGE_URL, IMAGE_MD5))

    # -- set-up

    def _nodes(self, sc):
        """The scenario's nodes, available; a normal build's deploy goes
        straight to ``active`` (``fake`` deploy), any other waits in
        ``wait call-back`` (``direct``: no agent calls back)."""
        deploy = 'fake' if not sc.get('action') else 'direct'
        nodes = []
        for i in range(sc['nodes']):
            node = self.operator.create_available_node(
                deploy, name='%s-%d' % (sc['name'], i + 1),
                resource_class='baremetal')
            self.addCleanup(self._remove_node, node)
            nodes.append(node)
        return nodes

    def _remove_node(self, node):
        """Delete a node of the scenario, whatever it was left with (pike's
        driver lists every node: one left behind would be the next
        scenario's).  :raises AssertionError: Ironic refuses."""
        status, n = self.operator.request('GET', '/nodes/%s' % node)
        if status == 404:
            return
        self.operator.ok('PUT', '/nodes/%s/maintenance' % node,
                         {'reason': 'pike stack player: clean-up'})
        if n['instance_uuid']:  # Ironic deletes no associated node
            self.operator.ok('PATCH', '/nodes/%s' % node, [
                {'op': 'remove', 'path': '/instance_uuid'}])
        self.operator.ok('DELETE', '/nodes/%s' % node)

    def _flavor(self):
        flavor = self.api.post_flavor({'flavor': {
            'name': 'baremetal', 'ram': 1024, 'vcpus': 1, 'disk': 10}})
        self.api.post_extra_spec(flavor['id'], {'extra_specs': {
            'resources:CUSTOM_BAREMETAL': '1', 'resources:VCPU': '0',
            'resources:MEMORY_MB': '0', 'resources:DISK_GB': '0'}})
        return flavor['id']

    # -- waits

    def _wait(self, what, ready):
        return hooks.wait_until(what, ready)

    def _server(self, sid):
        try:
            return self.api.get_server(sid)
        except Exception as e:
            if getattr(e, 'response', None) is not None and \
                    e.response.status_code == 404:
                return None
            raise

    def _deploying(self, nodes, sid):
        """The node whose deploy of the server waits in ``wait call-back``,
        unlocked; None if none yet."""
        for node in nodes:
            n = self.operator.node(node)
            if n['instance_uuid'] == sid and not n['reservation'] and \
                    n['provision_state'] == 'wait call-back':
                return node

    def _settled(self, sid):
        """The build is over (``Builds.settled``), and the server is gone,
        ACTIVE or ERROR with no task, or still in BUILD after a build that
        was not handed back for a reschedule (what the bug leaves)."""
        if not self.builds.settled():
            return False
        server = self._server(sid)
        if server is None:
            return True
        if server['status'] in ('ACTIVE', 'ERROR'):
            return server['OS-EXT-STS:task_state'] is None
        return bool(self.builds.results) and \
            self.builds.results[-1] != 'rescheduled'

    def _ironic_quiet(self, nodes):
        for node in nodes:
            status, n = self.operator.request('GET', '/nodes/%s' % node)
            if status == 404:
                continue
            if n['reservation'] or n['target_provision_state'] or \
                    n['provision_state'] not in STABLE:
                return False
        return True

    # -- the scenario

    def play(self, sc):
        rec = {'scenario': sc['name'], 'definition': sc, 'error': None,
               'settled': False, 'backend': REAL_IRONIC, 'hooks_fired': [],
               # Ironic 9.1.7's flat network interface attaches them
               'vifs_attached': True}
        t0 = time.time()
        try:
            self._play(sc, rec)
        except Exception:
            rec['error'] = traceback.format_exc()
        rec['test_seconds'] = round(time.time() - t0, 3)
        with open(os.path.join(OUT, sc['name'] + '.json'), 'w') as out:
            json.dump(rec, out, indent=1, sort_keys=True)
        if rec['error']:
            print(rec['error'])
        if os.environ.get('PIKESTACK_DEBUG'):
            print(self.stdlog.logger.output)

    def _play(self, sc, rec):
        self.flags(max_attempts=sc['max_attempts'], group='scheduler')
        nodes = self.node_ids = self._nodes(sc)
        self.flags(host=HOST)
        self.compute = self.start_service('compute', host=HOST)
        flavor = self._flavor()
        action = sc.get('action')
        if action == 'fail':
            self.image.first = IMAGE_URL + MISSING_IMAGE
        port = nova_fixtures.NeutronFixture.port_1['id'] if sc.get('port') \
            else None
        rec['port_id'] = port
        server = self.api.post_server({'server': {
            'name': 'pike-stack-' + sc['name'], 'imageRef': IMAGE,
            'flavorRef': flavor,
            'networks': [{'port': port}] if port else 'none'}})
        sid = rec['server_id'] = server['id']
        action_at = time.time()
        first = None
        if action == 'fail':
            # the spawn on the first node fails; the user's delete lands
            # when the conductor takes the build back to reschedule it

            def delete():
                self.api.delete_server(sid)
                rec['hooks_fired'].append(fired('delete', 'reschedule'))
            if sc.get('delete_on_reschedule'):
                self.builds.on_reschedule = delete
            rec['hooks_fired'].append(fired(action, 0))
        elif action:
            first = self._wait('deploy in wait call-back',
                               lambda: self._deploying(nodes, sid))
            rec['first_node'] = first
            action_at = time.time()
            if action == 'undeploy':
                self.operator.set_state(first, 'deleted')
            elif action == 'maintenance-delete':
                self.operator.ok('PUT', '/nodes/%s/maintenance' % first,
                                 {'reason': 'pike stack player'})
                self.operator.ok('DELETE', '/nodes/%s' % first)
            elif action == 'user-delete':
                self.api.delete_server(sid)
            else:
                raise ValueError('action %r is not played on pike' % action)
            rec['hooks_fired'].append(fired(action, 'wait call-back'))
        self._wait('settled build', lambda: self._settled(sid))
        if sc['kind'] == 'build-delete':
            self._wait('ACTIVE server', lambda: (
                self._server(sid) or {}).get('status') == 'ACTIVE')
            rec['first_node'] = first = self._server(sid)[
                'OS-EXT-SRV-ATTR:hypervisor_hostname']
            action_at = time.time()
            self.api.delete_server(sid)
        if sc['kind'] == 'build-delete' or action in ('user-delete', 'fail'):
            self._wait('deleted server', lambda: self._server(sid) is None
                       and not self.builds.inflight)
        rec['settled'] = True
        first = first or (self.image.deploys or [None])[0]
        self._wait('Ironic done with the nodes',
                   lambda: self._ironic_quiet(nodes))
        end = time.time()
        self._record(rec, sid, nodes, first, action_at, end)
        # pike's resource tracker periodic task, by hand: it removes the
        # allocations of a deleted instance on this host's nodes
        self.compute.manager.update_available_resource(
            nova_context.get_admin_context())
        rec['allocations_after_periodic'] = self._allocations(sid)

    # -- the record

    def _node_view(self, node):
        status, n = self.operator.request('GET', '/nodes/%s' % node)
        if status == 404:
            return {'id': node, 'deleted': True}
        vifs = self.operator.ok('GET', '/nodes/%s/vifs' % node)['vifs']
        source = (n['instance_info'] or {}).get('image_source')
        return {
            'id': node, 'name': n['name'], 'history': [],
            'provision_state': n['provision_state'],
            'target_provision_state': n['target_provision_state'],
            'instance_id': n['instance_uuid'],
            'instance_info': bool(n['instance_info']),
            'image_source': IMAGE if source and source.startswith(
                IMAGE_URL) else source,
            'vifs': [v['id'] for v in vifs],
            'maintenance': n['maintenance'],
        }

    def _providers(self):
        """{resource provider uuid: name}: an ironic node's provider is
        named after the node (its compute node's hypervisor_hostname)."""
        return dict((rp['uuid'], rp['name']) for rp in self.placement_api.get(
            '/resource_providers').body['resource_providers'])

    def _allocations(self, sid):
        """The server's allocations by provider name (its node)."""
        names = self._providers()
        return dict((names.get(rp, rp), a['resources']) for rp, a in
                    self._get_allocations_by_server_uuid(sid).items())

    def _record(self, rec, sid, nodes, first, action_at, end):
        final = self._server(sid)
        lost = getattr(exception, 'IronicNodeLost', None)
        if lost is not None and first:
            rec['lost_fault'] = lost.msg_fmt % {'node': first,
                                                'instance': sid}
            rec['lost_fault_fields'] = sorted(
                set(re.findall(r'%\((\w+)\)', lost.msg_fmt)))
        rec['wall_seconds_after_action'] = round(end - action_at, 3)
        rec['image'] = IMAGE
        if final is None:
            rec.update(status='DELETED', vm_state=None, task_state=None,
                       host=None, node=None, fault=None)
        else:
            rec.update(
                status=final['status'],
                vm_state=final['OS-EXT-STS:vm_state'],
                task_state=final['OS-EXT-STS:task_state'],
                host=final['OS-EXT-SRV-ATTR:host'],
                node=final['OS-EXT-SRV-ATTR:hypervisor_hostname'],
                fault=(final.get('fault') or {}).get('message'))
        rec['first_node'] = first
        rec['nodes'] = [self._node_view(n) for n in nodes]
        rec['first_node_history'] = []
        rec['allocations'] = self._allocations(sid)
        rec['usages'] = dict(
            (name, (self._get_provider_usages(rp) or {}).get(
                'CUSTOM_BAREMETAL', 0))
            for rp, name in self._providers().items())
        rec['build_results'] = list(self.builds.results)
        rec['faults_created'] = [m for u, m in self.records.faults
                                 if u == sid]
        rec['error_saves'] = self.records.error_saves.count(sid)
        if rec['port_id']:
            rec['port_device_id'] = self.network.port_device.get(
                rec['port_id'])
        rec['deployed_nodes'] = list(self.image.deploys)
        rec['log'] = hooks.log_lines(self.stdlog.logger.output)


def _make_test(sc):
    def test(self):
        self.play(sc)
    test.__name__ = str('test_%s' % sc['name'].replace('-', '_'))
    return test


for _sc in SCENARIOS:
    _test = _make_test(_sc)
    setattr(PikeStack, _test.__name__, _test)
