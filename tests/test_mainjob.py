"""The main job's expectations (no Nova needed: observations are dicts)."""

import ast
import unittest

from novaseries import mainjob

SERVER = '11111111-1111-4111-8111-111111111111'
NODE = '22222222-2222-4222-8222-222222222222'
OTHER = '33333333-3333-4333-8333-333333333333'


def _obs(**kw):
    obs = {'scenario': 'undeploy-reassociated', 'server_id': SERVER,
           'first_node': NODE, 'node': None, 'host': None,
           'nodes': [{'id': NODE, 'name': 'node-1',
                      'provision_state': 'available', 'instance_id': None,
                      'instance_info': False, 'vifs': [],
                      'history': [['available', None]]}],
           'status': 'ERROR', 'task_state': None, 'usages': {NODE: 0},
           'allocations': {}, 'build_results': ['failed'], 'log': [],
           'faults_created': [], 'error_saves': 0, 'hooks_fired': [],
           'definition': {'action': 'undeploy', 'then': []}}
    obs['lost_fault'] = obs['fault'] = (
        'The node of instance %s was torn down.' % SERVER)
    obs['lost_fault_fields'] = ['instance']
    obs.update(kw)
    return obs


class ScenarioListTest(unittest.TestCase):

    def test_every_scenario_has_an_expectation_and_back(self):
        tree = ast.parse(mainjob.INNER.read_text())
        names = [node.args[0].value for node in ast.walk(tree)
                 if isinstance(node, ast.Call) and
                 getattr(node.func, 'id', None) == 'Scenario']
        self.assertEqual(len(names), len(set(names)), names)
        self.assertEqual(sorted(names), sorted(mainjob.EXPECTED))

    def test_every_fixed_row_checks_for_other_instances(self):
        for name, exp in mainjob.EXPECTED.items():
            self.assertIn(mainjob.no_foreign_uuid, exp['fixed'], name)


class ChecksTest(unittest.TestCase):

    def test_generic_fault(self):
        lost = mainjob.lost_fault()
        self.assertIsNone(lost(_obs()))
        self.assertIn('expected', lost(
            _obs(fault=_obs()['lost_fault'] + ' (deleting)')))
        self.assertIn('no IronicNodeLost', lost(_obs(lost_fault=None)))
        # the message may only take our node and our instance
        self.assertIn("['other']", lost(
            _obs(lost_fault_fields=['instance', 'other'])))
        aborted = mainjob.lost_fault(aborted=True)
        self.assertIsNone(aborted(_obs(fault=(
            'Build of instance %s aborted: ' % SERVER +
            _obs()['lost_fault']))))
        self.assertIsNotNone(aborted(_obs()))

    def test_no_foreign_uuid(self):
        self.assertIsNone(mainjob.no_foreign_uuid(_obs()))
        leak = _obs(fault='Node %s is now associated with instance %s' % (
            NODE, OTHER))
        self.assertIn(OTHER, mainjob.no_foreign_uuid(leak))
        # a fault created on the way counts too
        self.assertIn(OTHER, mainjob.no_foreign_uuid(
            _obs(faults_created=['instance %s' % OTHER.upper()])))
        self.assertIsNotNone(mainjob.no_foreign_uuid(
            _obs(other_instance='host-x', fault='on host-x')))

    def test_log_checks_are_details(self):
        has = mainjob.log_has('Ironic node {first_node} was deleted')
        self.assertIn('lacks', has(_obs()))
        self.assertIsNone(has(_obs(log=[
            'WARNING [nova.virt.ironic.driver] Ironic node %s was deleted '
            'during the deploy.' % NODE])))
        self.assertTrue(has.detail)
        self.assertIsNotNone(mainjob.log_lacks('Node None')(
            _obs(log=['ERROR [x] Node None could not be found.'])))

    def test_bug_verdict_ignores_log_lines(self):
        # 34.0.0 behaves right in this timing but does not log the fix's
        # WARNING: "as on 34.0.0", not "bug reproduced".
        obs = _obs(scenario='user-delete-at-teardown-poll', status='DELETED',
                   fault=None, usages={NODE: 0}, hooks_fired=['a', 'b'],
                   definition={'action': 'undeploy', 'then': [[3, 'delete']]})
        self.assertTrue(mainjob.judge(obs['scenario'], 'fixed', obs))
        self.assertFalse(mainjob._is_bug(obs))

    def test_a_step_that_never_came(self):
        obs = _obs(hooks_fired=['undeploy@2'], definition={
            'action': 'undeploy', 'then': [[5, 'delete']]})
        self.assertIn('1 of 2', mainjob.all_steps_fired(obs))

    def test_clean_ignores_another_instances_node(self):
        node = dict(_obs()['nodes'][0], provision_state='wait call-back',
                    instance_id=OTHER, instance_info=True)
        self.assertIsNone(mainjob.clean(_obs(nodes=[node])))
        mine = dict(node, instance_id=SERVER)
        self.assertIn('keeps instance', mainjob.clean(_obs(nodes=[mine])))

    def test_only_reads_and_never_error(self):
        self.assertIn('update_node', mainjob.only_reads(
            _obs(writes_after_action=['update_node'])))
        self.assertIn('ERROR', mainjob.never_error(_obs(error_saves=1)))
        self.assertIsNone(mainjob.never_error(_obs()))


if __name__ == '__main__':
    unittest.main()
