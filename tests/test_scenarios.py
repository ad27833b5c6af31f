"""The scenario table and the code that gives the verdict: checks, judge,
evaluate, the verdict table, the ci step's unittest parsing and the
``--bench`` spec (no Nova needed: observations are dicts)."""

import argparse
import ast
import contextlib
import dataclasses
import re
import types
import unittest
from unittest import mock

from novaseries import cisteps, outcomes, modes as modes_mod
from novaseries.commands import common, run as run_command
from novaseries.mainjob import job, judge, report
from novaseries.scenarios import (bounds, checks, explore_space, invariant, outage_checks,
                                  scenario, scenario_table as table, texts)
from novaseries.util import HarnessError
from tests import helpers

SERVER = '11111111-1111-4111-8111-111111111111'
NODE = '22222222-2222-4222-8222-222222222222'
#: The compute log line of ``undeploy-cleared`` on the fixed tree.
CLEARED_LOG = ('WARNING [nova.virt.ironic.driver] Ironic node %s was torn down '
               'during the deploy: it is no longer associated with the instance '
               '(provision_state available)' % NODE)
OTHER = '33333333-3333-4333-8333-333333333333'
#: The image the server was booted with.
IMAGE = '66666666-6666-4666-8666-666666666666'
PLAYER_DIR = helpers.REPO / 'novaseries' / 'nova_side' / 'player'
#: The scenario player's modules that play the table's scenarios.
PLAYER = [PLAYER_DIR / f'{m}.py' for m in ('play', 'scenario_case', 'play_fake',
                                           'play_kinds', 'play_record',
                                           'play_real', 'play_bench', 'watch')]
TABLE = helpers.REPO / 'novaseries' / 'scenarios' / 'scenario_table.py'
#: What a scenario is, and the kinds and actions it names.
SCENARIO = helpers.REPO / 'novaseries' / 'scenarios' / 'scenario.py'
SCENARIO_CASE = PLAYER_DIR / 'scenario_case.py'
PLAY_KINDS = PLAYER_DIR / 'play_kinds.py'
REAL_DEPLOY = helpers.REPO / 'novaseries' / 'ironic' / 'real_deploy.py'
#: The modules of the table's checks: {module name: path}.
CHECKS = {f'novaseries.scenarios.{m}': helpers.REPO / 'novaseries' / 'scenarios' / f'{m}.py'
          for m in ('checks', 'invariant', 'outage_checks', 'bounds', 'texts')}


def _literal_comparisons(paths, attribute, bare=False):
    """Where ``<x>.<attribute>`` (with ``bare``, also a plain name
    ``attribute``) is compared with a text (``==``, ``!=``, ``in``,
    ``not in``) in the files ``paths``: ``['file:line', ...]``."""
    def named(node):
        return getattr(node, 'attr', None) == attribute or (
            bare and getattr(node, 'id', None) == attribute)

    def texts(node):
        return (isinstance(node, ast.Constant) and isinstance(node.value, str)) or (
            isinstance(node, (ast.Tuple, ast.List, ast.Set)) and any(
                texts(e) for e in node.elts))
    found = []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare):
                sides = [node.left, *node.comparators]
                if any(named(n) for n in sides) and any(texts(n) for n in sides):
                    found.append(f'{path.name}:{node.lineno}')
    return found


def _obs(**kw):
    """A complete observation of a build that ended in ERROR with the
    generic fault (each field a check reads is there)."""
    obs = {'scenario': 'undeploy-reassociated', 'error': None, 'settled': True,
           'server_id': SERVER, 'first_node': NODE, 'node': None, 'host': None,
           'nodes': [{'id': NODE, 'name': 'node-1',
                      'provision_state': 'available', 'instance_id': None,
                      'instance_info': False, 'vifs': [],
                      'history': [['available', None]]}],
           'status': 'ERROR', 'task_state': None, 'usages': {NODE: 0},
           'allocations': {}, 'build_results': ['failed'], 'log': [],
           'faults_created': [], 'error_saves': 0,
           'hooks_fired': ['undeploy@2'], 'writes_after_action': [],
           'polls_after_action': 2, 'held_polls_after_action': 0,
           'port_id': None, 'image': IMAGE,
           'definition': {'action': 'undeploy', 'then': [], 'port': False}}
    obs['lost_fault'] = obs['fault'] = (
        'The node of instance %s was torn down.' % SERVER)
    obs['lost_fault_fields'] = ['instance']
    obs.update(kw)
    return obs


def _node(**kw):
    """node-1 of _obs(), changed."""
    return dict(_obs()['nodes'][0], **kw)


#: The server's port (its VIF id on a node).
PORT = '44444444-4444-4444-8444-444444444444'
OTHER_NODE = '55555555-5555-4555-8555-555555555555'


def _active(**kw):
    """An ACTIVE server with a port on node-1 (node-2 free)."""
    obs = _obs(status='ACTIVE', host='ironic-host', node=NODE, fault=None,
               usages={NODE: 1, OTHER_NODE: 0}, allocations={NODE: {}},
               port_id=PORT, port_device_id=SERVER, nodes=[
                   _node(provision_state='active', instance_id=SERVER,
                         instance_info=True, vifs=[PORT]),
                   _node(id=OTHER_NODE, name='node-2')],
               definition={'action': None, 'then': [], 'port': True})
    obs.update(kw)
    return obs


class TableTest(unittest.TestCase):
    """One definition per scenario, used by the player and the harness."""

    def test_names_unique_and_every_scenario_has_both_columns(self):
        names = [s.name for s in table.SCENARIOS]
        self.assertEqual(len(names), len(set(names)), names)
        self.assertEqual(names, list(table.BY_NAME))
        for sc in table.SCENARIOS:
            # (a scenario that cannot be played there says why instead)
            self.assertTrue(sc.reproducer or sc.reproducer_unplayable, sc.name)
            self.assertTrue(sc.fixed, sc.name)
            self.assertEqual(checks.no_foreign_uuid, sc.fixed[-1], sc.name)
            for tree in scenario.TREES:
                texts = sc.expectations(tree)
                self.assertTrue(all(texts), (sc.name, tree, texts))

    def test_player_takes_its_scenarios_from_the_table(self):
        taken = {'novaseries.scenarios.scenario_table': set(),
                 'novaseries.scenarios.scenario': set()}
        for path in PLAYER:
            tree = ast.parse(path.read_text())
            calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and
                     getattr(n.func, 'id', None) == 'Scenario']
            self.assertEqual([], calls, f'{path.name} defines scenarios itself')
            for n in tree.body:
                if isinstance(n, ast.ImportFrom) and n.module in taken:
                    taken[n.module] |= {a.name for a in n.names}
            # every import of the player is a package import
            self.assertEqual([], [n.module for n in tree.body if isinstance(
                n, ast.ImportFrom) and n.module in ('scenario_table', 'scenario',
                                                    'bench_table', 'real_backend')],
                             path.name)
        # the scenarios from the table, their vocabulary from scenario.py
        self.assertEqual({'BY_NAME', 'OTHER_INSTANCE', 'SCENARIOS'},
                         taken['novaseries.scenarios.scenario_table'])
        self.assertEqual({'ACTIONS', 'HELD_ACTIONS', 'KINDS', 'OUTAGE_ACTIONS',
                          'ACT_IN_REBUILD_KINDS', 'AFTERMATH_ACTIONS',
                          'DEPLOY_FAIL_ACTIONS', 'ENDING_DEPLOY_ACTIONS',
                          'MAIN_THREAD_DELETE_ACTIONS', 'OTHER_INSTANCE_ACTIONS',
                          'TEARDOWN_LOOP', 'SCENARIOS_KEY', 'BENCH_KEY',
                          'PROGRESS_PREFIX'},
                         taken['novaseries.scenarios.scenario'])
        # ... and the table needs nothing but Scenario and its checks,
        # which need nothing but the standard library and each other
        # (outage_checks also the outage actions of scenario, which does
        # not import it)
        for path, allowed in ((TABLE, {*CHECKS, 'novaseries.scenarios.scenario', 'types'}),
                              (SCENARIO, {*CHECKS, 'dataclasses', 'types', 'typing'}),
                              *((path, {*CHECKS, 're'} - {name} | (
                                  {'novaseries.scenarios.scenario'}
                                  if name.endswith('.outage_checks') else set()))
                                for name, path in CHECKS.items())):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    names = [a.name for a in node.names] if isinstance(node, ast.Import) \
                        else [node.module]
                    for name in names:
                        self.assertIn(name, allowed, path)

    def test_player_names_the_texts_the_checks_read(self):
        # the backend and the hooks_fired labels a check compares an
        # observation with are checks' constants: no player module writes
        # one as a literal (SETTLED aside: it is also the key 'settled')
        texts = {checks.REAL_IRONIC, checks.API_UP, checks.REFUSE_TEARDOWN,
                 checks.FIRST_REFUSED, checks.API_UP_AT_REFUSAL,
                 checks.API_UP_SETTLED, checks.USER_DELETE_AT_REFUSAL}
        found = [f'{path.name}:{node.lineno} {node.value!r}' for path in PLAYER
                 for node in ast.walk(ast.parse(path.read_text()))
                 if isinstance(node, ast.Constant) and node.value in texts]
        self.assertEqual([], found)

    def test_player_dispatches_through_the_tables(self):
        # scenario_case and play_kinds import Nova: read them, and evaluate
        # only their tables (with scenario's vocabulary and play_kinds'
        # player_method).  KIND_PLAYERS names a method of ScenarioTest for
        # every kind of scenario.KINDS, ACTION_PLAYERS one for every action
        # of scenario.ACTIONS, every _play_ and _act_ method is in them, and
        # _act and _run dispatch through them (no if/elif on a kind or an
        # action left).
        source = SCENARIO_CASE.read_text()
        trees = {'kinds': ast.parse(PLAY_KINDS.read_text()),
                 'actions': ast.parse(source)}
        methods = {n.name for tree, name in ((trees['actions'], 'ScenarioTest'),
                                             (trees['kinds'], 'KindPlayers'))
                   for case in tree.body if isinstance(case, ast.ClassDef)
                   and case.name == name
                   for n in case.body if isinstance(n, ast.FunctionDef)}
        names = {'KINDS': scenario.KINDS, 'ACTIONS': scenario.ACTIONS}
        exec(compile(ast.Module([n for n in trees['kinds'].body
                                 if isinstance(n, ast.FunctionDef)
                                 and n.name == 'player_method'], []),
                     str(PLAY_KINDS), 'exec'), names)

        def evaluated(tree, name):
            value = next(n.value for n in tree.body if isinstance(n, ast.Assign)
                         and getattr(n.targets[0], 'id', '') == name)
            return eval(compile(ast.Expression(value), name, 'eval'), names)
        players = evaluated(trees['kinds'], 'KIND_PLAYERS')
        self.assertEqual(set(scenario.KINDS), set(players))
        self.assertEqual([], sorted(set(players.values()) - methods))
        acts = evaluated(trees['actions'], 'ACTION_PLAYERS')
        self.assertEqual(set(scenario.ACTIONS), set(acts))
        self.assertEqual([], sorted(set(acts.values()) - methods))
        self.assertEqual([], sorted(
            m for m in methods if m.startswith('_act_') and m not in acts.values()
            or m.startswith('_play_') and m not in players.values()))
        self.assertIsNone(re.search(r"elif (sc\.kind|action) ==", source))
        # ... and no kind is compared with a name, nor, against a real
        # Ironic, an action: the traits are scenario.py's tables
        self.assertEqual([], _literal_comparisons(PLAYER + [REAL_DEPLOY], 'kind'))
        self.assertEqual([], _literal_comparisons(PLAYER + [REAL_DEPLOY], 'action', bare=True))
        # every kind and action of the table is played by some scenario,
        # or (an action) by the explorer's cases
        self.assertEqual(set(scenario.KINDS), {sc.kind for sc in table.SCENARIOS})
        used = {sc.action for sc in table.SCENARIOS} | {
            step[1] for sc in table.SCENARIOS for step in sc.then} | set(
                explore_space.STEP_ACTIONS) | {
                    a for starts in explore_space.STARTS.values() for a in starts}
        self.assertEqual(set(scenario.ACTIONS), used - {None})

    def test_unknown_kind_action_or_step_refused(self):
        for kwargs, error in (
                (dict(kind='bulid'), "unknown kind 'bulid'"),
                (dict(action='undeploi'), "unknown action 'undeploi'"),
                (dict(then=[(2, 'nosuch')]), 'a step of then'),
                (dict(then=[(2, 'delete', 'deploy')]), 'a step of then'),
                (dict(then=[('2', 'delete')]), 'a step of then'),
                (dict(nodes=0), 'nodes and max_attempts'),
                (dict(max_attempts=0), 'nodes and max_attempts')):
            with self.subTest(kwargs=kwargs), self.assertRaisesRegex(ValueError, error):
                scenario.Scenario('x', 'x', **kwargs)
        sc = scenario.Scenario('x', 'x', then=[[1, 'delete', 'teardown']])
        self.assertEqual(((1, 'delete', 'teardown'),), sc.then)
        self.assertEqual([[1, 'delete', 'teardown']], sc.describe()['then'])
        with self.assertRaises(dataclasses.FrozenInstanceError):
            sc.kind = 'rebuild'

    def test_real_ironic_tests_exist(self):
        source = (helpers.REPO / 'novaseries' / 'nova_side' / 'driver_tests' /
                  'test_e2e.py').read_text()
        tests = set(re.findall(r'^    def (test_\w+)\(', source, re.M))
        named = {s.real_ironic for s in table.SCENARIOS if s.real_ironic}
        self.assertTrue(named)
        self.assertLessEqual(named, tests)

    def test_doc_describes_every_scenario(self):
        doc = (helpers.REPO / 'doc' / 'main-job.rst').read_text()
        missing = [s.name for s in table.SCENARIOS if f'``{s.name}``' not in doc]
        self.assertEqual([], missing)

    def test_doc_names_the_real_unplayable_scenarios(self):
        """doc/main-job.rst's list of the scenarios a real Ironic cannot
        play is the table's (``real_unplayable``)."""
        doc = (helpers.REPO / 'doc' / 'main-job.rst').read_text()
        listed = re.search(r'marks ``real_unplayable`` \(([^;]*);', doc)
        self.assertIsNotNone(listed)
        self.assertEqual(
            sorted(s.name for s in table.SCENARIOS if s.real_unplayable),
            sorted(re.findall(r'``([\w-]+)``', listed.group(1))))

    def test_doc_constants_exist(self):
        """Every ``module.CONSTANT`` doc/main-job.rst, doc/real-ironic.rst
        and doc/harness.rst name is assigned at the top level of one
        module (or package) of novaseries/ of that name."""
        package = helpers.REPO / 'novaseries'
        for doc, example in (('main-job.rst', ('bounds', 'DEFAULT_MAX_POLLS')),
                             ('real-ironic.rst', ('real_backend', 'FAKE_DELAY')),
                             ('harness.rst', ('tree', 'EXCLUDES'))):
            text = (helpers.REPO / 'doc' / doc).read_text()
            named = set(re.findall(r'``(\w+)\.([A-Z][A-Z0-9_]+)``', text))
            self.assertIn(example, named, doc)
            for module, name in sorted(named):
                with self.subTest(f'{doc}: {module}.{name}'):
                    paths = [*package.rglob(f'{module}.py'),
                             *package.rglob(f'{module}/__init__.py')]
                    self.assertEqual(1, len([p for p in paths if re.search(
                        rf'(?m)^{name}\b.* = ', p.read_text())]), paths)

    def test_observation_keys_are_documented(self):
        """Every key the player writes and every key a check reads is in
        table.OBSERVATION."""
        player = ''.join((PLAYER_DIR / f'{m}.py').read_text()
                         for m in ('scenario_case', 'play_fake', 'play_kinds',
                                   'play_record', 'play_real'))
        written = set(re.findall(r"\brec\['(\w+)'\]", player))
        for call in re.findall(r'rec\.update\((.*?)\)', player, re.S):
            written |= set(re.findall(r'(\w+)=', call))
        written |= set(re.findall(r"'(\w+)': ", (PLAYER_DIR / 'watch.py').read_text()
                                  .split('def poll_stats', 1)[1]))
        self.assertIn('server_id', written)
        read = set(re.findall(r"obs(?:\.get\(|\[)'(\w+)'",
                              ''.join(p.read_text() for p in (TABLE, *CHECKS.values()))))
        self.assertIn('faults_created', read)
        self.assertEqual(set(), (written | read) - set(table.OBSERVATION))


class ChecksTest(unittest.TestCase):

    def test_generic_fault(self):
        lost = checks.lost_fault()
        self.assertIsNone(lost(_obs()))
        self.assertIn('expected', lost(
            _obs(fault=_obs()['lost_fault'] + ' (deleting)')))
        self.assertIn('no IronicNodeLost', lost(_obs(lost_fault=None)))
        # the message may only take our instance: not even the node
        self.assertIn("['other']", lost(
            _obs(lost_fault_fields=['instance', 'other'])))
        self.assertIn("['node']", lost(
            _obs(lost_fault_fields=['instance', 'node'])))
        aborted = checks.lost_fault(aborted=True)
        self.assertIsNone(aborted(_obs(fault=(
            'Build of instance %s aborted: ' % SERVER +
            _obs()['lost_fault']))))
        self.assertIsNotNone(aborted(_obs()))

    def test_outage(self):
        back, settled = outage_checks.outage(back=True), outage_checks.outage(back=False)
        blip = _obs(hooks_fired=['api-blip@2', 'api-up@first-refused'])
        self.assertIsNone(back(blip))
        self.assertIn('did not come back', settled(blip))
        down = _obs(hooks_fired=['api-down@2', 'api-up@settled'])
        self.assertIsNone(settled(down))
        self.assertIn('did not come back', back(down))
        self.assertIn('never went down', back(_obs()))
        # back before it went down does not count
        self.assertIsNotNone(back(_obs(hooks_fired=[
            'api-up@first-refused', 'api-blip@2'])))
        self.assertIn('no hooks_fired', back(_obs(hooks_fired=None)))

    def test_outage_takes_the_outage_actions(self):
        # an action added to OUTAGE_ACTIONS takes the API down too
        settled = outage_checks.outage(back=False)
        obs = _obs(hooks_fired=['api-gone@2', 'api-up@settled'])
        self.assertIn('never went down', settled(obs))
        with mock.patch.object(outage_checks, 'OUTAGE_ACTIONS',
                               scenario.OUTAGE_ACTIONS | {'api-gone'}):
            self.assertIsNone(settled(obs))

    def test_hooks_fired_labels(self):
        # the labels the observations carry, made and read in one place
        self.assertEqual('undeploy@2', checks.fired('undeploy', 2))
        self.assertEqual('refuse-teardown@3',
                         checks.fired(checks.REFUSE_TEARDOWN, 3))
        self.assertEqual(('api-up@first-refused', 'api-up@settled',
                          'user-delete@first-refused'),
                         (checks.API_UP_AT_REFUSAL, checks.API_UP_SETTLED,
                          checks.USER_DELETE_AT_REFUSAL))
        self.assertEqual('api-down', checks.fired_action('api-down@2'))
        self.assertEqual('api-up', checks.fired_action('api-up@settled'))
        self.assertIsNone(checks.fired_action('api-down'))

    def test_outage_with_delete(self):
        check = outage_checks.outage(back=False, delete=True)
        self.assertIsNone(check(_obs(hooks_fired=[
            'api-down-delete@2', 'user-delete@first-refused',
            'api-up@settled'])))
        # the delete must come during the outage, after it went down
        self.assertIn('did not delete', check(_obs(hooks_fired=[
            'api-down-delete@2', 'api-up@settled'])))
        self.assertIn('did not delete', check(_obs(hooks_fired=[
            'user-delete@first-refused', 'api-down-delete@2',
            'api-up@settled'])))
        self.assertIn('did not delete', check(_obs(hooks_fired=[
            'api-down-delete@2', 'api-up@settled',
            'user-delete@first-refused'])))
        self.assertIn('did not come back', check(_obs(hooks_fired=[
            'api-down-delete@2', 'user-delete@first-refused'])))
        self.assertIn('the user deleted', check.text)
        # without delete, the api-down-delete action is an outage too
        self.assertIsNone(outage_checks.outage(back=False)(_obs(hooks_fired=[
            'api-down-delete@2', 'api-up@settled'])))

    def test_at_api_back(self):
        fault = texts.API_UNREACHABLE_ABORTED
        kept = {'status': 'ERROR', 'fault': fault.format(server_id=SERVER),
                'host': 'ironic-host', 'node': NODE, 'allocations': [NODE],
                'first_node_state': 'wait call-back',
                'first_node_instance': SERVER}
        dropped = dict(kept, host=None, node=None, allocations=[],
                       fault='Build of instance %s aborted: Unable to '
                             'establish connection' % SERVER)
        fixed = outage_checks.at_api_back('ERROR', fault, claim_kept=True)
        today = outage_checks.at_api_back('ERROR', claim_kept=False)
        self.assertIsNone(fixed(_obs(at_api_back=kept)))
        self.assertIsNone(today(_obs(at_api_back=dropped)))
        problem = fixed(_obs(at_api_back=dropped))
        self.assertIn('claim not kept', problem)
        self.assertIn('could not be reached', problem)
        self.assertIn('claim kept', today(_obs(at_api_back=kept)))
        # the claim is on the first node, which Ironic shows carrying it
        self.assertIn('claim not kept', fixed(_obs(at_api_back=dict(
            kept, first_node_instance=None))))
        self.assertIn('status ACTIVE', fixed(_obs(at_api_back=dict(
            kept, status='ACTIVE'))))
        self.assertIn('no at_api_back', fixed(_obs()))

    def test_any_of_all_of(self):
        fake = checks.all_of(checks.rescheduled(True), checks.status('ERROR'))
        real = checks.all_of(checks.rescheduled(False),
                             checks.first_node_leaked)
        either = checks.any_of(fake, real)
        self.assertEqual('(rescheduled and ERROR) (or) (not rescheduled and '
                         "the first node keeps the server's instance)",
                         either.text)
        self.assertIsNone(either(_obs(build_results=['rescheduled'])))
        leaked = [_node(provision_state='active', instance_id=SERVER)]
        self.assertIsNone(either(_obs(nodes=leaked)))
        problem = either(_obs())
        self.assertTrue(problem.startswith('none of: '), problem)
        self.assertIn('was not rescheduled', problem)
        self.assertIn('no longer carries', problem)

    def test_no_foreign_uuid(self):
        self.assertIsNone(checks.no_foreign_uuid(_obs()))
        leak = _obs(fault='Node %s is now associated with instance %s' % (
            NODE, OTHER))
        self.assertIn(OTHER, checks.no_foreign_uuid(leak))
        # a fault created on the way counts too
        self.assertIn(OTHER, checks.no_foreign_uuid(
            _obs(faults_created=['instance %s' % OTHER.upper()])))
        self.assertIsNotNone(checks.no_foreign_uuid(
            _obs(other_instance='host-x', fault='on host-x')))

    def test_no_foreign_uuid_rejects_other_nodes(self):
        # the server's own node may be named; a node it was never on (an
        # Ironic node of the same cloud, maybe another tenant's) may not
        free = _node(id=OTHER_NODE, name='node-2')
        own = _obs(nodes=[_node(), free],
                   fault='Node %s of instance %s' % (NODE, SERVER))
        self.assertIsNone(checks.no_foreign_uuid(own))
        other = dict(own, fault='Node %s of instance %s' % (OTHER_NODE, SERVER))
        self.assertIn(OTHER_NODE, checks.no_foreign_uuid(other))
        # a node the server was deployed to (its history left available)
        # is its own, the current one too
        tried = dict(free, history=[['available', None],
                                    ['deploying', 'active']])
        self.assertIsNone(checks.no_foreign_uuid(dict(other, nodes=[
            _node(), tried])))
        self.assertIsNone(checks.no_foreign_uuid(dict(other, node=OTHER_NODE)))

    def test_fault_checks_name_the_cause(self):
        # any aborted build is not the operator's abort
        self.assertIn('abort', table.BY_NAME)
        other = _obs(scenario='abort', hooks_fired=['abort@2'], fault=(
            'Build of instance %s aborted: Instance %s could not be found.' % (
                SERVER, SERVER)))
        self.assertTrue(any('lacks' in p for p in
                            judge.problems_of('abort', 'fixed', other)))
        right = dict(other, fault='Failed to provision instance %s: By '
                     'request, the deploy operation was aborted' % SERVER)
        self.assertFalse([p for p in judge.problems_of('abort', 'fixed', right)
                          if 'fault' in p])
        # the fault is about this server, not any
        failed = checks.fault_has(texts.DEPLOY_FAILED)
        self.assertIsNone(failed(_obs(
            fault='Failed to provision instance %s: Deploy failed' % SERVER)))
        self.assertIn('lacks', failed(_obs(
            fault='Failed to provision instance %s: Deploy failed' % OTHER)))
        self.assertIn('lacks', checks.MISLEADING(_obs(
            fault='Build of instance %s aborted: Image could not be found.'
            % SERVER)))
        self.assertIsNone(checks.MISLEADING(_obs(
            fault='Build of instance %s aborted: Instance %s could not be '
            'found.' % (SERVER, SERVER))))
        created = checks.fault_created(texts.FAILED_ABORTED)
        self.assertIn('no fault', created(_obs(faults_created=[
            'Build of instance %s aborted: ConflictException' % SERVER])))
        # a text naming a field the observation lacks is a problem
        self.assertIn('no server_id', checks.fault_has('{server_id}')(
            {'fault': 'x'}))

    def test_no_not_found_fault(self):
        lie = 'Build of instance %s aborted: Instance %s could not be found.' % (
            SERVER, SERVER)
        self.assertIn('could not be found', checks.no_not_found_fault(
            _obs(fault=lie)))
        self.assertIsNotNone(checks.no_not_found_fault(
            _obs(fault=None, faults_created=[lie])))
        self.assertIsNone(checks.no_not_found_fault(_obs()))

    def test_log_checks_are_details(self):
        has = checks.log_has('Ironic node {first_node} was deleted')
        self.assertIn('lacks', has(_obs()))
        self.assertIsNone(has(_obs(log=[
            'WARNING [nova.virt.ironic.driver] Ironic node %s was deleted '
            'during the deploy.' % NODE])))
        self.assertTrue(has.detail)
        self.assertIsNotNone(checks.log_lacks('Node None')(
            _obs(log=['ERROR [x] Node None could not be found.'])))

    def test_claim_kept(self):
        # LP 2169779: the ERROR server keeps its host, node, allocation and
        # usage for its delete, on the node Ironic still shows carrying it
        node = _node(provision_state='deploy failed', instance_id=SERVER,
                     instance_info=True)
        kept = _obs(status='ERROR', host='ironic-host', node=NODE,
                    usages={NODE: 1}, allocations={NODE: {}}, nodes=[node])
        self.assertIsNone(invariant.claim_kept(kept))
        self.assertIn('not kept', invariant.claim_kept(
            dict(kept, host=None, usages={NODE: 0}, allocations={})))
        # no claim on a node that Ironic has freed (or is freeing)
        for freed in (_node(), _node(provision_state='deleting',
                                     instance_id=SERVER)):
            self.assertIn('which Ironic has freed', invariant.claim_kept(
                dict(kept, nodes=[freed])))
        self.assertIn('left behind: node-2 cleaning', invariant.claim_kept(
            dict(kept, nodes=[node, _node(id=OTHER_NODE, name='node-2',
                                          provision_state='cleaning')])))

    def test_log_reports_is_an_outcome(self):
        # where a log line is what Nova was asked for (reap-deleted-log),
        # its absence is the bug, not a detail
        reports = checks.log_reports('marked as DELETED')
        self.assertIn('lacks', reports(_obs()))
        self.assertIsNone(reports(_obs(log=[
            'WARNING [nova.compute.manager] Detected instance with name '
            'label ... which is marked as DELETED but still present'])))
        self.assertFalse(reports.detail)

    def test_a_step_that_never_came(self):
        obs = _obs(hooks_fired=['undeploy@2'], definition={
            'action': 'undeploy', 'then': [[5, 'delete']]})
        self.assertIn('1 of 2', checks.all_steps_fired(obs))

    def test_leftovers(self):
        self.assertEqual([], invariant.leftovers(_obs()))
        self.assertIsNone(invariant.clean(_obs()))
        node = _node(provision_state='wait call-back', instance_id=OTHER,
                     instance_info=True)
        # another instance's node is not ours to clean
        self.assertEqual([], invariant.leftovers(_obs(nodes=[node])))
        mine = dict(node, instance_id=SERVER, vifs=['vif'])
        self.assertEqual(['node-1 wait call-back',
                          'node-1 keeps instance/instance_info/VIFs'],
                         invariant.leftovers(_obs(nodes=[mine])))
        self.assertEqual(['allocation on node-1, which Ironic has freed or '
                          'is freeing', 'placement usage 1 on node-1, '
                          'expected 0'],
                         invariant.leftovers(_obs(usages={NODE: 1},
                                                  allocations={NODE: {}})))
        self.assertEqual(['port still bound to the deleted server'],
                         invariant.leftovers(_obs(status='DELETED', port_id=PORT,
                                                  port_device_id=SERVER, definition={
                                                     'port': True})))
        self.assertIn('left behind: node-1', invariant.clean(_obs(nodes=[mine])))

    def test_leftovers_of_an_active_server(self):
        # on its own node only, as Ironic shows it
        self.assertEqual([], invariant.leftovers(_active()))
        self.assertEqual(['allocation on node-2, which Ironic has freed or '
                          'is freeing', 'placement usage 1 on node-2, '
                          'expected 0'], invariant.leftovers(_active(
                              allocations={NODE: {}, OTHER_NODE: {}},
                              usages={NODE: 1, OTHER_NODE: 1})))
        self.assertEqual(['no allocation on its node node-1',
                          'placement usage 0 on node-1, expected 1'],
                         invariant.leftovers(_active(allocations={},
                                                     usages={NODE: 0})))
        nodes = _active()['nodes']
        # its node torn down (Ironic freed it) under an ACTIVE server
        freed = [_node(), nodes[1]]
        self.assertIn('its node node-1 is available for None',
                      invariant.leftovers(_active(nodes=freed)))
        self.assertIn('allocation on node-1, which Ironic has freed or is '
                      'freeing', invariant.leftovers(_active(nodes=freed)))
        # the port: bound to the server, its VIF on the server's node only
        self.assertEqual(["its node node-1 lacks the port's VIF",
                          'node-2 keeps VIFs'], invariant.leftovers(_active(
                              nodes=[dict(nodes[0], vifs=[]),
                                     dict(nodes[1], vifs=[PORT])])))
        self.assertEqual(['port not bound to the server (device_id None)'],
                         invariant.leftovers(_active(port_device_id=None)))
        taken = dict(nodes[1], instance_id=OTHER, provision_state='active',
                     vifs=[PORT])
        self.assertEqual(["node-2 (another instance's) keeps the server's "
                          'VIF'], invariant.leftovers(_active(nodes=[nodes[0],
                                                                     taken])))
        # host and node
        self.assertEqual(['host None and node %s disagree' % NODE],
                         invariant.leftovers(_active(host=None)))

    def test_leftovers_of_an_error_server(self):
        # host, node and allocation agree with what Ironic shows
        self.assertEqual(['host ironic-host and node None disagree'],
                         invariant.leftovers(_obs(host='ironic-host')))
        gone = {'id': NODE, 'deleted': True}
        self.assertEqual(['on node %s, which Ironic does not have' % NODE],
                         invariant.leftovers(_obs(host='ironic-host', node=NODE,
                                                  nodes=[gone])))
        # a failed rebuild keeps host and node, without an allocation
        self.assertEqual([], invariant.leftovers(_obs(host='ironic-host',
                                                      node=NODE)))
        self.assertEqual(['allocation on node-1, which Ironic has freed or '
                          'is freeing', 'placement usage 1 on node-1, '
                          'expected 0'], invariant.leftovers(_obs(
                              host='ironic-host', node=NODE,
                              allocations={NODE: {}}, usages={NODE: 1})))

    def test_leftovers_against_a_real_ironic(self):
        # the noop network interface attaches no VIF: not checked there
        bare = [dict(_active()['nodes'][0], vifs=[]), _active()['nodes'][1]]
        self.assertEqual([], invariant.leftovers(_active(nodes=bare,
                                                         backend=checks.REAL_IRONIC)))
        self.assertEqual(['port not bound to the server (device_id None)'],
                         invariant.leftovers(_active(nodes=bare, backend=checks.REAL_IRONIC,
                                                     port_device_id=None)))

    def test_only_reads_and_never_error(self):
        self.assertIn('update_node', checks.only_reads(
            _obs(writes_after_action=['update_node'])))
        self.assertIn('ERROR', checks.never_error(_obs(error_saves=1)))
        self.assertIsNone(checks.never_error(_obs(fault=None)))
        # the fault shown counts, not only those created
        self.assertIn('faults', checks.never_error(_obs()))

    def test_polls_at_most(self):
        check = bounds.polls_at_most(6)
        self.assertIsNone(check(_obs(polls_after_action=6)))
        self.assertIn('7 driver polls after the action, at most 6',
                      check(_obs(polls_after_action=7)))
        # polls of a held deploy count for nothing: their number is timing
        self.assertIsNone(check(_obs(polls_after_action=30,
                                     held_polls_after_action=24)))
        self.assertIn('7 driver polls after the action (3 of a held deploy '
                      'aside), at most 6',
                      check(_obs(polls_after_action=10,
                                 held_polls_after_action=3)))
        self.assertTrue(check.fake_only)
        # every fixed column has its bound, the scenario's or the default
        self.assertEqual(8, table.BY_NAME['undeploy-deleting'].max_polls)
        for sc in table.SCENARIOS:
            self.assertIn('at most %d driver polls after the action'
                          % sc.max_polls, sc.expectations('fixed'))
        self.assertEqual(bounds.DEFAULT_MAX_POLLS,
                         scenario.Scenario('x', 'x').max_polls)


class EndStateTest(unittest.TestCase):
    """The end-state invariant is part of every fixed column by
    construction; a scenario waives a part of it only by name, with a
    reason, and may keep a claim on purpose."""

    def _judge(self, sc, obs, tree='fixed'):
        """judge.problems_of of a scenario that is not in the table."""
        from unittest import mock
        with mock.patch.object(table, 'BY_NAME', types.MappingProxyType(
                {**table.BY_NAME, sc.name: sc})):
            return judge.problems_of(sc.name, tree, obs)

    def test_every_fixed_column_has_it(self):
        for sc in table.SCENARIOS:
            with self.subTest(sc.name):
                # (a declared field, as everything a scenario holds)
                self.assertLessEqual(set(vars(sc)), {
                    f.name for f in dataclasses.fields(sc)})
                ends = [c for c in sc.fixed if getattr(c, 'end_state', False)]
                self.assertEqual([sc.end_state], ends)
        # a scenario defined without it still gets it
        bare = scenario.Scenario('bare', 'no end-state check', action='undeploy',
                                 fixed=[checks.status('ERROR')])
        left = _obs(usages={NODE: 1}, allocations={NODE: {}})
        self.assertEqual(['left behind: allocation on node-1, which Ironic has '
                          'freed or is freeing; placement usage 1 on node-1, '
                          'expected 0'], self._judge(bare, left))
        self.assertEqual([], self._judge(bare, _obs()))

    def test_listing_it_by_hand_is_refused(self):
        for check in (invariant.clean, invariant.claim_kept):
            with self.assertRaisesRegex(ValueError, 'added to every fixed'):
                scenario.Scenario('x', 'x', fixed=[check])

    def test_stuck_recovery(self):
        # an ERROR server keeping an allocation on a node Ironic freed
        recovered = dict(
            listed_in_build_without_host=False,
            after_instance_build_timeout='ERROR', after_compute_restart='ERROR',
            after_reset_state='ERROR', after_delete='DELETED',
            allocations_after_delete={})
        obs = _obs(scenario='stuck-recovery', recovery=recovered,
                   polls_after_action=3)
        self.assertEqual([], judge.problems_of('stuck-recovery', 'fixed', obs))
        kept = dict(obs, usages={NODE: 1}, allocations={NODE: {}})
        self.assertEqual(['left behind: allocation on node-1, which Ironic has '
                          'freed or is freeing; placement usage 1 on node-1, '
                          'expected 0'],
                         judge.problems_of('stuck-recovery', 'fixed', kept))
        data = {'reproducer': {'scenarios': [dict(kept, status='BUILD', fault=None,
                                                  recovery=dict(
                                                      recovered,
                                                      listed_in_build_without_host=True,
                                                      after_instance_build_timeout='BUILD',
                                                      after_compute_restart='BUILD'))]},
                'fixed': {'scenarios': [kept]}}
        self.assertEqual(1, judge.evaluate(data))
        self.assertTrue(kept['verdict'].startswith('WRONG: left behind: '
                                                   'allocation on node-1'))

    def test_waiver(self):
        # a waived part is named, with its reason; the others are checked
        with self.assertRaisesRegex(ValueError, 'unknown part.*nosuch.*known: '
                                    'host-node'):
            scenario.Scenario('x', 'x', waive={'nosuch': 'why'})
        with self.assertRaisesRegex(ValueError, 'needs its reason: node-kept'):
            scenario.Scenario('x', 'x', waive={'node-kept': ' '})
        sc = table.BY_NAME['reap-deleted-log']
        self.assertEqual(['node-kept'], list(sc.waive))
        with self.assertRaises(TypeError):
            sc.waive['port'] = 'read-only'
        leaked = _node(provision_state='active', instance_id=SERVER,
                       instance_info=True)
        obs = _obs(scenario='reap-deleted-log', status='DELETED', fault=None,
                   nodes=[leaked], hooks_fired=[], definition={'action': None},
                   log=['WARNING [nova.compute.manager] ... marked as DELETED but '
                        'still present on host.'])
        self.assertEqual([], judge.problems_of(sc.name, 'fixed', obs))
        # ... the allocation is still checked
        self.assertEqual(['left behind: allocation on node-1'], judge.problems_of(
            sc.name, 'fixed', dict(obs, allocations={NODE: {}})))
        # what is not checked shows in the list and under the table's row
        text = '\n'.join(report.scenario_list())
        self.assertIn('    not checked (end state): node-kept: '
                      'running_deleted_instance_action = log only logs', text)
        data = {'reproducer': {'scenarios': [dict(obs)]},
                'fixed': {'scenarios': [obs]}}
        judge.evaluate(data)
        self.assertEqual('ok', obs['verdict'])
        rows = [r.strip() for r in report.table(data)]
        self.assertIn('left:  node-1 active; node-1 keeps instance/instance_info',
                      rows)
        self.assertTrue(any(r.startswith('not checked: node-kept: running_deleted')
                            for r in rows), rows)

    def test_claim_kept_is_declared(self):
        sc = scenario.Scenario('kept', 'a claim kept on purpose', claim_kept=True)
        node = _node(provision_state='deploy failed', instance_id=SERVER,
                     instance_info=True)
        kept = _obs(host='ironic-host', node=NODE, usages={NODE: 1},
                    allocations={NODE: {}}, nodes=[node])
        self.assertEqual([], self._judge(sc, kept))
        self.assertIn('claim was not kept', self._judge(sc, _obs())[0])
        plain = scenario.Scenario('plain', 'no claim kept')
        self.assertIn('allocation on node-1', self._judge(plain, kept)[0])


class ErrorPortTest(unittest.TestCase):
    """A failed build deallocates its network: an ERROR server without a
    host has its port unbound; one that keeps its claim keeps it bound."""

    def _error(self, device, **kw):
        return _obs(port_id=PORT, port_device_id=device,
                    definition={'action': 'undeploy', 'then': [], 'port': True},
                    **kw)

    def test_error_without_host(self):
        self.assertEqual([], invariant.leftovers(self._error(None)))
        self.assertEqual(['port still bound to the server in ERROR without a '
                          'host'], invariant.leftovers(self._error(SERVER)))
        # in a scenario's verdict
        obs = self._error(SERVER, scenario='undeploy-deleting-port',
                          log=['WARNING [nova.virt.ironic.driver] Ironic node %s '
                               'is being torn down during the deploy (provision_state '
                               'deleting, target_provision_state available)' % NODE,
                               'Ironic tore down node %s' % NODE])
        self.assertEqual(['left behind: port still bound to the server in ERROR '
                          'without a host'],
                         judge.problems_of('undeploy-deleting-port', 'fixed', obs))
        self.assertEqual([], judge.problems_of('undeploy-deleting-port', 'fixed',
                                               dict(obs, port_device_id=None)))

    def test_claim_kept_keeps_the_binding(self):
        node = _node(provision_state='deploy failed', instance_id=SERVER,
                     instance_info=True, vifs=[PORT])
        kept = dict(host='ironic-host', node=NODE, usages={NODE: 1},
                    allocations={NODE: {}}, nodes=[node])
        self.assertIsNone(invariant.claim_kept(self._error(SERVER, **kept)))
        self.assertIn('port not bound to the server (device_id None)',
                      invariant.claim_kept(self._error(None, **kept)))


class ForeignNodeTest(unittest.TestCase):
    """A node that carries another instance is as that instance's deploy
    left it, and keeps nothing of the server."""

    def _other(self, **kw):
        return _node(provision_state='wait call-back', instance_id=OTHER,
                     target_provision_state='active', **kw)

    def test_as_the_other_deploy_left_it(self):
        self.assertEqual([], invariant.leftovers(_obs(nodes=[self._other()])))
        self.assertEqual([], invariant.leftovers(_obs(nodes=[self._other(
            instance_info=True, image_source='other-image')])))
        for state, target in (('available', None), ('deleting', 'available'),
                              ('cleaning', 'available'),
                              ('active', 'available')):
            with self.subTest(state=state, target=target):
                node = self._other()
                node.update(provision_state=state, target_provision_state=target)
                self.assertEqual(['node-1 (carrying %s) is %s -> %s, not as its '
                                  'deploy left it' % (OTHER, state, target)],
                                 invariant.leftovers(_obs(nodes=[node])))

    def test_keeps_nothing_of_the_server(self):
        ours = self._other(instance_info=True, image_source=IMAGE)
        self.assertEqual(["node-1 (another instance's) keeps the server's image "
                          'in its instance_info'],
                         invariant.leftovers(_obs(nodes=[ours])))
        rebuilt = self._other(instance_info=True, image_source='img2')
        self.assertEqual(1, len(invariant.leftovers(_obs(nodes=[rebuilt],
                                                         rebuild_image='img2'))))
        # no image recorded: no pass
        self.assertEqual(['no image recorded'], invariant.leftovers(
            _obs(nodes=[ours], image=None)))
        # no allocation of the server's on it either
        self.assertEqual(['allocation on node-1, which Ironic has freed or is '
                          'freeing', 'placement usage 1 on node-1, expected 0'],
                         invariant.leftovers(_obs(nodes=[self._other()],
                                                  usages={NODE: 1},
                                                  allocations={NODE: {}})))

    def test_undeploy_reassociated(self):
        torn = self._other()
        torn.update(provision_state='deleting', target_provision_state='available')
        obs = _obs(other_instance=OTHER, nodes=[torn], log=[
            'Ironic node %s was torn down during the deploy and is now '
            'associated with instance %s' % (NODE, OTHER)])
        problems = judge.problems_of('undeploy-reassociated', 'fixed', obs)
        self.assertEqual(['left behind: node-1 (carrying %s) is deleting -> '
                          'available, not as its deploy left it' % OTHER],
                         problems)
        self.assertEqual([], judge.problems_of('undeploy-reassociated', 'fixed',
                                               dict(obs, nodes=[self._other()])))


class TimeBoundTest(unittest.TestCase):
    """Against a real Ironic, the wall time from the action to the end is
    bounded per scenario; the fake's polls are bounded instead."""

    def test_seconds_at_most(self):
        check = bounds.seconds_at_most(30)
        self.assertIsNone(check(_obs(wall_seconds_after_action=30.0)))
        self.assertEqual('30.5 s from the action to the end, at most 30 s',
                         check(_obs(wall_seconds_after_action=30.5)))
        self.assertIn('no wall_seconds_after_action', check(_obs()))
        self.assertTrue(check.real_only)

    def test_every_scenario_has_its_bound(self):
        for sc in table.SCENARIOS:
            self.assertIn('at most %d s from the action to the end (real Ironic)'
                          % sc.max_seconds, sc.expectations('fixed'))
        self.assertEqual(bounds.real_seconds(8),
                         table.BY_NAME['undeploy-deleting'].max_seconds)
        self.assertEqual(64, bounds.real_seconds(16))
        self.assertEqual(bounds.REAL_MIN_SECONDS, bounds.real_seconds(2))
        self.assertEqual(5, scenario.Scenario('x', 'x', max_seconds=5).max_seconds)

    def test_real_only(self):
        obs = _obs(scenario='undeploy-cleared', polls_after_action=3,
                   wall_seconds_after_action=1000.0, log=[CLEARED_LOG])
        # the fake's wall time is not Nova's wait: not judged
        self.assertEqual([], judge.problems_of('undeploy-cleared', 'fixed', obs))
        real = dict(obs, backend=checks.REAL_IRONIC)
        self.assertEqual(['1000.0 s from the action to the end, at most 30 s'],
                         judge.problems_of('undeploy-cleared', 'fixed', real))
        self.assertEqual([], judge.problems_of('undeploy-cleared', 'fixed', dict(
            real, wall_seconds_after_action=12.0)))


class BugFirstTest(unittest.TestCase):
    """The reproducer's verdict opens with the scenario's bug."""

    def test_declared_bug_checks_come_first(self):
        sc = table.BY_NAME['api-outage-outlasts-retries']
        self.assertIs(sc.end_state, sc.fixed[0])
        with self.assertRaisesRegex(ValueError, 'log check is not the bug'):
            scenario.Scenario('x', 'x', bug=[checks.log_has('x')])
        # a bug check not listed in fixed comes first too
        leak = scenario.Scenario('x', 'x', fixed=[checks.status('DELETED')],
                                 bug=[checks.first_node_leaked])
        self.assertEqual((checks.first_node_leaked, leak.fixed[1]), leak.fixed[:2])

    def test_outage_outlasts_retries(self):
        # the released tree: a fault in other words, and the node left in
        # wait call-back for the deleted server: the leak is the bug
        dropped = {'status': 'ERROR', 'host': None, 'node': None,
                   'allocations': [], 'first_node_state': 'wait call-back',
                   'first_node_instance': SERVER,
                   'fault': 'Build of instance %s aborted: Unable to establish '
                            'connection to http://x' % SERVER}
        leaked = _node(provision_state='wait call-back', instance_id=SERVER,
                       instance_info=True)
        obs = _obs(scenario='api-outage-outlasts-retries', status='DELETED',
                   fault=None, build_results=['failed'], at_api_back=dropped,
                   faults_created=[dropped['fault']], nodes=[leaked],
                   hooks_fired=['api-down@2', 'api-up@settled'],
                   definition={'action': 'api-down', 'then': []})
        self.assertEqual([], judge.problems_of(obs['scenario'], 'reproducer', obs))
        reasons = judge.bug_reasons(obs)
        self.assertEqual('left behind: node-1 wait call-back; node-1 keeps '
                         'instance/instance_info', reasons[0])
        self.assertTrue(reasons[1].startswith('when the API came back'), reasons)
        data = {'reproducer': {'scenarios': [obs]}, 'fixed': {'scenarios': []}}
        judge.evaluate(data, released='nova 34.0.0')
        self.assertTrue(obs['verdict'].startswith(
            'bug reproduced: left behind: node-1 wait call-back'), obs['verdict'])


class OutageUserDeleteTest(unittest.TestCase):
    """api-outage-user-delete: a delete during the outage ends the deploy
    wait as a delete, not as an abort for the unreachable API."""

    KEPT = {'status': 'ERROR', 'fault': texts.API_UNREACHABLE,
            'host': 'ironic-host', 'node': NODE, 'allocations': [NODE],
            'first_node_state': 'wait call-back',
            'first_node_instance': SERVER}
    DELETING = ("Build of instance %s aborted: Conflict updating instance "
                "%s. Expected: {'task_state': ['spawning', "
                "'rebuild_spawning']}. Actual: {'task_state': 'deleting', "
                "'vm_state': 'building'}" % (SERVER, SERVER))

    def _fixed(self, **kw):
        obs = _obs(scenario='api-outage-user-delete', status='DELETED',
                   fault=None, build_results=['failed_not_cleaned',
                                              'terminate-exception',
                                              'terminated'],
                   at_api_back=self.KEPT,
                   faults_created=[self.DELETING, texts.API_UNREACHABLE],
                   hooks_fired=['api-down-delete@2',
                                'user-delete@first-refused',
                                'api-up@settled'],
                   definition={'action': 'api-down-delete', 'then': []})
        obs.update(kw)
        return obs

    def test_definition(self):
        sc = table.BY_NAME['api-outage-user-delete']
        self.assertEqual(('api-down-delete', 'outage-delete', 2),
                         (sc.action, sc.kind, sc.api_max_retries))
        self.assertIs(sc.end_state, sc.fixed[0])
        self.assertIsNone(sc.real_unplayable)
        self.assertIn(sc.name, table.REAL_CI)

    def test_fixed(self):
        self.assertEqual([], judge.problems_of('api-outage-user-delete', 'fixed',
                                               self._fixed()))

    def test_deploy_wait_that_gave_up_is_wrong(self):
        # the same end, but the deploy wait gave up on the API before the
        # delete was seen: the build's abort says so
        gave_up = self._fixed(
            faults_created=[texts.API_UNREACHABLE_ABORTED.format(
                server_id=SERVER), texts.API_UNREACHABLE],
            log=['ERROR [nova.virt.ironic.driver] Could not reach the Bare '
                 'Metal API while waiting for the deploy of baremetal node '
                 '%s; the build is not rescheduled.' % NODE])
        problems = judge.problems_of('api-outage-user-delete', 'fixed', gave_up)
        self.assertEqual(2, len(problems), problems)
        self.assertIn('Conflict updating instance', problems[0])
        self.assertIn('compute log has', problems[1])
        # the log line alone is a detail: not the outcome
        self.assertEqual(1, len(judge.problems_of('api-outage-user-delete', 'fixed',
                                                  gave_up, outcome_only=True)))

    def test_reproducer(self):
        dropped = dict(self.KEPT, host=None, node=None, allocations=[],
                       fault='HttpException')
        leaked = _node(provision_state='wait call-back', instance_id=SERVER,
                       instance_info=True)
        obs = self._fixed(build_results=['failed', 'terminate-exception'],
                          at_api_back=dropped, nodes=[leaked],
                          faults_created=['Build of instance %s aborted: '
                                          'HttpException: 503' % SERVER,
                                          'HttpException'])
        self.assertEqual([], judge.problems_of(obs['scenario'], 'reproducer', obs))
        self.assertEqual('left behind: node-1 wait call-back; node-1 keeps '
                         'instance/instance_info', judge.bug_reasons(obs)[0])


class UnplayableTest(unittest.TestCase):
    """A scenario that declares it cannot be played on the reproducer tree
    says why; its step that never came there is no error, and it is
    ``unexpected`` when it plays there after all."""

    NEVER = dict(scenario='user-delete-during-teardown-wait', status='BUILD',
                 fault=None, hooks_fired=['undeploy@2'],
                 definition={'action': 'undeploy', 'then': [[1, 'delete', 'teardown']]})

    def test_declaration(self):
        sc = table.BY_NAME['user-delete-during-teardown-wait']
        self.assertTrue(sc.reproducer_unplayable)
        self.assertEqual(['not playable: ' + sc.reproducer_unplayable],
                         sc.expectations('reproducer'))
        with self.assertRaisesRegex(ValueError, 'says why, and has no '
                                    'reproducer column'):
            scenario.Scenario('x', 'x', reproducer=[checks.status('BUILD')],
                              reproducer_unplayable='why')
        with self.assertRaisesRegex(ValueError, 'says why'):
            scenario.Scenario('x', 'x', reproducer_unplayable='')

    def _evaluate(self, reproducer):
        """The reproducer's verdict, and the ci step's Outcome of a run with
        it and another scenario that shows the bug, both right on the fixed
        tree."""
        judge.evaluate({'reproducer': {'scenarios': [reproducer]},
                        'fixed': {'scenarios': []}}, released='nova 34.0.0')
        asked = [reproducer['scenario'], 'undeploy-deleting']
        per_mode = {
            'fixed': {'scenarios': [{'scenario': n, 'verdict': 'ok'} for n in asked]},
            'reproducer': {'scenarios': [reproducer, {
                'scenario': 'undeploy-deleting', 'verdict': 'bug reproduced: x'}]}}
        return reproducer['verdict'], cisteps._scenario_outcome('main job',
                                                                per_mode, asked)

    def test_not_playable(self):
        verdict, outcome = self._evaluate(_obs(**self.NEVER))
        sc = table.BY_NAME['user-delete-during-teardown-wait']
        self.assertEqual('not playable on nova 34.0.0: ' + sc.reproducer_unplayable,
                         verdict)
        self.assertEqual(0, outcome.failed, outcome)
        self.assertIn('not playable on the reproducer tree (declared): '
                      'user-delete-during-teardown-wait', outcome.note)

    def test_plays_after_all(self):
        played = _obs(**dict(self.NEVER, status='DELETED',
                             hooks_fired=['undeploy@2', 'delete@1']))
        verdict, outcome = self._evaluate(played)
        self.assertTrue(verdict.startswith('unexpected: declared not playable '
                                           'on nova 34.0.0'), verdict)
        self.assertEqual(1, outcome.failed, outcome)

    def test_other_errors_are_errors(self):
        # a player error is no declared case: counted
        crashed = _obs(**dict(self.NEVER, error='Traceback\nKeyError: x\n'))
        verdict, outcome = self._evaluate(crashed)
        self.assertEqual('error: player error: KeyError: x', verdict)
        self.assertEqual(1, outcome.failed, outcome)
        # ... and a step that never came on a scenario without the
        # declaration
        never = _obs(scenario='user-delete-at-teardown-poll', status='BUILD',
                     fault=None, hooks_fired=['undeploy@2'],
                     definition={'action': 'undeploy', 'then': [[3, 'delete']]})
        verdict, outcome = self._evaluate(never)
        self.assertTrue(verdict.startswith('error: the scenario did not happen'))
        self.assertEqual(1, outcome.failed, outcome)


class MissingDataTest(unittest.TestCase):
    """A check never passes on data it does not have."""

    #: check -> a field it reads, and an observation on which it passes
    CASES = [
        (checks.status('ERROR'), 'status', _obs()),
        (checks.status_in('ERROR'), 'status', _obs()),
        (checks.task_state(None), 'task_state', _obs()),
        (checks.fault_has('torn down'), 'fault', _obs()),
        (checks.lost_fault(), 'lost_fault_fields', _obs()),
        (checks.lost_fault(), 'fault', _obs()),
        (checks.no_not_found_fault, 'faults_created', _obs()),
        (checks.no_foreign_uuid, 'server_id', _obs()),
        (checks.no_foreign_uuid, 'nodes', _obs()),
        (checks.no_foreign_uuid, 'fault', _obs()),
        (checks.no_foreign_uuid, 'faults_created', _obs()),
        (checks.log_has('torn'), 'log', _obs(log=['torn'])),
        (checks.log_lacks('Node None'), 'log', _obs()),
        (checks.fault_created('torn'), 'faults_created',
         _obs(faults_created=['torn'])),
        (checks.only_reads, 'writes_after_action', _obs()),
        (checks.never_error, 'error_saves', _obs(fault=None)),
        (checks.never_error, 'faults_created', _obs(fault=None)),
        (checks.no_other_deploy, 'nodes', _obs()),
        (checks.no_other_deploy, 'first_node', _obs()),
        (checks.node_owned_by_other, 'other_instance', _obs(
            other_instance=OTHER, nodes=[_node(instance_id=OTHER)])),
        (checks.node_owned_by_other, 'nodes', _obs(
            other_instance=OTHER, nodes=[_node(instance_id=OTHER)])),
        (checks.all_steps_fired, 'definition', _obs()),
        (checks.all_steps_fired, 'hooks_fired', _obs(
            definition={'action': None, 'then': []})),
        (checks.teardown_refused, 'hooks_fired',
         _obs(hooks_fired=['refuse-teardown@3'])),
        (checks.first_node_leaked, 'server_id',
         _obs(nodes=[_node(instance_id=SERVER)])),
        (checks.on_other_node, 'first_node', _obs(node=OTHER_NODE)),
        (checks.rebuilt_with_new_image, 'rebuild_image',
         _obs(rebuild_image='img', nodes=[_node(image_source='img')])),
        (checks.rescheduled(False), 'build_results', _obs()),
        (bounds.one_call_per_poll, 'calls_per_poll', _obs(calls_per_poll=1.0)),
        (checks.recovery(after_delete='DELETED'), 'recovery',
         _obs(recovery={'after_delete': 'DELETED'})),
        (bounds.polls_at_most(6), 'polls_after_action', _obs()),
        (bounds.polls_at_most(6), 'held_polls_after_action', _obs()),
        (invariant.clean, 'usages', _obs()),
        (invariant.clean, 'allocations', _obs()),
        (invariant.clean, 'nodes', _obs()),
        (invariant.clean, 'status', _obs()),
        (invariant.clean, 'host', _obs()),
        (invariant.clean, 'port_id', _active()),
        (invariant.clean, 'port_device_id', _active()),
    ]

    def test_every_check_fails_without_its_field(self):
        for check, field, obs in self.CASES:
            name = getattr(check, 'text', check.__name__)
            with self.subTest(check=name, field=field):
                self._fails_without(check, field, obs, name)

    def _fails_without(self, check, field, obs, name):
        self.assertIsNone(check(obs), (name, field))
        gone = dict(obs)
        gone.pop(field)
        problem = check(gone)
        self.assertIsNotNone(problem, (name, field))
        if field in checks.NULLABLE or field == 'lost_fault_fields':
            return
        self.assertIn('no %s' % field, problem, (name, field))
        # None is no value for most fields either
        self.assertIsNotNone(check(dict(obs, **{field: None})),
                             (name, field))

    def test_nothing_recorded_is_no_match(self):
        # no image recorded on either side is no rebuild
        self.assertIn('no rebuild_image', checks.rebuilt_with_new_image(_obs()))
        # no first node recorded, a node in no place: not "another node"
        self.assertIsNotNone(checks.on_other_node(_obs(node=NODE,
                                                       first_node=None)))
        # no node recorded cannot be the other instance's
        self.assertIsNotNone(checks.node_owned_by_other(_obs(nodes=[])))
        self.assertIsNotNone(checks.first_node_leaked(
            _obs(nodes=[], server_id=None)))

    def test_clean_with_nothing_recorded(self):
        self.assertIn('no status', invariant.clean({}))
        self.assertEqual(['no status, server_id, usages, allocations, nodes, '
                          'definition recorded'], invariant.leftovers({}))

    def test_judge_without_settled_or_error(self):
        obs = _obs(scenario='undeploy-cleared', log=[
            'WARNING [nova.virt.ironic.driver] Ironic node %s was torn down '
            'during the deploy: it is no longer associated with the instance '
            '(provision_state available)' % NODE])
        self.assertEqual([], judge.problems_of('undeploy-cleared', 'fixed', obs))
        for field in ('settled', 'error'):
            gone = dict(obs)
            gone.pop(field)
            self.assertEqual(['the record is incomplete: no %s recorded'
                              % field],
                             judge.problems_of('undeploy-cleared', 'fixed', gone))
        self.assertEqual(['the record is incomplete: no settled recorded'],
                         judge.problems_of('normal-build', 'fixed', {'error': None}))


class JudgeTest(unittest.TestCase):

    def test_player_error_and_not_settled(self):
        self.assertEqual(['player error: KeyError: x'], judge.problems_of(
            'normal-build', 'fixed', {'error': 'Traceback\nKeyError: x\n'}))
        self.assertEqual(['did not settle within the time limit'],
                         judge.problems_of('normal-build', 'fixed',
                                           {'error': None, 'settled': False}))

    def test_a_step_that_never_came_is_no_verdict(self):
        obs = _obs(scenario='user-delete-during-teardown-wait', status='BUILD',
                   fault=None, hooks_fired=['undeploy@2'], definition={
                       'action': 'undeploy', 'then': [[1, 'delete',
                                                       'teardown']]})
        why = ("the scenario did not happen as defined: only 1 of 2 steps "
               "happened: ['undeploy@2']")
        for tree in scenario.TREES:
            self.assertEqual([why], judge.problems_of(obs['scenario'], tree, obs))

    def test_real_ironic_skips_what_it_cannot_check(self):
        obs = _obs(scenario='undeploy-cleared', polls_after_action=50,
                   wall_seconds_after_action=5.0, log=[CLEARED_LOG])
        self.assertEqual(['50 driver polls after the action, at most 6'],
                         judge.problems_of('undeploy-cleared', 'fixed', obs))
        self.assertEqual([], judge.unchecked('undeploy-cleared', obs))
        real = dict(obs, backend=checks.REAL_IRONIC)
        self.assertEqual([], judge.problems_of('undeploy-cleared', 'fixed', real))
        self.assertEqual(1, len(judge.unchecked('undeploy-cleared', real)))
        self.assertIn(invariant.NOOP_VIFS, judge.unchecked('undeploy-reschedule',
                                                           real))

    def test_unknown(self):
        with self.assertRaises(HarnessError):
            judge.problems_of('nosuch', 'fixed', {})
        with self.assertRaises(KeyError):
            judge.problems_of('normal-build', 'elsewhere', {})

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
        self.assertTrue(judge.problems_of(obs['scenario'], 'fixed', obs))
        self.assertEqual([], judge.bug_reasons(obs))
        obs['log'] = []
        self.assertEqual([], judge.problems_of(obs['scenario'], 'fixed', obs))

    def test_bug_verdict_of_a_log_action(self):
        # running_deleted_instance_action = log: the released tree leaves
        # the node as the fixed one does, but never logs it
        obs = _obs(scenario='reap-deleted-log', status='DELETED', log=[],
                   fault=None, hooks_fired=[], definition={'action': None},
                   nodes=[_node(instance_id=SERVER, provision_state='active')])
        self.assertEqual([], judge.problems_of(obs['scenario'], 'reproducer',
                                               obs))
        self.assertIn('lacks', judge.bug_reasons(obs)[0])

    def test_bug_verdict_names_the_symptom(self):
        # 34.0.0 tells the owner that the server could not be found: that
        # is the bug, not that the tree lacks the fix's exception
        lie = 'Build of instance %s aborted: Instance %s could not be found.' % (
            SERVER, SERVER)
        obs = _obs(scenario='undeploy-deleting-port', fault=lie,
                   faults_created=[lie], port_id=PORT, port_device_id=None,
                   definition={'action': 'undeploy', 'then': [], 'port': True})
        del obs['lost_fault'], obs['lost_fault_fields']
        self.assertEqual([], judge.problems_of(obs['scenario'], 'reproducer', obs))
        reason = judge.bug_reasons(obs)[0]
        self.assertIn('could not be found', reason)
        self.assertNotIn('IronicNodeLost', reason)


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
        self.assertEqual(0, judge.evaluate(data, released='nova 34.0.0'))
        self.assertEqual('bug reproduced: status BUILD, expected ERROR', stuck['verdict'])
        self.assertEqual('ok', right['verdict'])
        # the reproducer did something else than its column says
        other = _obs(scenario='undeploy-cleared', status='ACTIVE')
        wrong = _obs(scenario='undeploy-cleared', status='BUILD', fault=None)
        data = self._data(other, wrong)
        self.assertEqual(1, judge.evaluate(data))
        self.assertTrue(other['verdict'].startswith('unexpected: status ACTIVE'))
        self.assertTrue(wrong['verdict'].startswith('WRONG: status BUILD'))

    def test_as_released(self):
        ok = _obs(scenario='normal-build', status='ACTIVE', node=NODE, fault=None,
                  host='ironic-host', calls_per_poll=1.0, usages={NODE: 1},
                  allocations={NODE: {}}, hooks_fired=[], polls_after_action=0,
                  definition={'action': None, 'then': [], 'port': False},
                  nodes=[_node(provision_state='active', instance_id=SERVER,
                               instance_info=True)])
        data = self._data(ok, dict(ok))
        self.assertEqual(0, judge.evaluate(data, released='nova 34.0.0'))
        self.assertEqual("as on nova 34.0.0: the fixed tree's checks hold too",
                         data['reproducer']['scenarios'][0]['verdict'])
        # ... but not with its allocation on another node
        elsewhere = dict(ok, allocations={NODE: {}, OTHER_NODE: {}})
        data = self._data(dict(elsewhere), dict(elsewhere))
        self.assertEqual(1, judge.evaluate(data, released='nova 34.0.0'))
        self.assertIn('allocation on ' + OTHER_NODE,
                      data['fixed']['scenarios'][0]['verdict'])

    def test_no_verdict(self):
        # a step that never came: an error on either tree, not "bug
        # reproduced" on the reproducer tree; the fixed tree's counts as
        # wrong
        never = _obs(scenario='user-delete-at-teardown-poll',
                     status='BUILD', fault=None, hooks_fired=['undeploy@2'],
                     definition={'action': 'undeploy',
                                 'then': [[3, 'delete']]})
        data = self._data(never, dict(never))
        self.assertEqual(1, judge.evaluate(data))
        for label in ('reproducer', 'fixed'):
            self.assertEqual(
                "error: the scenario did not happen as defined: only 1 of 2 "
                "steps happened: ['undeploy@2']",
                data[label]['scenarios'][0]['verdict'])
        first, errors = judge.mode_summary('threading', data, 1)
        self.assertEqual('threading mode: fixed tree 0 of 1 scenarios right', first)
        self.assertIn('1 scenario(s) with no verdict (user-delete-at-'
                      'teardown-poll)', errors)

    def test_verdict_kinds(self):
        # each text evaluate writes has one kind, read back by its start
        for verdict, expected in (
                ('ok', judge.OK), ('okay', None), ('WRONG: x', judge.WRONG),
                ('error: x', judge.ERROR), ('unexpected: x', judge.UNEXPECTED),
                ('not playable on nova 34.0.0: x', judge.NOT_PLAYABLE),
                ('bug reproduced: x', judge.BUG_REPRODUCED),
                ("as on nova 34.0.0: the fixed tree's checks hold too",
                 judge.AS_RELEASED), ('', None), (None, None)):
            self.assertEqual(expected, judge.verdict_kind(verdict), verdict)
        self.assertEqual('WRONG: a; b', judge.fixed_verdict(['a', 'b']))
        self.assertEqual('ok', judge.fixed_verdict([]))

    def test_real_ironic_note(self):
        obs = _obs(scenario='undeploy-deleting-port', backend=checks.REAL_IRONIC,
                   port_id=PORT, port_device_id=None,
                   definition={'action': 'undeploy', 'then': [], 'port': True})
        data = self._data(dict(obs), dict(obs))
        judge.evaluate(data)
        note = report.unchecked_note(data)
        self.assertEqual('not checked against a real Ironic:', note[0])
        self.assertTrue(any('noop network interface' in n for n in note))
        self.assertTrue(any('polls' in n for n in note))
        self.assertEqual([], report.unchecked_note(self._data(_obs(), _obs())))

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
        judge.evaluate(data)
        rows = report.table(data)
        self.assertIn('leftovers', rows[0])
        row = next(r for r in rows if r.startswith('undeploy-cleared'))
        self.assertIn(' 1 (below) ', row)
        fixed_row = next(r for r in rows if r.lstrip().startswith('fixed'))
        self.assertRegex(fixed_row, r' none +ok$')
        text = [r.strip() for r in rows if r.startswith(' ' * report.TEXT_INDENT)]
        self.assertEqual('left:  node-1 keeps instance/VIFs', text[0])
        text = text[1:]
        self.assertTrue(text[0].startswith('fault: Exceeded'))
        # wrapped, not cut: every character is there
        joined = ''.join(t.replace('fault: ', '', 1) for t in text[:4])
        self.assertIn('END', joined)
        self.assertEqual(fault.replace(' ', ''), joined.replace(' ', '')[:len(
            fault.replace(' ', ''))])
        self.assertTrue(all(len(r) <= report.TEXT_INDENT + report.TEXT_WIDTH
                            for r in rows[2:] if r.startswith(' ' * 10)))

    def test_scenario_list(self):
        text = '\n'.join(report.scenario_list())
        for sc in table.SCENARIOS:
            self.assertIn(f'{sc.name}: {sc.title}', text)
        self.assertIn('real Ironic, driver level (ironic driver-tests): '
                      'novaseries/nova_side/driver_tests/test_e2e.py '
                      'test_undeploy_in_wait_callback', text)


class ParseTest(unittest.TestCase):

    def test_parse_unittest(self):
        self.assertEqual((5, 0, 0), outcomes.parse_unittest('Ran 5 tests in 1.0s\n\nOK\n'))
        self.assertEqual((21, 3, 2), outcomes.parse_unittest(
            'Ran 21 tests in 90s\n\nFAILED (failures=1, errors=2, skipped=2)\n'))
        self.assertEqual((4, 0, 1), outcomes.parse_unittest(
            'Ran 4 tests in 1s\n\nOK (skipped=1)\n'))
        self.assertEqual((1, 1, 0), outcomes.parse_unittest(
            'Ran 1 test in 1s\n\nFAILED (unexpected successes=1)\n'))
        # no "Ran" line: the run crashed
        self.assertEqual((0, 1, 0), outcomes.parse_unittest('ImportError: no nova\n'))
        # an expected failure among the project's own tests is a failure
        self.assertEqual((2, 1, 0), outcomes.parse_unittest(
            'Ran 2 tests in 1s\n\nOK (expected failures=1)\n'))
        # a nested run's summary, then the run died before its own
        self.assertEqual((0, 1, 0), outcomes.parse_unittest(
            'Ran 1 test in 0s\n\nOK\ntest_b ... FAIL\ntest_c ... '))

    def test_bench_spec(self):
        self.assertEqual('10:5:3', run_command.bench_spec('10:5:3'))
        self.assertEqual('scale', run_command.bench_spec('scale'))
        # normalised: sorted options, defaults dropped, booleans lower case
        self.assertEqual(
            '5:1:1:max_attempts=5,shuffle_best_same_weighed_hosts=true',
            run_command.bench_spec('5:1:1:shuffle_best_same_weighed_hosts=True,'
                                   'max_attempts=5,host_subset_size=1'))
        for bad in ('0:1:0', '3:1:4', '1:2', 'a:b:c', '10:5:3:1', ' 1:1:1',
                    '10:5:3:max_attempts=0', '10:5:3:max_attempts=x',
                    '10:5:3:shuffle_best_same_weighed_hosts=1',
                    '10:5:3:max_attempts=5,max_attempts=4',
                    '10:5:3:cpu_allocation_ratio=2', 'scales'):
            with self.assertRaises(argparse.ArgumentTypeError, msg=bad):
                run_command.bench_spec(bad)
        with self.assertRaisesRegex(argparse.ArgumentTypeError,
                                    'unknown option.*known: host_subset_size'):
            run_command.bench_spec('1:0:0:foo=1')
        # --bench-runs
        self.assertEqual(3, common.positive('3'))
        for bad in ('0', '-1', 'x'):
            with self.assertRaises(argparse.ArgumentTypeError, msg=bad):
                common.positive(bad)


class CheckTreeTest(helpers.ProjectTestCase):
    """``run --tree``: a scenario the player could not play (no status,
    no verdict) is reported wrong, not a crash of the report."""

    def _tree(self):
        tree = self.tmp / "tree"
        fixtures = tree / "nova" / "tests" / "fixtures"
        fixtures.mkdir(parents=True, exist_ok=True)
        (fixtures / "ironic.py").write_text("def on_poll(): pass\n")
        base = tree / "nova" / "tests" / "functional" / "ironic"
        base.mkdir(parents=True, exist_ok=True)
        (base / "base.py").write_text("")
        return tree

    def test_observation_without_status(self):
        tree = self._tree()
        obs = {'scenario': 'undeploy-deleting',
               'error': 'AssertionError: not polled'}
        out = self.tmp / "tree.json"
        modes = {'threading': modes_mod.Mode('threading', description='native threads')}
        with mock.patch.object(job.venvs, 'ensure_venv',
                               return_value=(self.tmp / 'venv', None)), \
                mock.patch.object(job.modes_mod, 'load_modes', return_value=modes), \
                mock.patch.object(job.targets_mod, 'mode_target'), \
                mock.patch.object(job.trees_mod, 'run_trees', return_value={
                    'fixed': {'scenarios': [obs]}}), \
                mock.patch.object(job, 'put') as put:
            rc = job.play_tree(self.ctx, tree, 'fake', json_out=out,
                               modes=('threading',))
        self.assertEqual(1, rc)
        lines = '\n'.join(c.args[0] for c in put.call_args_list)
        # judged as the main job judges it (judge.evaluate)
        self.assertRegex(lines, r'undeploy-deleting +- +error: player error')
        self.assertEqual('error: player error: AssertionError: not polled',
                         obs['verdict'])
        self.assertIn('0 of 1 scenarios right', lines)

    def test_tree_without_fixtures_names_the_patch_to_apply(self):
        # the marker's patch of the target's series, whatever its number
        (self.patches / "0001-fix.patch").write_text("+def on_pol():\n")
        (self.patches / "0002-poll.patch").write_text("+    def on_poll(self):\n")
        (self.patches / "series").write_text("0001-fix.patch\n0002-poll.patch\n")
        tree = self._tree()
        (tree / "nova" / "tests" / "fixtures" / "ironic.py").write_text("")
        with self.assertRaisesRegex(HarnessError, r"on_poll.* up to 0002-poll\.patch$"):
            job.play_tree(self.ctx, tree, 'fake')

    def _lock_events(self):
        events = []

        @contextlib.contextmanager
        def file_lock(path, what):
            events.append(('lock', path))
            try:
                yield
            finally:
                events.append('released')
        return events, mock.patch.object(job, 'file_lock', file_lock)

    def test_one_main_job_at_a_time(self):
        # run (fake Ironic) and run --tree write their players' results
        # to build/results/run: each holds its lock meanwhile; a real
        # Ironic's run writes its own folder and takes none (ci runs it
        # beside the fake one)
        events, locked = self._lock_events()
        with locked, mock.patch.object(job.trees_mod, 'prepare_trees', side_effect=(
                lambda *a: events.append('trees') or {})), \
                mock.patch.object(job.venvs, 'ensure_venv', side_effect=HarnessError('stop')):
            with self.assertRaisesRegex(HarnessError, 'stop'):
                job.play(self.ctx, 'fake', ('undeploy-deleting',))
        self.assertEqual([('lock', self.ctx.build / 'run.lock'), 'trees', 'released'], events)
        events.clear()
        with locked, mock.patch.object(job.trees_mod, 'prepare_trees', side_effect=(
                lambda *a: events.append('trees') or {})), \
                mock.patch.object(job.venvs, 'ensure_venv', side_effect=HarnessError('stop')):
            with self.assertRaisesRegex(HarnessError, 'stop'):
                job.play(self.ctx, 'fake', ('undeploy-deleting',), ironic='real')
        self.assertEqual(['trees'], events)
        events.clear()
        with locked, mock.patch.object(job, '_play_tree', side_effect=(
                lambda *a: events.append('played') or 0)):
            self.assertEqual(0, job.play_tree(self.ctx, self._tree(), 'fake'))
        self.assertEqual([('lock', self.ctx.build / 'run.lock'), 'played', 'released'], events)


if __name__ == '__main__':
    unittest.main()
