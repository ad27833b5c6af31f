"""The explorer: its table of cases (scenarios/explore_space.py), its
judge (scenarios/universal.py), its search (explorer/search.py, with a
fake player) and the planted defects (mutations.PLANTED)."""

import collections
import json
import pathlib
import tempfile
import unittest
from unittest import mock

from novaseries import mutations, targets, util
from novaseries.scenarios import explore_space, texts, universal
from novaseries.scenarios import checks
from novaseries.scenarios.checks import fired
from novaseries.scenarios.invariant import NODE_GONE
from novaseries.util import HarnessError
from novaseries.explorer import generate, job, search  # (without Hypothesis)
from tests import helpers

try:
    import hypothesis
    from hypothesis import given, settings
except ImportError:  # (the explore extra: .ci/run installs it)
    hypothesis = None

    def given(*args):
        return lambda f: f

    def settings(**kwargs):
        return lambda f: f

needs_hypothesis = unittest.skipIf(hypothesis is None, "Hypothesis is not installed")

CASE = {'kind': 'build', 'action': 'fail', 'after_polls': 2,
        'then': [[3, 'undeploy', 'teardown']], 'nodes': 2, 'max_attempts': 2,
        'delete_on_reschedule': False, 'port': False, 'deploying_reads': 1,
        'deleting_reads': 2, 'api_max_retries': None}

NODE = 'aaaaaaaa-0000-4000-8000-000000000001'
SERVER = 'bbbbbbbb-0000-4000-8000-000000000002'


def observation(**changes):
    """A clean observation of CASE: the server deleted, nothing left."""
    obs = {'scenario': 'explore-1', 'error': None, 'settled': True,
           'status': 'DELETED', 'task_state': None, 'vm_state': None,
           'fault': None, 'faults_created': [], 'server_id': SERVER,
           'host': None, 'node': None, 'first_node': NODE,
           'nodes': [{'id': NODE, 'name': 'node-0', 'provision_state': 'available',
                      'target_provision_state': None, 'instance_id': None,
                      'instance_info': False, 'vifs': [], 'history': []}],
           'allocations': {}, 'usages': {NODE: 0}, 'hooks_fired': ['fail@2', 'undeploy@3'],
           'definition': dict(CASE), 'polls_after_action': 4, 'api_max_retries': 60,
           'at_reschedule': [], 'saved_over_delete': [],
           'held_polls_after_action': 0, 'port_id': None, 'port_device_id': None}
    obs.update(changes)
    return obs


class TestSpace(unittest.TestCase):

    def test_check_accepts_the_table_and_refuses_the_rest(self):
        self.assertIsNone(explore_space.check(CASE))
        for changes, error in (
                ({'kind': 'reap'}, "kind 'reap' is not a starting point"),
                ({'kind': 'rebuild', 'action': 'user-delete'},
                 "a rebuild case does not start with 'user-delete'"),
                ({'action': None}, 'steps without a first step'),
                ({'then': [[3, 'user-delete']]}, 'outside the table'),
                ({'then': [[9, 'undeploy']]}, 'outside the table'),
                ({'then': [[1, 'undeploy', 'deploy']]}, 'outside the table'),
                ({'then': [[1, 'fail']] * 4}, '4 steps'),
                ({'nodes': 4}, 'nodes 4 outside'),
                ({'after_polls': 0}, 'after_polls 0 outside'),
                ({'api_max_retries': 60}, 'api_max_retries 60'),
                ({'action': 'api-blip', 'after_polls': 1, 'then': []},
                 'api-blip at poll 1, before wait call-back (deploying_reads 1)'),
                ({'max_polls': 3}, 'unknown field(s): max_polls'),
                ({'port': 1}, 'port 1 is not true or false'),
                ({'then': [5]}, 'then [5] is not a list'),
                ({'then': [[1]]}, 'then [[1]] is not a list')):
            with self.subTest(changes=changes):
                self.assertIn(error, explore_space.check(dict(CASE, **changes)))

    def test_a_case_gives_every_field(self):
        case = dict(CASE)
        del case['port']
        self.assertEqual('no port (a case gives every field)', explore_space.check(case))

    def test_scenario_of_refuses_a_case_outside_the_table(self):
        sc = explore_space.scenario_of('explore-1', CASE)
        self.assertEqual(((3, 'undeploy', 'teardown'),), sc.then)
        self.assertTrue(sc.finish_ironic_work)
        with self.assertRaisesRegex(ValueError, 'case explore-1: nodes 0'):
            explore_space.scenario_of('explore-1', dict(CASE, nodes=0))

    @needs_hypothesis
    @settings(max_examples=300, database=None, deadline=None)
    @given(generate.cases() if hypothesis else None)
    def test_every_generated_case_is_in_the_table(self, case):
        self.assertIsNone(explore_space.check(case))
        explore_space.scenario_of('explore-1', case)

    @needs_hypothesis
    @settings(max_examples=200, database=None, deadline=None)
    @given(generate.cases() if hypothesis else None)
    def test_draws_keep_to_their_tables(self, case):
        for step in case['then']:
            if step[2:]:
                self.assertIn(step[1], explore_space.TEARDOWN_STEP_ACTIONS)
                low, high = explore_space.TEARDOWN_STEP_POLL
                self.assertTrue(low <= step[0] <= high, step)
        if case['action'] in explore_space.CALLBACK_STARTS:
            self.assertGreater(case['after_polls'], case['deploying_reads'])

    def test_a_first_event_may_come_in_deploying_or_in_wait_call_back(self):
        weight = explore_space.CALLBACK_POLL_WEIGHT
        # a delete at poll 1 of 2 in deploying meets Ironic's 409
        self.assertEqual({1: 1, 2: 1, 3: weight}, generate.first_poll_weights('delete', 2))
        self.assertEqual({1: 1, 2: weight, 3: weight}, generate.first_poll_weights('undeploy', 1))
        self.assertEqual({1: 0, 2: 0, 3: weight}, generate.first_poll_weights('api-blip', 2))

    @needs_hypothesis
    def test_the_draws_take_the_tables_weights(self):
        # every entry but one weighs 0: every draw is that one
        events = set(explore_space.STEP_ACTIONS) | {
            a for starts in explore_space.STARTS.values() for a in starts}
        with mock.patch.multiple(
                explore_space,
                START_WEIGHTS={k: 0 for k in explore_space.STARTS if k != 'build'},
                EVENT_WEIGHTS={a: 0 for a in events if a not in ('fail', 'delete')},
                CALLBACK_POLL_WEIGHT=0, TEARDOWN_POLL_WEIGHTS={1: 0, 2: 0, 3: 0},
                DELETING_READS_WEIGHTS={0: 0, 1: 0, 2: 0},
                DELETE_ON_RESCHEDULE_WEIGHTS={True: 0}):
            found = search.search(lambda case: observation(definition=case),
                                  seed=1, cases=20, shrink_cases=0)
        cases = [json.loads(k) for k in found.generated]
        self.assertGreater(len(cases), 10)
        for case in cases:
            self.assertEqual(('build', 3, False),
                             (case['kind'], case['deleting_reads'],
                              case['delete_on_reschedule']))
            self.assertIn(case['action'], ('fail', 'delete'))
            self.assertLessEqual(case['after_polls'], case['deploying_reads'])
            for step in case['then']:
                self.assertIn(step[1], ('fail', 'delete'))
                if step[2:]:
                    self.assertEqual([4, 'delete'], step[:2])

    def test_draws_follow_the_tables_weights(self):
        self.assertEqual(['build'] * 6 + ['rebuild'] * 2 + ['outage-delete'],
                         generate.repeated(['build', 'rebuild', 'outage-delete'],
                                           {'build': 6, 'rebuild': 2}))
        # the first entry stays first (Hypothesis shrinks towards it)
        for entries, weights in ((list(explore_space.STARTS), explore_space.START_WEIGHTS),
                                 (explore_space.STEP_ACTIONS, explore_space.EVENT_WEIGHTS),
                                 (explore_space.TEARDOWN_STEP_ACTIONS,
                                  explore_space.EVENT_WEIGHTS)):
            drawn = generate.repeated(entries, weights)
            self.assertEqual(entries[0], drawn[0])
            self.assertEqual(set(entries), set(drawn))


class TestUniversal(unittest.TestCase):

    def rules(self, obs):
        return [rule for rule, _ in universal.problems(obs)]

    def test_a_clean_end_keeps_every_rule(self):
        self.assertEqual([], universal.problems(observation()))

    def test_each_rule(self):
        error = dict(status='ERROR', fault='The deploy failed.')
        for changes, rule in (
                (dict(status='BUILD'), 'final'),
                (dict(task_state='spawning', status='ERROR',
                      fault='x'), 'final'),
                (dict(status='ERROR'), 'fault'),
                (dict(error, hooks_fired=['fail@2', fired('delete', 3)]), 'delete'),
                (dict(error, hooks_fired=['fail@2', checks.RESCHEDULE_DELETE]),
                 'delete'),
                (dict(error, definition=dict(CASE, kind='build-delete', action=None,
                                             then=[])), 'delete'),
                (dict(status='DELETED', fault='Instance %s' % NODE.replace('a', 'c')),
                 'tenant'),
                (dict(polls_after_action=17), 'polls'),
                (dict(allocations={NODE: {}}), 'end-state: allocation'),
                (dict(status='ERROR', fault='x', host='h', node=NODE,
                      nodes=[{'id': NODE, 'deleted': True}]),
                 'end-state: host-node')):
            with self.subTest(changes=changes):
                self.assertEqual(rule, self.rules(observation(**changes))[0])

    def test_a_build_with_harmless_events_succeeds(self):
        error = dict(status='ERROR', fault='x')
        for changes, rules in (
                (dict(error, hooks_fired=[]), ['outcome']),
                (dict(error, hooks_fired=[fired('lock-briefly', 1)]), ['outcome']),
                (dict(error, hooks_fired=[fired('api-blip', 2), fired('abort', 3)],
                      refused=['abort: Cannot abort node']), ['outcome']),
                (dict(error, hooks_fired=[fired('lock-briefly', 1), fired('fail', 2)]), []),
                (dict(hooks_fired=[fired('lock-briefly', 1), fired('delete', 2)]), []),
                (dict(error, hooks_fired=[], definition=dict(
                    CASE, kind='undeploy-active-delete', action=None, then=[])),
                 ['delete'])):
            with self.subTest(changes=changes):
                self.assertEqual(rules, self.rules(observation(**changes)))

    def test_a_reschedule_only_once_ironic_freed_the_node(self):
        for at_reschedule, rules in (([[]], []), ([[], []], []),
                                     ([[[NODE, 'deleting']]], ['reschedule'])):
            with self.subTest(at_reschedule=at_reschedule):
                self.assertEqual(rules, self.rules(observation(at_reschedule=at_reschedule)))
        self.assertIn('rescheduled while %s (deleting) still carried it' % NODE,
                      universal.problems(observation(
                          at_reschedule=[[[NODE, 'deleting']]]))[0][1])

    def test_the_build_saves_nothing_over_the_users_delete(self):
        saved = 'vm_state building, task_state scheduling by _do_build_and_run_instance'
        self.assertEqual([], self.rules(observation(saved_over_delete=[])))
        self.assertEqual(['deleting'], self.rules(observation(saved_over_delete=[saved])))
        self.assertIn("the build saved %s over the user's delete" % saved,
                      universal.problems(observation(saved_over_delete=[saved]))[0][1])
        obs = observation()
        del obs['saved_over_delete']
        self.assertEqual(['deleting'], self.rules(obs))

    def test_a_build_with_an_alternate_left_succeeds(self):
        build = dict(CASE, action='undeploy', then=[])
        error = dict(status='ERROR', fault='x', hooks_fired=['undeploy@2'], definition=build)
        for changes, rules in (
                (error, ['outcome']),
                (dict(error, hooks_fired=['maintenance-delete@2']), ['outcome']),
                (dict(error, hooks_fired=['fail@2']), ['outcome']),
                (dict(error, hooks_fired=['abort@2']), ['outcome']),
                # refused: no event at all, so the first half holds
                (dict(error, hooks_fired=['abort@1'], refused=['abort: Cannot abort']),
                 ['outcome']),
                (dict(error, hooks_fired=['api-blip@2', 'undeploy@3']), []),
                (dict(error, hooks_fired=['reassociate@2']), ['outcome']),
                (dict(error, definition=dict(build, nodes=1)), []),
                (dict(error, definition=dict(build, max_attempts=1)), []),
                (dict(error, definition=dict(build, kind='rebuild')), []),
                (dict(error, hooks_fired=['undeploy@2', 'fail@4']), []),
                (dict(error, hooks_fired=['undeploy@2', 'lock-briefly@4']), []),
                # deleting_reads past api_max_retries: the rule says
                # nothing (conservative: Ironic's tear-down may outlast
                # Nova's wait, and the build then ends without a reschedule)
                (dict(error, api_max_retries=1), []),
                (dict(error, definition=dict(build, deleting_reads=3), api_max_retries=1), []),
                (dict(error, api_max_retries=2), ['outcome']),
                (dict(error, hooks_fired=['undeploy@2', checks.RESCHEDULE_DELETE],
                      status='DELETED', fault=None), [])):
            with self.subTest(changes=changes):
                self.assertEqual(rules, self.rules(observation(**changes)))
        self.assertNotIn('outcome', self.rules(observation(**dict(
            error, status='ACTIVE', fault=None))))
        obs = observation(**error)
        del obs['api_max_retries']
        self.assertEqual([('outcome', 'no api_max_retries recorded')],
                         [p for p in universal.problems(obs) if p[0] == 'outcome'])

    def test_only_a_save_by_the_build_in_nova_compute_is_the_builds(self):
        frame = collections.namedtuple('frame', 'filename name')
        manager = '/tree/nova/compute/manager.py'
        build = [frame('/tree/nova/utils.py', 'run'),
                 frame(manager, '_locked_do_build_and_run_instance'),
                 frame(manager, 'decorated_function'),
                 frame(manager, '_do_build_and_run_instance'),
                 frame(manager, '_set_instance_obj_error_state'),
                 frame('/tree/nova/objects/instance.py', 'save')]
        self.assertEqual('_set_instance_obj_error_state', explore_space.build_saver(build))
        # reverts_task_state's save (through _instance_update): only the
        # thread's entry and the decorator are the build's
        reverted = build[:3] + [frame(manager, '_instance_update')]
        self.assertEqual('_instance_update', explore_space.build_saver(reverted))
        for stack in (
                build[:1],  # a looping call's or a hook's thread
                [frame(manager, 'terminate_instance'), frame(manager, 'do_terminate_instance')],
                [frame('/tree/nova/conductor/manager.py', 'build_instances'),
                 frame('/tree/nova/scheduler/utils.py', 'set_vm_state_and_notify')]):
            with self.subTest(stack=stack):
                self.assertIsNone(explore_space.build_saver(stack))

    def test_an_unplayed_case_is_only_that(self):
        for changes in (dict(error='Traceback\nAssertionError: boom'),
                        dict(settled=False, status='BUILD')):
            with self.subTest(changes=changes):
                self.assertEqual(['played'], self.rules(observation(**changes)))

    def test_an_outage_may_spend_its_budgets(self):
        outage = dict(CASE, kind='outage-delete', action='api-down', then=[])
        bound = universal.DEFAULT_MAX_POLLS + 2 * 4
        for action, retries, polls, rules in (
                ('api-down', 2, bound, []), ('api-down', 2, bound + 1, ['polls']),
                ('api-down', 60, 124, []),
                # a blip ends at the first refused read: no budget
                ('api-blip', 60, universal.DEFAULT_MAX_POLLS + 1, ['polls'])):
            with self.subTest(action=action, polls=polls):
                self.assertEqual(rules, self.rules(observation(
                    definition=dict(outage, action=action), api_max_retries=retries,
                    polls_after_action=polls)))

    def test_a_delete_during_the_outage_keeps_its_claim_until_the_api_is_back(self):
        outage = dict(CASE, kind='outage-delete', action='api-down-delete', then=[])
        delete = fired('user-delete', 'first-refused')
        kept = {'status': 'ERROR', 'host': 'h', 'node': NODE, 'allocations': [NODE],
                'first_node_instance': SERVER}
        for back, rules in ((kept, []), ({'status': 'DELETED'}, []),
                            (dict(kept, allocations=[]), ['delete']),
                            (dict(kept, status='ACTIVE'), ['delete'])):
            with self.subTest(back=back):
                self.assertEqual(rules, self.rules(observation(
                    definition=outage, hooks_fired=[delete], at_api_back=back)))
        # ... and the delete once the API is back ends 404
        self.assertEqual('delete', self.rules(observation(
            definition=outage, hooks_fired=[delete], at_api_back=kept, status='ERROR',
            fault='x', host='h', node=NODE))[0])

    def test_a_delete_past_the_budget_keeps_the_claim_for_a_second_one(self):
        locked = texts.NODE_LOCKED.format(server_id=SERVER)
        kept = dict(status='ERROR', fault=locked, host='h', node=NODE, api_max_retries=0,
                    allocations={NODE: {'CUSTOM_BAREMETAL': 1}}, usages={NODE: 1},
                    hooks_fired=[fired('lock-briefly', 1), fired('delete', 1)],
                    nodes=[dict(observation()['nodes'][0], instance_id=SERVER,
                                provision_state='active')],
                    definition=dict(CASE, action='delete', then=[]))
        second = {explore_space.SECOND_DELETE: observation()}
        self.assertEqual([], universal.problems(observation(**kept, **second)))
        # (with a port: the failed delete deallocated it)
        port = dict(kept, definition=dict(kept['definition'], port=True),
                    port_id='p', port_device_id=None,
                    nodes=[dict(kept['nodes'][0], vifs=['p'])])
        self.assertEqual([], universal.problems(observation(**port, **second)))
        with mock.patch.dict(universal.FAILED_DELETE_WAIVES, clear=True):
            self.assertEqual(['end-state: port'], self.rules(observation(**port, **second)))
        for changes, text in (
                ({}, 'no second delete recorded'),
                # a 409 of deploying, not of a moment's lock: a failed delete
                (dict(second, hooks_fired=[fired('delete', 1)]),
                 'the user deleted the server, but it is ERROR'),
                (dict(second, api_max_retries=60),
                 'the user deleted the server, but it is ERROR'),
                (dict(second, fault='Build of instance %s aborted' % SERVER),
                 'the user deleted the server, but it is ERROR'),
                (dict(second, usages={NODE: 0}), 'the claim was not kept'),
                ({explore_space.SECOND_DELETE: observation(status='ERROR')},
                 'the second delete left it ERROR'),
                ({explore_space.SECOND_DELETE: observation(allocations={NODE: {}})},
                 'after the second delete: allocation on node-0')):
            with self.subTest(text=text):
                found = universal.problems(observation(**dict(kept, **changes)))
                self.assertEqual('delete', found[0][0])
                self.assertIn(text, found[0][1])

    def test_a_failed_rebuild_stays_on_its_node(self):
        rebuild = dict(CASE, kind='rebuild', action='maintenance-delete', then=[])
        gone = dict(status='ERROR', fault='x', host='h', node=NODE,
                    nodes=[{'id': NODE, 'deleted': True}])
        self.assertEqual([], universal.problems(observation(definition=rebuild, **gone)))
        self.assertEqual([('end-state: host-node', NODE_GONE % NODE)],
                         universal.problems(observation(**gone)))
        failed = dict(gone, nodes=[dict(observation()['nodes'][0], instance_id=SERVER,
                                        provision_state='deploy failed')])
        self.assertEqual([], universal.problems(observation(definition=rebuild, **failed)))
        self.assertEqual(['end-state: node-kept'] * 2, self.rules(observation(**failed)))
        active = dict(gone, nodes=[dict(failed['nodes'][0], provision_state='active')])
        self.assertEqual(['end-state: node-kept'] * 2,
                         self.rules(observation(definition=rebuild, **active)))
        # a node it stays on is checked unless it carries it as a deploy left it
        freed = dict(gone, nodes=[dict(observation()['nodes'][0], instance_info=True)])
        self.assertEqual(['end-state: node-kept'],
                         self.rules(observation(definition=rebuild, **freed)))

    def test_rule_text(self):
        for rule in universal.RULE_NAMES:
            self.assertTrue(universal.rule_text(rule))


@needs_hypothesis
class TestSearch(unittest.TestCase):
    """search() with a fake player: its planted bug is an ERROR without a
    fault in every case that fails the deploy with two nodes or more."""

    @staticmethod
    def play(case):
        bad = case['action'] == 'fail' and case['nodes'] >= 2
        return observation(definition=case, status='ERROR' if bad else 'DELETED')

    def test_finds_and_shrinks_a_failure(self):
        played = []
        found = search.search(lambda case: played.append(case) or self.play(case),
                              seed=5, cases=200, shrink_cases=100)
        self.assertEqual(['fault'], [f.rule for f in found.failures])
        failure = found.failures[0]
        # shrunk: the bug's two conditions, nothing else
        self.assertEqual(dict(kind='build', action='fail', then=[], nodes=2,
                              max_attempts=1, port=False,
                              delete_on_reschedule=False),
                         {k: failure.case[k] for k in ('kind', 'action', 'then', 'nodes',
                                                       'max_attempts', 'port',
                                                       'delete_on_reschedule')})
        self.assertEqual([('fault', 'ERROR without a fault')], failure.problems)
        # each distinct case played once
        self.assertEqual(len(played), len({search.key(c) for c in played}))
        self.assertEqual(len(played), len(found.played))
        self.assertIn("action='fail'", search.scenario_source(failure))

    def test_every_case_is_generated_and_each_rule_shrunk(self):
        # two bugs, each frequent: generation goes on after the first
        # failure, and each rule gets its own minimal case
        def play(case):
            if case['kind'] == 'rebuild':
                return observation(definition=case, status='BUILD')
            if case['kind'] == 'build' and case['port']:
                return observation(definition=case, status='ERROR')
            return observation(definition=case)
        found = search.search(play, seed=5, cases=40, shrink_cases=60)
        self.assertEqual(40, len(found.generated))
        self.assertEqual({'final', 'fault'}, {f.rule for f in found.failures})
        shrunk = {f.rule: f.case for f in found.failures}
        self.assertEqual('rebuild', shrunk['final']['kind'])
        self.assertEqual(('build', True, 1), (shrunk['fault']['kind'], shrunk['fault']['port'],
                                              shrunk['fault']['nodes']))

    def test_an_error_that_is_no_rule_ends_the_search_at_once(self):
        played = []

        def play(case):
            played.append(case)
            if len(played) == 3:
                raise SystemExit(143)  # (SIGTERM, as cli turns it)
            return self.play(case)
        with self.assertRaises(SystemExit):
            search.search(play, seed=7, cases=50)
        self.assertEqual(3, len(played))

    def test_a_seeds_first_cases_do_not_depend_on_how_many(self):
        def cases(seed, number):
            return search.search(self.play, seed, cases=number, shrink_cases=0).generated
        for seed in job.CI_SEEDS:
            self.assertEqual(cases(seed, 25)[:job.CI_CASES], cases(seed, job.CI_CASES))

    def test_same_seed_same_cases(self):
        def cases(seed):
            return list(search.search(self.play, seed, cases=20, shrink_cases=0).played)
        self.assertEqual(cases(3), cases(3))
        self.assertNotEqual(cases(3), cases(4))

    def test_no_failure_and_the_budget(self):
        found = search.search(lambda case: observation(definition=case),
                              seed=1, cases=15, shrink_cases=0)
        self.assertEqual([], found.failures)
        self.assertEqual(15, len(found.played))
        # no shrinking budget: the failure is the case as generated
        found = search.search(self.play, seed=5, cases=200, shrink_cases=0)
        self.assertEqual(found.generated, list(found.played))
        self.assertEqual(['fault'], [f.rule for f in found.failures])

    def test_describe(self):
        self.assertEqual('build [fail@2 undeploy@3/td] 2 nodes, max_attempts 2, '
                         'deploying_reads 1, deleting_reads 2, api_max_retries None',
                         search.describe(CASE))


class TestExpected(unittest.TestCase):

    def test_each_entry_names_a_seed_a_rule_its_sign_and_where_it_is_filed(self):
        for (seed, rule), (sign, where) in job.EXPECTED.items():
            self.assertIsInstance(seed, int)
            self.assertIn(rule, universal.RULE_NAMES)
            self.assertTrue(sign.strip())
            self.assertTrue(where.strip())

    def test_only_the_filed_defects_sign_is_expected(self):
        (seed, rule), (sign, where) = next(iter(job.EXPECTED.items()))
        for problems, fault, filed in (
                ([(rule, 'it shows %s here' % sign)], None, where),
                ([(rule, 'something else')], 'the fault: %s.' % sign, where),
                ([(rule, 'something else')], 'another fault', None)):
            with self.subTest(problems=problems, fault=fault):
                failure = search.Failure(seed, rule, CASE, problems, obs={'fault': fault})
                self.assertEqual(filed, job.filed_as(failure))
        self.assertIsNone(job.filed_as(search.Failure(seed + 1000, rule, CASE,
                                                      [(rule, sign)], obs={})))

    def test_an_expected_failure_does_not_fail(self):
        failures = [search.Failure(1, 'delete', CASE, []),
                    search.Failure(2, 'fault', CASE, [], expected='bug NNNN')]
        self.assertEqual([failures[0]], job.unexpected(failures))


class TestPlanted(unittest.TestCase):

    @staticmethod
    def enclosing(text):
        """``text`` (indented lines of a function's body) in blocks that
        make it a module that compiles."""
        indent = len(text) - len(text.lstrip(' '))
        body = ' ' * (indent + 4) + 'pass\n' if text.rstrip().endswith(':') else ''
        return 'def f():\n' + ''.join(' ' * i + 'if True:\n' for i in range(4, indent, 4)) \
            + text + body

    def test_each_planted_defect_applies_once_and_compiles(self):
        for mutation in mutations.PLANTED:
            with self.subTest(mutation=mutation.name), tempfile.TemporaryDirectory() as tree:
                path = pathlib.Path(tree, mutation.path)
                path.parent.mkdir(parents=True)
                path.write_text(''.join(self.enclosing(old) for old, _ in mutation.replace))
                places = mutations.apply(tree, mutation)
                self.assertEqual(len(mutation.replace), len(places))
                after = path.read_text()
                for old, new in mutation.replace:
                    self.assertNotIn(old, after)
                    self.assertIn(new, after)

    def test_the_packaged_stack_adds_each_planted_text(self):
        # each text a planted defect replaces is in the after-image of a
        # patch of master's packaged stack that adds a line of it
        ctx = util.Context.create(helpers.REPO)
        stack = targets.stack_target(ctx, targets.get(ctx, targets.DEFAULT_TARGET).release)
        after = []
        for patch in stack.series():
            for diff in patch.read_text().split('\ndiff --git ')[1:]:
                lines = [line for line in diff.splitlines()[4:]
                         if line[:1] in ('+', ' ')]
                after.append(([line[1:] for line in lines], [line[:1] for line in lines]))
        for mutation in mutations.PLANTED:
            for old, _ in mutation.replace:
                want = old.rstrip('\n').split('\n')
                with self.subTest(mutation=mutation.name):
                    self.assertTrue(any(
                        text[i:i + len(want)] == want and '+' in signs[i:i + len(want)]
                        for text, signs in after for i in range(len(text))),
                        f"{mutation.name}: no patch of {stack.name} adds {want}")

    def test_refused_when_the_text_is_not_there_once(self):
        mutation = mutations.get('no-409-retry')
        old = mutation.replace[0][0]
        for text, count in (('x = 1\n', 0), (old + old, 2)):
            with self.subTest(count=count), tempfile.TemporaryDirectory() as tree:
                path = pathlib.Path(tree, mutation.path)
                path.parent.mkdir(parents=True)
                path.write_text(text)
                with self.assertRaisesRegex(HarnessError, f'has {count} copies'):
                    mutations.apply(tree, mutation)
                self.assertEqual(text, path.read_text())


if __name__ == '__main__':
    unittest.main()
