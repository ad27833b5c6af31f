"""The benchmark's table (specs, suites, statistics) and its report
(no Nova needed: the players' records are dicts)."""

import os
import pathlib
import re
import shutil
import sys
import tempfile
import unittest
from unittest import mock

from novaseries import util
from novaseries.mainjob import benchreport
from novaseries.mainjob import trees as mainjob_trees
from novaseries.scenarios import bench_table
from tests import helpers

BENCH_PLAYER = helpers.REPO / 'novaseries' / 'nova_side' / 'player' / 'play_bench.py'
REPORT = helpers.REPO / 'novaseries' / 'mainjob' / 'benchreport.py'


def _rec(tree, run=1, spec='4:1:2', **kw):
    """A record as the player writes it: 4 builds, 2 torn down."""
    spec_ = bench_table.parse(spec)
    torn = [{'server': 's%d' % i, 'node': 'n%d' % i, 'poll': 1,
             'state': 'wait call-back', 'polls_to_give_up': 1,
             'seconds_to_give_up': 0.1 * (i + 1), 'attempts': ['failed'],
             'final': 'BUILD', 'seconds_to_final': None,
             'polls_to_final': None}
            for i in range(spec_.k)]
    if tree == 'fixed':
        for i, t in enumerate(torn):
            t.update(attempts=['rescheduled', 'active'][:1 + (i == 0)],
                     final='ACTIVE' if i == 0 else 'ERROR',
                     seconds_to_final=1.0 + i, polls_to_final=1 + 6 * (i == 0))
    rec = {**bench_table.record_head(spec_, run),
           'options': dict(spec_.options), 'error': None, 'settled': True,
           'wall_seconds': 3.0, 'cpu_seconds': 8.0,
           'ironic_calls_total': 40,
           'outcome': {'ACTIVE': 2, 'BUILD': 2} if tree == 'reproducer'
           else {'ACTIVE': 3, 'ERROR': 1},
           'build_results': {}, 'torn_down': torn,
           'healthy': [{'wall_seconds': 0.5, 'ironic_calls': 12,
                        'polls': 5, 'calls_per_poll': 1.0}] * 2,
           'stuck_in_build': sorted(t['server'] for t in torn
                                    if t['final'] == 'BUILD'),
           'rescheduled': {'builds': 0, 'ACTIVE': 0, 'ERROR': 0, 'BUILD': 0,
                           'missing': 0},
           'inconsistencies': []}
    if tree == 'fixed':
        rec['rescheduled'].update(builds=spec_.k, ACTIVE=min(1, spec_.k),
                                  ERROR=max(0, spec_.k - 1))
    rec.update(kw)
    return rec


def _data(reproducer, fixed):
    return {'reproducer': {'scenarios': [], 'bench': reproducer},
            'fixed': {'scenarios': [], 'bench': fixed}}


class BenchTableTest(unittest.TestCase):

    def test_parse(self):
        spec = bench_table.parse('50:10:10:max_attempts=5,'
                                 'shuffle_best_same_weighed_hosts=TRUE')
        self.assertEqual((50, 10, 10), spec[:3])
        self.assertEqual((('max_attempts', 5),
                          ('shuffle_best_same_weighed_hosts', True)),
                         spec.options)
        self.assertEqual([('max_attempts', 5, 'scheduler'),
                          ('shuffle_best_same_weighed_hosts', True,
                           'filter_scheduler')], spec.flags())
        self.assertEqual('max_attempts=5, shuffle_best_same_weighed_hosts='
                         'true', spec.settings)
        self.assertEqual('defaults', bench_table.parse('1:0:0').settings)
        # [DEFAULT] max_concurrent_builds; Nova's default is no option
        self.assertEqual([('max_concurrent_builds', 0, None)],
                         bench_table.parse('1:0:0:max_concurrent_builds=0')
                         .flags())
        self.assertEqual('1:0:0', bench_table.parse(
            '1:0:0:max_concurrent_builds=10').text)

    def test_parse_refuses(self):
        for bad, why in (('3:1:4', r'K \(4 torn down\) > N'),
                         ('1:0:0:x=1', 'unknown option'),
                         ('1:0:0:max_attempts', 'unknown option'),
                         ('1:0:0:max_attempts=1,max_attempts=2', 'twice'),
                         ('1:0:0:host_subset_size=-1', 'integer'),
                         ('1:0:0:host_subset_size=0', '>= 1'),
                         ('1:0:0:shuffle_best_same_weighed_hosts=yes',
                          'true or false'),
                         ('0:0:0', 'expected N:S:K')):
            with self.assertRaisesRegex(ValueError, why, msg=bad):
                bench_table.parse(bad)

    def test_suites(self):
        for name, texts in bench_table.BENCH_SUITES.items():
            for text in texts:
                self.assertEqual(text, bench_table.parse(text).text,
                                 (name, text))
        # the sizes and settings
        self.assertEqual(['10:2:2', '50:10:10', '100:20:20',
                          '100:20:20:max_concurrent_builds=0'],
                         [s.text for s in bench_table.expand(['scale'])])
        alternates = bench_table.expand(['alternates'])
        self.assertEqual({(50, 10, 10)}, {s[:3] for s in alternates})
        self.assertEqual(
            [(), ('shuffle_best_same_weighed_hosts',), ('host_subset_size',),
             ('max_attempts',)],
            [tuple(k for k, _ in s.options) for s in alternates[:4]])
        # each spec once, in order
        every = bench_table.expand(['all', 'scale', '10:2:2'])
        self.assertEqual(len(every), len(set(every)))
        self.assertEqual(bench_table.expand(['all']), every)
        self.assertEqual('50:0:0', every[0].text)

    def test_record_head(self):
        self.assertEqual({'spec': '4:1:2:max_attempts=5', 'run': 3, 'n': 4, 's': 1, 'k': 2},
                         bench_table.record_head(bench_table.parse('4:1:2:max_attempts=5'), 3))

    def test_statistics(self):
        self.assertIsNone(bench_table.percentile([], 50))
        self.assertIsNone(bench_table.median([None]))
        values = list(range(1, 21))
        self.assertEqual(10, bench_table.percentile(values, 50))
        self.assertEqual(19, bench_table.percentile(values, 95))
        self.assertEqual(20, bench_table.percentile(values, 100))
        self.assertEqual(7, bench_table.percentile([7], 95))
        self.assertEqual(2, bench_table.median([3, 1, 2]))
        self.assertEqual(2.5, bench_table.median([4, 1, 3, None, 2]))
        for bad in (0, 101, -5):
            with self.assertRaisesRegex(ValueError, 'not in'):
                bench_table.percentile([1], bad)

    def test_record_keys_are_documented(self):
        """Every key the benchmark's player writes and the report reads is in
        bench_table.RECORD; every field of a torn-down or healthy entry in
        TORN_DOWN_FIELDS / HEALTHY_FIELDS."""
        bench = BENCH_PLAYER.read_text()
        test = bench.split('def test_bench', 1)[1].split('def _torn_down')[0]
        written = set(re.findall(r"\brec\['(\w+)'\]", test))
        # rec = dict(bench_table.record_head(spec, run), key=value, ...)
        made = re.findall(r"rec = dict\(bench_table\.record_head\(.*?\),(.*?)\)\n",
                          test, re.S)[0]
        written |= set(bench_table.record_head(bench_table.parse('1:0:0'), 1))
        written |= set(re.findall(r"(\w+)=", made))
        self.assertIn('inconsistencies', written)
        self.assertIn('options', written)
        report = REPORT.read_text()
        read = set(re.findall(r"\br(?:ec)?(?:\.get\(|\[)'(\w+)'", report))
        self.assertIn('torn_down', read)
        self.assertIn('rescheduled', read)
        self.assertEqual(set(), (written | read) - set(bench_table.RECORD))
        entry = bench_table.torn_down(
            {'server': 's', 'node': 'n', 'poll': 1}, None, [], [], None, [])
        self.assertEqual(set(bench_table.TORN_DOWN_FIELDS), set(entry))
        # and every RECORD key is written by the player
        self.assertEqual(set(bench_table.RECORD), written)
        fields = set(re.findall(r"\bt\['(\w+)'\]", report))
        self.assertIn('polls_to_give_up', fields)
        self.assertEqual(set(), fields - set(bench_table.TORN_DOWN_FIELDS))
        self.assertEqual(set(bench_table.HEALTHY_FIELDS),
                         set(bench_table.healthy_build([], 'n')) |
                         {'wall_seconds'})
        self.assertEqual(set(), set(re.findall(r"\bb\['(\w+)'\]", report)) -
                         set(bench_table.HEALTHY_FIELDS))


class EndStateTest(unittest.TestCase):
    """bench_table.settled, healthy_build, rescheduled, inconsistencies."""

    A, B, C = 'server-a', 'server-b', 'server-c'

    def test_settled(self):
        views = {self.A: {'status': 'ACTIVE'}, self.B: {'status': 'BUILD'}}
        # BUILD after a failed attempt: the bug; nothing moves it again
        self.assertTrue(bench_table.settled(views, {self.B: ['failed']}))
        # BUILD after a reschedule: the next attempt is on its way
        self.assertFalse(bench_table.settled(views, {self.B: ['rescheduled']}))
        self.assertFalse(bench_table.settled(
            views, {self.B: ['rescheduled_by_policy']}))
        self.assertFalse(bench_table.settled(views, {}))
        self.assertTrue(bench_table.settled(
            {self.A: {'status': 'ERROR'}}, {self.A: ['rescheduled']}))
        self.assertFalse(bench_table.settled({self.A: None}, {}))

    def test_healthy_build(self):
        calls = [('create', None), ('patch_node', 'n1'), ('nodes', 'n2'),
                 ('set_node_provision_state', 'n1'), ('nodes', 'n1'),
                 ('nodes', 'n1'), ('nodes', 'n2'), ('nodes', 'n1'),
                 ('get_node', 'n1')]
        self.assertEqual({'ironic_calls': 6, 'polls': 3,
                          'calls_per_poll': 1.0},
                         bench_table.healthy_build(calls, 'n1'))
        # a second call inside the poll loop shows
        calls.insert(6, ('get_node', 'n1'))
        self.assertEqual(1.333, bench_table.healthy_build(
            calls, 'n1')['calls_per_poll'])
        self.assertIsNone(bench_table.healthy_build(
            calls[:2], 'n1')['calls_per_poll'])

    def test_rescheduled(self):
        views = {self.A: {'status': 'ACTIVE'}, self.B: {'status': 'ERROR'},
                 self.C: None}
        self.assertEqual(
            {'builds': 3, 'ACTIVE': 1, 'ERROR': 1, 'BUILD': 0, 'missing': 1},
            bench_table.rescheduled(views, {
                self.A: ['rescheduled', 'active'], self.B: ['rescheduled'],
                self.C: ['rescheduled_by_policy'], 'other': ['active']}))

    def test_torn_down(self):
        victim = {'server': 's', 'node': 'lost', 'poll': 2,
                  'state': 'wait call-back', 'at': 10.0, 'polls_at': 4}
        spawns = [{'node': 'lost', 'polls': 5, 'end': 10.25},
                  {'node': 'n2', 'polls': 5, 'end': 12.0}]
        # destroy() of the failed deploy polled the lost node twice more
        destroys = [{'node': 'lost', 'polls': 7}]
        entry = bench_table.torn_down(
            victim, {'status': 'ACTIVE'}, spawns, destroys, 12.5,
            ['rescheduled', 'active'])
        self.assertEqual({
            'server': 's', 'node': 'lost', 'poll': 2,
            'state': 'wait call-back', 'polls_to_give_up': 1,
            'seconds_to_give_up': 0.25, 'final': 'ACTIVE',
            'polls_to_final': 3 + 5, 'seconds_to_final': 2.5,
            'attempts': ['rescheduled', 'active']}, entry)
        # ERROR with no reschedule deploy: the lost node's polls only
        entry = bench_table.torn_down(victim, {'status': 'ERROR'},
                                      spawns[:1], destroys, 11.0,
                                      ['rescheduled'])
        self.assertEqual((1, 3, 1.0), (entry['polls_to_give_up'],
                                       entry['polls_to_final'],
                                       entry['seconds_to_final']))
        # still in BUILD (the bug), or never undeployed: nothing to count
        entry = bench_table.torn_down(victim, {'status': 'BUILD'},
                                      spawns[:1], [], None, ['failed'])
        self.assertEqual((1, None, None), (entry['polls_to_give_up'],
                                           entry['polls_to_final'],
                                           entry['seconds_to_final']))
        never = {'server': 's', 'node': 'lost', 'poll': 2}
        entry = bench_table.torn_down(never, None, [], [], None, [])
        self.assertEqual(('missing', None, None, None), (
            entry['final'], entry['state'], entry['polls_to_give_up'],
            entry['seconds_to_give_up']))

    def _consistent(self):
        """A (torn down, rescheduled, ACTIVE on n3), B (healthy on n2), C
        (torn down, ERROR); n1 and n4 free."""
        victims = {self.A: {'state': 'wait call-back'},
                   self.C: {'state': 'wait call-back'}}
        views = {self.A: {'status': 'ACTIVE', 'node': 'n3', 'fault': None},
                 self.B: {'status': 'ACTIVE', 'node': 'n2', 'fault': None},
                 self.C: {'status': 'ERROR', 'node': None,
                          'fault': 'Exceeded maximum number of retries.'}}
        nodes = {'n1': {'provision_state': 'available', 'instance_id': None},
                 'n2': {'provision_state': 'active', 'instance_id': self.B},
                 'n3': {'provision_state': 'active', 'instance_id': self.A},
                 'n4': {'provision_state': 'available', 'instance_id': None}}
        allocations = {self.A: {'n3': {'CUSTOM_BAREMETAL': 1}},
                       self.B: {'n2': {'CUSTOM_BAREMETAL': 1}}, self.C: {}}
        attempts = {self.A: ['rescheduled', 'active'], self.B: ['active'],
                    self.C: ['rescheduled']}
        return [2, victims, views, nodes, allocations, attempts]

    def test_consistent(self):
        self.assertEqual([], bench_table.inconsistencies(*self._consistent()))

    def test_each_inconsistency(self):
        def broken(change):
            args = self._consistent()
            change(*args)
            return bench_table.inconsistencies(*args)

        def late(k, victims, *_):
            victims[self.A]['state'] = 'active'
        self.assertEqual(['1 of 2 builds torn down in wait call-back '
                          '(server-a: active)'], broken(late))

        def fewer(k, victims, *_):
            del victims[self.C]
        self.assertEqual(['1 of 2 builds torn down in wait call-back (no '
                          'others)',
                          "server server-c was not torn down but its build "
                          "attempts were ['rescheduled'] and it is ERROR"],
                         broken(fewer))

        def lost_active(k, v, views, nodes, *_):
            nodes['n3'] = {'provision_state': 'available',
                           'instance_id': None}
        self.assertEqual(['ACTIVE server server-a: node n3 is available '
                          'with instance None'], broken(lost_active))

        def two_allocations(k, v, views, nodes, allocations, _):
            allocations[self.A]['n1'] = {'CUSTOM_BAREMETAL': 1}
        self.assertEqual(["ACTIVE server server-a holds {'n3': "
                          "{'CUSTOM_BAREMETAL': 1}, 'n1': "
                          "{'CUSTOM_BAREMETAL': 1}}, not its node's "
                          "CUSTOM_BAREMETAL: 1"], broken(two_allocations))

        def leaked(k, v, views, nodes, allocations, _):
            allocations[self.C] = {'n1': {'CUSTOM_BAREMETAL': 1}}
        self.assertEqual(["ERROR server server-c keeps an allocation: "
                          "{'n1': {'CUSTOM_BAREMETAL': 1}}"], broken(leaked))

        def no_fault(k, v, views, *_):
            views[self.C]['fault'] = None
        self.assertEqual(['ERROR server server-c has no fault'],
                         broken(no_fault))

        def missing(k, v, views, *_):
            views[self.B] = None
        self.assertEqual(['server server-b is not in the API',
                          "server server-b was not torn down but its build "
                          "attempts were ['active'] and it is missing",
                          "missing server server-b keeps an allocation: "
                          "{'n2': {'CUSTOM_BAREMETAL': 1}}",
                          'node n2 (active) is associated with server-b, '
                          'which is missing'], broken(missing))

        def unhealthy(k, v, views, nodes, allocations, attempts):
            attempts[self.B] = ['rescheduled', 'active']
        self.assertEqual(["server server-b was not torn down but its build "
                          "attempts were ['rescheduled', 'active'] and it is "
                          "ACTIVE"], broken(unhealthy))

        def stale_node(k, v, views, nodes, *_):
            nodes['n1'] = {'provision_state': 'active',
                           'instance_id': self.C}
            nodes['n4'] = {'provision_state': 'cleaning',
                           'instance_id': None}
        self.assertEqual(['node n1 (active) is associated with server-c, '
                          'which is ERROR on None',
                          'node n4 has no instance but is cleaning'],
                         broken(stale_node))

        def foreign(k, v, views, nodes, *_):
            nodes['n4'] = {'provision_state': 'active', 'instance_id': 'x'}
        self.assertEqual(['node n4 (active) is associated with x, which is '
                          'not a server of the run'], broken(foreign))


class ReportTest(unittest.TestCase):

    def test_consistent_runs_have_no_problems(self):
        data = _data([_rec('reproducer', 1), _rec('reproducer', 2)],
                     [_rec('fixed', 1), _rec('fixed', 2)])
        lines, problems = benchreport.report(data)
        self.assertEqual([], problems)
        text = '\n'.join(lines)
        # end state: ACTIVE / ERROR / BUILD; torn down -> ACTIVE / ERROR /
        # BUILD
        self.assertRegex(text, r'4:1:2 +defaults +reproducer +2 +2 / 0 / 2 '
                         r'+0 / 0 / 2 +3.0 +40 +10.0 +0\n')
        self.assertRegex(text, r'4:1:2 +defaults +fixed +2 +3 / 1 / 0 '
                         r'+1 / 1 / 0 ')
        # rescheduled builds (fixed tree): 2, 1 ACTIVE, 1 ERROR
        self.assertRegex(text, r'4:1:2 +defaults +2 +2 +1 +1 +1.00 / 1.00 / '
                         r'1.00\n')
        # torn-down builds pooled over runs: 4 builds, 2 never final
        self.assertRegex(text, r'4:1:2 +defaults +reproducer +4 +1 / 1 / 1 '
                         r'+0.100 / '
                         r'0.200 / 0.200 +- +- \(4 never\)')
        self.assertRegex(text, r'(?m)4:1:2 +defaults +fixed +4 +1 / 1 / 1 .* '
                         r'1 / 7 / 7 +1.00 / 2.00 '
                         r'/ 2.00$')
        # healthy builds: the run's wall and CPU per server (3 s and 8 s /
        # 4), the attempts' wall, calls
        self.assertRegex(text, r'4:1:2 +defaults +2 / 2 +0.750 / 0.750 '
                         r'+1.000 +2.000 / 2.000 +1.000 +0.500 / 0.500 '
                         r'+1.000 +12.00 / 12.00 +1.000 +1\n')
        # the cost goal is judged on a run without teardown only
        self.assertNotIn('healthy-build cost', text)
        lines, problems = benchreport.report(_data(
            [_rec('reproducer', 1, spec='4:0:0'),
             _rec('reproducer', 2, spec='4:0:0', cpu_seconds=10.0)],
            [_rec('fixed', 1, spec='4:0:0', cpu_seconds=8.4),
             _rec('fixed', 2, spec='4:0:0', cpu_seconds=10.0)]))
        self.assertEqual([], problems)
        self.assertEqual([
            'healthy-build cost, fixed / reproducer, 4:0:0 (median of 2 '
            'paired runs; goal <= 1.02; times are reported, not judged):',
            '  Ironic calls per healthy build: 1.000 met',
            '  wall time per server: 1.000 met',
            '  CPU time per server: 1.025 MISSED',
            '  median build attempt wall time: 1.000 met',
            "  spread of the runs' wall time per server: reproducer 0.0 %, "
            "fixed 0.0 %",
            'Ironic calls per healthy poll, every healthy build of every '
            'valid run: 1 (goal: exactly 1)'], lines[-7:])

    def test_rst_tables(self):
        lines, _ = benchreport.report(_data([_rec('reproducer')],
                                            [_rec('fixed')]))
        rules = [i for i, line in enumerate(lines) if line.startswith('==')]
        self.assertEqual(12, len(rules))     # 4 tables of 3 rules
        for i in rules:
            cells = lines[i].split('  ')
            self.assertTrue(all(set(c) == {'='} for c in cells), lines[i])

    def test_fixed_tree_problems(self):
        fixed = [_rec('fixed', inconsistencies=['ERROR server x has no '
                                                'fault']),
                 _rec('fixed', run=2, stuck_in_build=['s1'], settled=False),
                 _rec('fixed', run=3, error='Traceback\n  ...\nKeyError: 1\n')]
        _, problems = benchreport.report(_data([], fixed))
        self.assertEqual([
            '4:1:2 run 1 (fixed): ERROR server x has no fault',
            '4:1:2 run 2 (fixed): did not settle',
            '4:1:2 run 2 (fixed): 1 server(s) in BUILD',
            '4:1:2 run 3 (fixed): player error: KeyError: 1'], problems)

    def test_reproducer_must_show_exactly_the_torn_down_in_build(self):
        ok = _rec('reproducer')
        missed = _rec('reproducer', run=2, stuck_in_build=['s0'])
        other = _rec('reproducer', run=3, stuck_in_build=['s0', 'x'])
        few = _rec('reproducer', run=4, torn_down=ok['torn_down'][:1],
                   stuck_in_build=['s0'])
        # the bug leaves servers in BUILD and nothing else wrong: any
        # inconsistency counts on the reproducer tree too
        noted = _rec('reproducer', run=5, inconsistencies=[
            'ERROR server x has no fault'])
        lines, problems = benchreport.report(
            _data([ok, missed, other, few, noted], []))
        self.assertEqual([
            '4:1:2 run 2 (reproducer): 1 in BUILD, 2 torn down, expected '
            'the 2 torn down in BUILD',
            '4:1:2 run 3 (reproducer): 2 in BUILD, 2 torn down, expected '
            'the 2 torn down in BUILD',
            '4:1:2 run 4 (reproducer): 1 in BUILD, 1 torn down, expected '
            'the 2 torn down in BUILD',
            '4:1:2 run 5 (reproducer): ERROR server x has no fault'],
            problems)

    def test_cost_pairs_runs_and_takes_the_median(self):
        def healthy(wall, calls, per_poll=1.0):
            return [{'wall_seconds': wall, 'ironic_calls': calls,
                     'polls': 5, 'calls_per_poll': per_poll}]
        rep = [_rec('reproducer', 1, healthy=healthy(1.0, 10)),
               _rec('reproducer', 2, healthy=healthy(2.0, 10)),
               _rec('reproducer', 3, healthy=healthy(4.0, 10))]
        fix = [_rec('fixed', 1, healthy=healthy(1.1, 11, 1.2)),
               _rec('fixed', 2, healthy=healthy(2.0, 10)),
               _rec('fixed', 3, healthy=healthy(4.4, 10))]
        rep[0]['cpu_seconds'] = 4.0
        fix[0]['cpu_seconds'] = 6.0
        fix[2]['wall_seconds'] = 3.3
        cost = benchreport.cost(benchreport.group(_data(rep, fix))['4:1:2'])
        # ratios per run: 1.1, 1.0, 1.1 (wall); 1.1, 1.0, 1.0 (calls);
        # 1.5, 1.0, 1.0 (CPU)
        self.assertAlmostEqual(1.1, cost['wall_ratio'])
        self.assertAlmostEqual(1.0, cost['calls_ratio'])
        self.assertAlmostEqual(1.0, cost['cpu_ratio'])
        self.assertEqual({'reproducer': 2.0, 'fixed': 2.0}, cost['cpu'])
        # run wall per server: 3/4 each, but 3.3/4 in fixed run 3
        self.assertAlmostEqual(1.0, cost['run_wall_ratio'])
        self.assertEqual({'reproducer': 0.75, 'fixed': 0.75},
                         cost['run_wall'])
        # (3.3 - 3) / 3
        self.assertEqual({'reproducer': 0.0, 'fixed': 0.1},
                         {k: round(v, 6) for k, v in cost['spread'].items()})
        self.assertEqual(3, cost['paired_runs'])
        self.assertEqual((1.0, 1.2), cost['calls_per_poll'])
        self.assertEqual({'reproducer': 2.0, 'fixed': 2.0}, cost['wall'])
        # an unpaired run does not count in the ratio
        cost = benchreport.cost(benchreport.group(
            _data(rep[:1], fix))['4:1:2'])
        self.assertEqual(1, cost['paired_runs'])
        self.assertAlmostEqual(1.1, cost['wall_ratio'])

    def test_failed_runs_are_left_out_of_the_statistics(self):
        fixed = [_rec('fixed', 1), _rec('fixed', 2),
                 {'spec': '4:1:2', 'run': 3, 'n': 4, 's': 1, 'k': 2,
                  'error': 'benchmark process exited 1 without a record'},
                 _rec('fixed', 4, settled=False, cpu_seconds=100.0)]
        specs = benchreport.group(_data([_rec('reproducer', i)
                                         for i in (1, 2, 3, 4)], fixed))
        text = '\n'.join(benchreport.end_state_table(specs))
        self.assertRegex(text, r'fixed +2 \(2 failed\) +3 / 1 / 0 +1 / 1 / 0 ')
        cost = benchreport.cost(specs['4:1:2'])
        self.assertEqual(2, cost['paired_runs'])
        self.assertEqual(1.0, cost['cpu_ratio'])
        self.assertEqual(2, len(benchreport.problems(specs)))

    def test_calls_goals_are_judged(self):
        def healthy(calls, per_poll):
            return [{'wall_seconds': 0.5, 'ironic_calls': calls, 'polls': 5,
                     'calls_per_poll': per_poll}] * 4
        rep = [_rec('reproducer', i, spec='4:0:0', healthy=healthy(12, 1.0))
               for i in (1, 2, 3)]
        fix = [_rec('fixed', i, spec='4:0:0', healthy=healthy(13, 1.2))
               for i in (1, 2, 3)]
        lines, problems = benchreport.report(_data(rep, fix))
        self.assertEqual([
            "4:0:0: the fixed tree's healthy builds make 1.083 x the "
            "reproducer's Ironic calls (goal <= 1.02)",
            '4:0:0: 12 healthy build(s) of the fixed tree made [1.2] Ironic '
            'calls per poll (goal: exactly 1)'], problems)
        self.assertIn('  Ironic calls per healthy build: 1.083 MISSED', lines)
        # the mean, not the median: one more call in 1 of 4 builds shows
        fix = [_rec('fixed', i, spec='4:0:0', healthy=healthy(12, 1.0)[:3] +
                    healthy(16, 1.0)[:1]) for i in (1, 2, 3)]
        lines, problems = benchreport.report(_data(rep, fix))
        self.assertIn('  Ironic calls per healthy build: 1.083 MISSED', lines)

    def test_no_bench(self):
        self.assertEqual(([], []), benchreport.report(_data([], [])))


#: A stand-in for the scenario player: appends "<tree> <spec> <run>" to
#: ../calls, writes a record unless the spec's N is 13 (then it exits 3).
FAKE_PLAYER = '''
import json, os, sys
out, spec, run = sys.argv[2], sys.argv[4], int(sys.argv[5])
with open(os.path.join(os.getcwd(), '..', 'calls'), 'a') as f:
    f.write('%s %s %d\\n' % (os.path.basename(os.getcwd()), spec, run))
print('a log line', sys.argv[6:])
if spec.startswith('13:'):
    sys.exit(3)
if spec.startswith('14:'):      # hangs: the harness's SIGUSR1, then kill
    import faulthandler, signal, time
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    sys.stdout.flush()
    time.sleep(60)
with open(out, 'w') as f:
    json.dump({'scenarios': [], 'bench': [{'spec': spec, 'run': run,
               'outcome': {'ACTIVE': 1}, 'wall_seconds': 1.0}]}, f)
'''


class PlayerEnvTest(unittest.TestCase):
    """mainjob.trees.player_env: the tree, then the harness's checkout, on
    PYTHONPATH; Nova's debug logging off whatever the caller set."""

    def test_pythonpath_and_os_debug(self):
        target = mock.Mock(env={}, mode_name='')
        with mock.patch.dict(os.environ, {'OS_DEBUG': '1'}):
            env = mainjob_trees.player_env(target, '/v', '/t')
        self.assertEqual(os.pathsep.join(['/t', str(util.PACKAGE_PARENT)]),
                         env['PYTHONPATH'])
        self.assertEqual('0', env['OS_DEBUG'])


class BenchTreesTest(unittest.TestCase):
    """mainjob.trees.bench_trees: one process per run, one at a time, the
    first tree alternating."""

    def setUp(self):
        tmp = pathlib.Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, tmp)
        (tmp / 'venv' / 'bin').mkdir(parents=True)
        (tmp / 'venv' / 'bin' / 'python').symlink_to(sys.executable)
        # (the player's PYTHONPATH: the tree and PACKAGE_PARENT, here tmp)
        (tmp / 'fake_player.py').write_text(FAKE_PLAYER)
        self.trees = {}
        for label in ('reproducer', 'fixed'):
            (tmp / 'trees' / label).mkdir(parents=True)
            self.trees[label] = tmp / 'trees' / label
        self.calls = tmp / 'trees' / 'calls'
        self.ctx = util.Context(tmp, tmp / 'build', tmp / 'sdists')
        for module, name, value in ((mainjob_trees, 'PLAYER', 'fake_player'),
                                    (util, 'PACKAGE_PARENT', tmp)):
            patcher = mock.patch.object(module, name, value)
            patcher.start()
            self.addCleanup(patcher.stop)
        self.mainjob = mainjob_trees
        self.venv = tmp / 'venv'
        self.target = mock.Mock(env={}, mode_name='')

    def test_order_records_and_errors(self):
        said = helpers.capture_log(self)
        records = self.mainjob.bench_trees(
            self.ctx, self.target, self.venv, self.trees,
            ['2:0:0', '13:0:0'], 2)
        self.assertIn('fixed     [bench 13:0:0 run 2/2] no outcome, ? s '
                      'ERROR IN PLAYER', said.getvalue())
        self.assertEqual([
            'reproducer 2:0:0 1', 'fixed 2:0:0 1',
            'fixed 2:0:0 2', 'reproducer 2:0:0 2',
            'reproducer 13:0:0 1', 'fixed 13:0:0 1',
            'fixed 13:0:0 2', 'reproducer 13:0:0 2'],
            self.calls.read_text().splitlines())
        self.assertEqual([('2:0:0', 1), ('2:0:0', 2), ('13:0:0', 1),
                          ('13:0:0', 2)],
                         [(r['spec'], r['run']) for r in records['fixed']])
        self.assertEqual({'ACTIVE': 1}, records['fixed'][0]['outcome'])
        # a run without a record: an error naming the exit status and log
        log = self.ctx.results('run') / 'fixed.bench.log'
        self.assertEqual(
            f"benchmark process exited 3 without a record; its log: {log}",
            records['fixed'][2]['error'])
        self.assertEqual(13, records['fixed'][2]['n'])
        self.assertEqual(4, log.read_text().count('a log line'))

    def test_hung_run_leaves_a_thread_dump(self):
        """A run past BENCH_TIMEOUT gets SIGUSR1 (its faulthandler writes
        every thread's stack to the log) before the kill; the player is
        told its --deadline."""
        with mock.patch.object(self.mainjob, 'BENCH_TIMEOUT', 3):
            records = self.mainjob.bench_trees(
                self.ctx, self.target, self.venv,
                {'fixed': self.trees['fixed']}, ['14:0:0'], 1)
        log = self.ctx.results('run') / 'fixed.bench.log'
        self.assertEqual(
            f"benchmark process exited killed after 3 s without a record; "
            f"its log: {log}", records['fixed'][0]['error'])
        text = log.read_text()
        self.assertIn("a log line ['--deadline', '-27']", text)
        self.assertIn('thread 0x', text)
        self.assertIn('in <module>', text)


if __name__ == '__main__':
    unittest.main()
