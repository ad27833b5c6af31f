"""What one scenario observed against the fake Ironic: :class:`Recorder`,
a mixin of ``scenario_case.ScenarioTest`` (``play_real`` extends it) that
fills the observation (keys: ``scenario_table.OBSERVATION``) from the
server, the nodes, placement, the Ironic calls and Nova's log.  Runs
inside Nova's virtualenv.
"""

import collections
import re

# The test package applies Nova's monkey patching; it must come first.
import nova.tests.functional  # noqa: F401  isort:skip
from nova import context as nova_context  # noqa: E402
from nova import exception as nova_exception  # noqa: E402
from nova import objects  # noqa: E402
from nova.tests.fixtures import ironic as ironic_fixture  # noqa: E402

from novaseries.scenarios.scenario import OTHER_INSTANCE_ACTIONS  # noqa: E402
from novaseries.scenarios.scenario_table import OTHER_INSTANCE  # noqa: E402
from novaseries.nova_side.player.watch import log_lines, poll_stats  # noqa: E402


class Recorder:
    """Fills the observation once the scenario has settled."""

    def _usages(self):
        """{rp name: CUSTOM_BAREMETAL used} for every resource provider."""
        used = {}
        for rp in self._get_all_providers():
            usage = self._get_provider_usages(rp['uuid']) or {}
            used[rp['name']] = usage.get('CUSTOM_BAREMETAL', 0)
        return used

    def _node_view(self, node_id):
        node = self.ironic.get(node_id)
        if node is None:
            return {'id': node_id, 'deleted': True}
        return {
            'history': [list(h) for h in self.ironic.history(node_id)],
            'id': node_id,
            'name': node.name,
            'provision_state': node.provision_state,
            'target_provision_state': node.target_provision_state,
            'instance_id': node.instance_id,
            'instance_info': bool(node.instance_info),
            'image_source': (node.instance_info or {}).get('image_source'),
            'vifs': self.ironic.vifs(node_id),
            'maintenance': node.is_maintenance,
        }

    def _status(self, server_id):
        server = self._server_or_none(server_id)
        return 'DELETED' if server is None else server['status']

    def _record(self, sc, rec, server, final, settled, first_node,
                action_at, end, port_id):
        sid = server['id']
        rec['server_id'] = sid
        rec['settled'] = settled
        # The fault a lost node must give, from this tree's IronicNodeLost
        # (the fix's exception; absent on the reproducer tree).
        lost = getattr(nova_exception, 'IronicNodeLost', None)
        if lost is not None:
            rec['lost_fault'] = lost.msg_fmt % {'node': first_node,
                                                'instance': sid}
            rec['lost_fault_fields'] = sorted(
                set(re.findall(r'%\((\w+)\)', lost.msg_fmt)))
        rec['wall_seconds_after_action'] = round(end - action_at, 3)
        rec['image'] = ((server.get('image') or {}).get('id') or
                        ((final or {}).get('image') or {}).get('id'))
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
        rec['first_node'] = first_node
        rec['nodes'] = [self._node_view(n) for n in self.node_ids]
        rec['first_node_history'] = [
            list(h) for h in self.ironic.history(first_node)]
        rec['allocations'] = {
            rp: a['resources'] for rp, a in
            self._get_allocations_by_server_uuid(sid).items()}
        rec['usages'] = self._usages()
        rec['build_results'] = list(self.watch.results)
        rec['port_id'] = port_id
        if port_id:
            port = self.neutron.show_port(port_id)['port']
            rec['port_device_id'] = port.get('device_id') or None
        # Ironic calls: every driver call after the action, and the polls
        # of the instance among them.
        log = list(self.ironic.call_log)
        rec['ironic_calls'] = dict(collections.Counter(c.method for c in log))
        rec['ironic_calls_total'] = len(log)
        rec.update(poll_stats(log, first_node))
        # Driver polls (on any node) from the operator's action to the end:
        # times [ironic] api_retry_interval, the time a user waits.
        after = log[self._acted.get('calls', len(log)):]
        rec['polls_after_action'] = sum(
            1 for c in after if c.method == 'nodes' and c.node is not None)
        # ... of which polls of a held deploy, whose number is timing
        start = self._acted.get('calls', len(log))
        rec['held_polls_after_action'] = sum(
            1 for at in getattr(self, 'held_polls', ()) if at >= start)
        # What Nova sent to the first node after the action, reads aside.
        rec['writes_after_action'] = [
            c.method for c in after if c.node == first_node and
            c.method not in ironic_fixture.READ_METHODS]
        rec['hooks_fired'] = list(self._acted.get('fired', []))
        if {sc.action, *(step[1] for step in sc.then)} & \
                OTHER_INSTANCE_ACTIONS:
            rec['other_instance'] = OTHER_INSTANCE
        rec['error_saves'] = self.error_saves.count(sid)
        rec['faults_created'] = [m for u, m in self.faults_created
                                 if u == sid]
        rec['log'] = log_lines(self.stdlog.logger.output)
        rec['driver_warnings'] = [
            line.split('] ', 1)[1] for line in rec['log']
            if line.startswith('WARNING [nova.virt.ironic.driver]')]
        ctx = nova_context.get_admin_context()
        actions = objects.InstanceActionList.get_by_instance_uuid(ctx, sid)
        rec['instance_actions'] = [a.action for a in actions]
