"""The scenario table and the code that gives the verdict: checks, judge,
evaluate, the verdict table, the ci step's unittest parsing and the
``--bench`` spec (no Nova needed: observations are dicts)."""

import argparse
import ast
import re
import unittest

from novaseries import cisteps, mainjob
from novaseries.scenarios import scenario_table as table
from novaseries.util import HarnessError
from tests import helpers

SERVER = '11111111-1111-4111-8111-111111111111'
NODE = '22222222-2222-4222-8222-222222222222'
OTHER = '33333333-3333-4333-8333-333333333333'
RUNNER = helpers.REPO / 'novaseries' / 'scenarios' / 'nova_scenarios.py'
TABLE = helpers.REPO / 'novaseries' / 'scenarios' / 'scenario_table.py'


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


class TableTest(unittest.TestCase):
    """One definition per scenario, used by the runner and the harness."""

    def test_names_unique_and_every_scenario_has_both_columns(self):
        names = [s.name for s in table.SCENARIOS]
        self.assertEqual(len(names), len(set(names)), names)
        self.assertEqual(names, list(table.BY_NAME))
        for sc in table.SCENARIOS:
            self.assertTrue(sc.reproducer, sc.name)
            self.assertTrue(sc.fixed, sc.name)
            self.assertEqual(table.no_foreign_uuid, sc.fixed[-1], sc.name)
            for tree in table.TREES:
                texts = sc.expectations(tree)
                self.assertTrue(all(texts), (sc.name, tree, texts))

    def test_runner_takes_its_scenarios_from_the_table(self):
        tree = ast.parse(RUNNER.read_text())
        calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and
                 getattr(n.func, 'id', None) == 'Scenario']
        self.assertEqual([], calls, 'the runner defines scenarios itself')
        imports = [n for n in tree.body if isinstance(n, ast.ImportFrom) and
                   n.module == 'scenario_table']
        self.assertEqual(1, len(imports))
        self.assertEqual({'BY_NAME', 'OTHER_INSTANCE', 'SCENARIOS'},
                         {a.name for a in imports[0].names})
        # ... and the table needs nothing but the standard library
        for node in ast.walk(ast.parse(TABLE.read_text())):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) \
                    else [node.module]
                for name in names:
                    self.assertIn(name.split('.')[0], {'re'}, name)

    def test_real_ironic_tests_exist(self):
        source = (helpers.REPO / 'tests' / 'realironic' / 'test_e2e.py').read_text()
        tests = set(re.findall(r'^    def (test_\w+)\(', source, re.M))
        named = {s.real_ironic for s in table.SCENARIOS if s.real_ironic}
        self.assertTrue(named)
        self.assertLessEqual(named, tests)

    def test_doc_describes_every_scenario(self):
        doc = (helpers.REPO / 'doc' / 'main-job.rst').read_text()
        missing = [s.name for s in table.SCENARIOS if f'``{s.name}``' not in doc]
        self.assertEqual([], missing)

    def test_observation_keys_are_documented(self):
        """Every key the runner writes and every key a check reads is in
        table.OBSERVATION."""
        runner = RUNNER.read_text().split('# -- benchmark', 1)[0]
        written = set(re.findall(r"\brec\['(\w+)'\]", runner))
        for call in re.findall(r'rec\.update\((.*?)\)', runner, re.S):
            written |= set(re.findall(r'(\w+)=', call))
        written |= set(re.findall(r"'(\w+)': ", runner.split('def _poll_stats', 1)[1]
                                  .split('def _make_case', 1)[0]))
        self.assertIn('server_id', written)
        read = set(re.findall(r"obs(?:\.get\(|\[)'(\w+)'", TABLE.read_text()))
        self.assertIn('faults_created', read)
        self.assertEqual(set(), (written | read) - set(table.OBSERVATION))


class ChecksTest(unittest.TestCase):

    def test_generic_fault(self):
        lost = table.lost_fault()
        self.assertIsNone(lost(_obs()))
        self.assertIn('expected', lost(
            _obs(fault=_obs()['lost_fault'] + ' (deleting)')))
        self.assertIn('no IronicNodeLost', lost(_obs(lost_fault=None)))
        # the message may only take our node and our instance
        self.assertIn("['other']", lost(
            _obs(lost_fault_fields=['instance', 'other'])))
        aborted = table.lost_fault(aborted=True)
        self.assertIsNone(aborted(_obs(fault=(
            'Build of instance %s aborted: ' % SERVER +
            _obs()['lost_fault']))))
        self.assertIsNotNone(aborted(_obs()))

    def test_no_foreign_uuid(self):
        self.assertIsNone(table.no_foreign_uuid(_obs()))
        leak = _obs(fault='Node %s is now associated with instance %s' % (
            NODE, OTHER))
        self.assertIn(OTHER, table.no_foreign_uuid(leak))
        # a fault created on the way counts too
        self.assertIn(OTHER, table.no_foreign_uuid(
            _obs(faults_created=['instance %s' % OTHER.upper()])))
        self.assertIsNotNone(table.no_foreign_uuid(
            _obs(other_instance='host-x', fault='on host-x')))

    def test_log_checks_are_details(self):
        has = table.log_has('Ironic node {first_node} was deleted')
        self.assertIn('lacks', has(_obs()))
        self.assertIsNone(has(_obs(log=[
            'WARNING [nova.virt.ironic.driver] Ironic node %s was deleted '
            'during the deploy.' % NODE])))
        self.assertTrue(has.detail)
        self.assertIsNotNone(table.log_lacks('Node None')(
            _obs(log=['ERROR [x] Node None could not be found.'])))

    def test_claim_kept(self):
        # LP 2169779: the ERROR server keeps its host, allocation and usage
        # for its delete; the node must still be clean
        node = dict(_obs()['nodes'][0], provision_state='available',
                    instance_id=None)
        kept = _obs(status='ERROR', host='ironic-host', usages={'rp-1': 1},
                    allocations={'rp-1': {}}, nodes=[node])
        self.assertIsNone(table.claim_kept(kept))
        self.assertIn('not kept', table.claim_kept(
            dict(kept, host=None, usages={'rp-1': 0}, allocations={})))
        self.assertIn('left behind', table.claim_kept(dict(kept, nodes=[
            dict(node, provision_state='deploy failed')])))

    def test_log_reports_is_an_outcome(self):
        # where a log line is what Nova was asked for (reap-deleted-log),
        # its absence is the bug, not a detail
        reports = table.log_reports('marked as DELETED')
        self.assertIn('lacks', reports(_obs()))
        self.assertIsNone(reports(_obs(log=[
            'WARNING [nova.compute.manager] Detected instance with name '
            'label ... which is marked as DELETED but still present'])))
        self.assertFalse(reports.detail)

    def test_a_step_that_never_came(self):
        obs = _obs(hooks_fired=['undeploy@2'], definition={
            'action': 'undeploy', 'then': [[5, 'delete']]})
        self.assertIn('1 of 2', table.all_steps_fired(obs))

    def test_leftovers(self):
        self.assertEqual([], table.leftovers(_obs()))
        self.assertIsNone(table.clean(_obs()))
        node = dict(_obs()['nodes'][0], provision_state='wait call-back',
                    instance_id=OTHER, instance_info=True)
        # another instance's node is not ours to clean
        self.assertEqual([], table.leftovers(_obs(nodes=[node])))
        mine = dict(node, instance_id=SERVER, vifs=['vif'])
        self.assertEqual(['node-1 wait call-back',
                          'node-1 keeps instance/instance_info/VIFs'],
                         table.leftovers(_obs(nodes=[mine])))
        self.assertEqual(['placement usage 1, expected 0', 'allocation on rp-1'],
                         table.leftovers(_obs(usages={'rp-1': 1},
                                              allocations={'rp-1': {}})))
        # an ACTIVE server keeps its node and its usage
        active = dict(node, instance_id=SERVER, provision_state='active')
        self.assertEqual([], table.leftovers(_obs(
            status='ACTIVE', node=NODE, nodes=[active], usages={'rp-1': 1},
            allocations={'rp-1': {}})))
        self.assertEqual(['port still bound to the deleted server'],
                         table.leftovers(_obs(status='DELETED', port_device_id=SERVER)))
        self.assertIn('left behind: node-1', table.clean(_obs(nodes=[mine])))

    def test_only_reads_and_never_error(self):
        self.assertIn('update_node', table.only_reads(
            _obs(writes_after_action=['update_node'])))
        self.assertIn('ERROR', table.never_error(_obs(error_saves=1)))
        self.assertIsNone(table.never_error(_obs()))


class JudgeTest(unittest.TestCase):

    def test_runner_error_and_not_settled(self):
        self.assertEqual(['runner error: KeyError: x'], table.judge(
            'normal-build', 'fixed', {'error': 'Traceback\nKeyError: x\n'}))
        self.assertEqual(['did not settle within the time limit'],
                         table.judge('normal-build', 'fixed', {'settled': False}))

    def test_unknown(self):
        with self.assertRaises(HarnessError):
            mainjob.judge('nosuch', 'fixed', {})
        with self.assertRaises(KeyError):
            table.judge('normal-build', 'elsewhere', {})

    def test_bug_verdict_ignores_log_lines(self):
        # A log line the fixed tree must not write (the fix reads the
        # instance again before it logs a lost node) is a detail: a tree
        # that writes it but behaves right is not "bug reproduced".
        lost = ('WARNING [nova.virt.ironic.driver] Ironic node %s was torn down '
                'during the deploy: it is no longer associated with the '
                'instance' % NODE)
        obs = _obs(scenario='user-delete-at-teardown-poll', status='DELETED',
                   fault=None, usages={NODE: 0}, hooks_fired=['a', 'b'],
                   log=[lost],
                   definition={'action': 'undeploy', 'then': [[3, 'delete']]})
        self.assertTrue(mainjob.judge(obs['scenario'], 'fixed', obs))
        self.assertEqual([], mainjob._bug_reasons(obs))
        obs['log'] = []
        self.assertEqual([], mainjob.judge(obs['scenario'], 'fixed', obs))

    def test_bug_verdict_of_a_log_action(self):
        # running_deleted_instance_action = log: the released tree leaves
        # the node as the fixed one does, but never logs it
        obs = _obs(scenario='reap-deleted-log', status='DELETED', log=[],
                   nodes=[dict(_obs()['nodes'][0], instance_id=SERVER,
                               provision_state='active')])
        self.assertEqual([], mainjob.judge(obs['scenario'], 'reproducer',
                                           obs))
        self.assertIn('lacks', mainjob._bug_reasons(obs)[0])


class EvaluateTest(unittest.TestCase):
    """Verdicts and the table."""

    def _data(self, reproducer, fixed):
        return {'reproducer': {'scenarios': [reproducer]},
                'fixed': {'scenarios': [fixed]}}

    def test_verdicts(self):
        stuck = _obs(scenario='undeploy-cleared', status='BUILD', fault=None)
        right = _obs(scenario='undeploy-cleared', log=[
            'WARNING [nova.virt.ironic.driver] Ironic node %s was torn down during the '
            'deploy: it is no longer associated with the instance (provision_state '
            'available)' % NODE])
        data = self._data(stuck, right)
        self.assertEqual(0, mainjob.evaluate(data, released='nova 34.0.0'))
        self.assertEqual('bug reproduced: status BUILD, expected ERROR', stuck['verdict'])
        self.assertEqual('ok', right['verdict'])
        # the reproducer did something else than its column says
        other = _obs(scenario='undeploy-cleared', status='ACTIVE')
        wrong = _obs(scenario='undeploy-cleared', status='BUILD', fault=None)
        data = self._data(other, wrong)
        self.assertEqual(1, mainjob.evaluate(data))
        self.assertTrue(other['verdict'].startswith('unexpected: status ACTIVE'))
        self.assertTrue(wrong['verdict'].startswith('WRONG: status BUILD'))

    def test_as_released(self):
        ok = _obs(scenario='normal-build', status='ACTIVE', node=NODE, fault=None,
                  calls_per_poll=1.0, usages={'rp': 1}, allocations={'rp': {}},
                  nodes=[dict(_obs()['nodes'][0], provision_state='active',
                              instance_id=SERVER)])
        data = self._data(ok, dict(ok))
        self.assertEqual(0, mainjob.evaluate(data, released='nova 34.0.0'))
        self.assertEqual("as on nova 34.0.0: the fixed tree's checks hold too",
                         data['reproducer']['scenarios'][0]['verdict'])

    def test_table_has_leftovers_and_the_whole_fault(self):
        fault = 'Exceeded maximum number of retries. ' + 'x' * 250 + ' END'
        left = dict(_obs()['nodes'][0], instance_id=SERVER, vifs=['v'])
        repro = _obs(scenario='undeploy-cleared', status='ERROR', fault=fault,
                     nodes=[left])
        fixed = _obs(scenario='undeploy-cleared', log=[
            'WARNING [nova.virt.ironic.driver] Ironic node %s was torn down during the '
            'deploy: it is no longer associated with the instance (provision_state '
            'available)' % NODE])
        data = self._data(repro, fixed)
        mainjob.evaluate(data)
        rows = mainjob.table(data)
        self.assertIn('leftovers', rows[0])
        row = next(r for r in rows if r.startswith('undeploy-cleared'))
        self.assertIn(' 1 (below) ', row)
        fixed_row = next(r for r in rows if r.lstrip().startswith('fixed'))
        self.assertRegex(fixed_row, r' none +ok$')
        text = [r.strip() for r in rows if r.startswith(' ' * mainjob.TEXT_INDENT)]
        self.assertEqual('left:  node-1 keeps instance/VIFs', text[0])
        text = text[1:]
        self.assertTrue(text[0].startswith('fault: Exceeded'))
        # wrapped, not cut: every character is there
        joined = ''.join(t.replace('fault: ', '', 1) for t in text[:4])
        self.assertIn('END', joined)
        self.assertEqual(fault.replace(' ', ''), joined.replace(' ', '')[:len(
            fault.replace(' ', ''))])
        self.assertTrue(all(len(r) <= mainjob.TEXT_INDENT + mainjob.TEXT_WIDTH
                            for r in rows[2:] if r.startswith(' ' * 10)))

    def test_scenario_list(self):
        text = '\n'.join(mainjob.scenario_list())
        for sc in table.SCENARIOS:
            self.assertIn(f'{sc.name}: {sc.title}', text)
        self.assertIn('real Ironic, driver level (ironic selftest): '
                      'tests/realironic/test_e2e.py '
                      'test_undeploy_in_wait_callback', text)


class ParseTest(unittest.TestCase):

    def test_parse_unittest(self):
        self.assertEqual((5, 0, 0), cisteps.parse_unittest('Ran 5 tests in 1.0s\n\nOK\n'))
        self.assertEqual((21, 3, 2), cisteps.parse_unittest(
            'Ran 21 tests in 90s\n\nFAILED (failures=1, errors=2, skipped=2)\n'))
        self.assertEqual((4, 0, 1), cisteps.parse_unittest(
            'Ran 4 tests in 1s\n\nOK (skipped=1)\n'))
        self.assertEqual((1, 1, 0), cisteps.parse_unittest(
            'Ran 1 test in 1s\n\nFAILED (unexpected successes=1)\n'))
        # no "Ran" line: the run crashed
        self.assertEqual((0, 1, 0), cisteps.parse_unittest('ImportError: no nova\n'))

    def test_bench_spec(self):
        self.assertEqual('10:5:3', mainjob._bench_spec('10:5:3'))
        self.assertEqual('scale', mainjob._bench_spec('scale'))
        # normalised: sorted options, defaults dropped, booleans lower case
        self.assertEqual(
            '5:1:1:max_attempts=5,shuffle_best_same_weighed_hosts=true',
            mainjob._bench_spec('5:1:1:shuffle_best_same_weighed_hosts=True,'
                                'max_attempts=5,host_subset_size=1'))
        for bad in ('0:1:0', '3:1:4', '1:2', 'a:b:c', '10:5:3:1', ' 1:1:1',
                    '10:5:3:max_attempts=0', '10:5:3:max_attempts=x',
                    '10:5:3:shuffle_best_same_weighed_hosts=1',
                    '10:5:3:max_attempts=5,max_attempts=4',
                    '10:5:3:cpu_allocation_ratio=2', 'scales'):
            with self.assertRaises(argparse.ArgumentTypeError, msg=bad):
                mainjob._bench_spec(bad)
        with self.assertRaisesRegex(argparse.ArgumentTypeError,
                                    'unknown option.*known: host_subset_size'):
            mainjob._bench_spec('1:0:0:foo=1')
        self.assertEqual(3, mainjob._runs('3'))
        for bad in ('0', '-1', 'x'):
            with self.assertRaises(argparse.ArgumentTypeError, msg=bad):
                mainjob._runs(bad)


if __name__ == '__main__':
    unittest.main()
