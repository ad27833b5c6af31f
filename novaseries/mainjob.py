"""``run``: the main job -- the bug and the fix side by side on real Nova.

Prepares two trees of the master target from its series:

* ``reproducer``: the series up to and including the reproducer commit
  (the first patch that adds a test under
  ``nova/tests/functional/regressions/``): Nova as released, plus the test
  fixtures the series adds;
* ``fixed``: what a packager ships: target ``master-all``, the whole
  series with the separate rebuild change (``patches/rebuild/master``,
  bug KKKKKKK) stacked on it;

then runs every scenario of ``scenarios/nova_scenarios.py`` in each tree, in
Nova's functional-test environment (real API, conductor, scheduler,
placement, compute with the real ``ironic.IronicDriver``) against the fake
Ironic (``nova.tests.fixtures.IronicFixture``), judges each observation
against what the tree is expected to do (:data:`EXPECTED`), prints a table
and writes everything as JSON.

Exit status: 0 when the fixed tree gets every scenario right, 1 otherwise.
The reproducer tree is expected to show the bug; its verdicts are reported,
not enforced.
"""

import json
import pathlib
import re
import subprocess
import threading
import time

from novaseries import runner, targets as targets_mod
from novaseries import tree as tree_mod
from novaseries.util import HarnessError, say

INNER = pathlib.Path(__file__).with_name("scenarios") / "nova_scenarios.py"
TREES = ("reproducer", "fixed")
#: ``[ironic] api_retry_interval`` default, seconds: one driver poll.
POLL_INTERVAL = 2

# -- expectations -----------------------------------------------------------
# Each check takes the observation dict and returns a problem string or None.


def status(expected):
    def check(obs):
        if obs.get('status') != expected:
            return 'status %s, expected %s' % (obs.get('status'), expected)
    check.text = expected
    return check


def status_in(*expected):
    def check(obs):
        if obs.get('status') not in expected:
            return 'status %s, expected one of %s' % (obs.get('status'),
                                                      expected)
    check.text = ' or '.join(expected)
    return check


def fault_has(*parts):
    def check(obs):
        fault = obs.get('fault') or ''
        missing = [p for p in parts if p.format(**obs) not in fault]
        if missing:
            return 'fault %r lacks %r' % (fault[:90], missing)
    check.text = 'fault names ' + ', '.join(parts)
    return check


def task_state(expected):
    def check(obs):
        if obs.get('task_state') != expected:
            return 'task_state %s, expected %s' % (obs.get('task_state'),
                                                   expected)
    check.text = 'task_state %s' % expected
    return check


#: What the fault says before IronicNodeLost's message when the build was
#: aborted (BuildAbortException around it).
ABORTED = 'Build of instance {server_id} aborted: '


def lost_fault(aborted=False):
    """The fault is exactly the generic message of the tree's IronicNodeLost
    (``lost_fault`` in the observation: its ``msg_fmt`` with this node and
    this server), which may only take the node and the instance; with
    ``aborted``, behind ``Build of instance <uuid> aborted:``."""
    def check(obs):
        generic = obs.get('lost_fault')
        if generic is None:
            return 'the tree has no IronicNodeLost'
        extra = set(obs.get('lost_fault_fields') or ()) - {'node',
                                                           'instance'}
        if extra:
            return 'IronicNodeLost message takes %s' % sorted(extra)
        want = (ABORTED.format(**obs) if aborted else '') + generic
        if obs.get('fault') != want:
            return 'fault %r, expected %r' % (obs.get('fault'), want)
    check.text = 'fault is the generic IronicNodeLost message' + (
        ' (build aborted)' if aborted else '')
    return check


_UUID = re.compile(r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-'
                   r'[0-9a-f]{12}', re.I)


def no_foreign_uuid(obs):
    """No fault of the server (shown or created on the way) names an
    instance or object other than the server itself and the nodes."""
    mine = {obs.get('server_id')} | {n['id'] for n in obs.get('nodes', [])}
    faults = [obs.get('fault') or ''] + list(obs.get('faults_created') or [])
    other = obs.get('other_instance')
    for fault in faults:
        foreign = [u for u in _UUID.findall(fault) if u.lower() not in mine]
        if foreign or (other and other in fault):
            return 'fault names another uuid %s: %r' % (
                foreign or [other], fault[:90])


no_foreign_uuid.text = 'no other instance in the fault'


def _log_check(parts, present):
    """A ``detail`` check: the compute log (INFO and up of the driver and
    the compute manager) has (``present``) or lacks each of ``parts``,
    formatted with the observation."""
    def check(obs):
        log = '\n'.join(obs.get('log') or [])
        wrong = [p for p in (part.format(**obs) for part in parts)
                 if (p in log) != present]
        if wrong:
            return 'compute log %s %r' % ('lacks' if present else 'has',
                                          wrong)
    check.text = ('log says ' if present else 'log does not say ') + \
        ', '.join(parts)
    check.detail = True
    return check


def log_has(*parts):
    return _log_check(parts, True)


def log_lacks(*parts):
    return _log_check(parts, False)


def fault_created(text):
    """A fault containing ``text`` was created for the server (even if the
    server is gone now)."""
    def check(obs):
        if not any(text in f for f in obs.get('faults_created') or []):
            return 'no fault with %r created (%r)' % (
                text, obs.get('faults_created'))
    check.text = 'fault %r created' % text
    return check


def only_reads(obs):
    """Nova sent the first node nothing but reads after the action."""
    if obs.get('writes_after_action'):
        return 'Nova sent %s to the node after the action' % (
            obs['writes_after_action'],)


only_reads.text = 'only reads of the node after the action'


def never_error(obs):
    """The server never went to ERROR and got no fault, not even on its
    way out (what a user delete must give)."""
    problems = []
    if obs.get('error_saves'):
        problems.append('put in ERROR %s times' % obs['error_saves'])
    if obs.get('faults_created'):
        problems.append('faults created: %r' % [
            f[:60] for f in obs['faults_created']])
    return '; '.join(problems) or None


never_error.text = 'never ERROR, no fault'


def no_other_deploy(obs):
    """No deploy was requested on any node but the first."""
    moved = [n['name'] for n in obs.get('nodes', [])
             if n['id'] != obs.get('first_node') and not n.get('deleted') and
             n.get('history') != [['available', None]]]
    if moved:
        return 'deployed on another node too: %s' % moved


no_other_deploy.text = 'no deploy on another node'


def node_owned_by_other(obs):
    """The first node is the other instance's (Nova left it alone)."""
    node = next((n for n in obs.get('nodes', [])
                 if n['id'] == obs.get('first_node')), {})
    if node.get('instance_id') != obs.get('other_instance'):
        return 'node %s belongs to %s, expected the other instance' % (
            node.get('name'), node.get('instance_id'))


node_owned_by_other.text = "node is the other instance's"


def all_steps_fired(obs):
    """Every step of the scenario happened (a step whose poll never came
    did not: then the scenario did not test its timing)."""
    sc = obs.get('definition') or {}
    want = (1 if sc.get('action') else 0) + len(sc.get('then') or []) + \
        (1 if sc.get('delete_on_reschedule') else 0)
    fired = obs.get('hooks_fired') or []
    if len(fired) < want:
        return 'only %d of %d steps happened: %s' % (len(fired), want, fired)


all_steps_fired.text = 'every step happened'


def on_other_node(obs):
    if obs.get('node') in (None, obs.get('first_node')):
        return 'not rescheduled to another node (node %s)' % obs.get('node')


on_other_node.text = 'on the alternate node'


def rebuilt_with_new_image(obs):
    """The first node carries the image the server was rebuilt with."""
    node = next((n for n in obs.get('nodes') or []
                 if n.get('id') == obs.get('first_node')), {})
    if node.get('image_source') != obs.get('rebuild_image'):
        return 'node image %s, not the rebuild image %s' % (
            node.get('image_source'), obs.get('rebuild_image'))


rebuilt_with_new_image.text = 'node redeployed with the new image'


def rescheduled(expected):
    def check(obs):
        did = 'rescheduled' in obs.get('build_results', [])
        if did != expected:
            return 'build %s rescheduled (results %s)' % (
                'was' if did else 'was not', obs.get('build_results'))
    check.text = 'rescheduled' if expected else 'not rescheduled'
    return check


def clean(obs):
    """Nothing left behind: allocations, VIFs, instance_info, usage."""
    problems = []
    final = obs.get('status')
    usage = sum((obs.get('usages') or {}).values())
    # Only an ACTIVE server holds an allocation: a failed build clears the
    # host and removes it, and so does a failed rebuild (Nova deletes the
    # allocation of the node it scheduled the rebuild to).
    placed = final == 'ACTIVE'
    want_usage = 1 if placed else 0
    if usage != want_usage:
        problems.append('placement usage %s, expected %s (leak)' % (
            usage, want_usage))
    if not placed and obs.get('allocations'):
        problems.append('allocations left: %s' % obs['allocations'])
    for node in obs.get('nodes', []):
        if node.get('deleted'):
            continue
        if node.get('instance_id') not in (None, obs.get('server_id')):
            continue  # another instance's node now: not ours to clean
        mine = node['id'] == obs.get('node') and final == 'ACTIVE'
        if mine:
            continue
        if node['provision_state'] != 'available':
            problems.append('node %s is %s' % (node['name'],
                                               node['provision_state']))
        if node['instance_id'] or node['instance_info'] or node['vifs']:
            problems.append('node %s keeps instance/VIFs' % node['name'])
    if final == 'DELETED' and obs.get('port_device_id'):
        problems.append('port still bound to the deleted server')
    return '; '.join(problems) or None


clean.text = 'nothing left behind'


def recovery(**expected):
    """The operator recovery steps (doc/operators.rst) showed this."""
    def check(obs):
        seen = obs.get('recovery') or {}
        wrong = {k: seen.get(k) for k, v in expected.items()
                 if seen.get(k) != v}
        if wrong:
            return 'recovery steps: %s (expected %s)' % (
                wrong, {k: expected[k] for k in wrong})
    check.text = 'recovery steps'
    return check


def one_call_per_poll(obs):
    if obs.get('calls_per_poll') != 1.0:
        return '%s Ironic calls per poll' % obs.get('calls_per_poll')


one_call_per_poll.text = '1 Ironic call per poll'

MISLEADING = fault_has('could not be found')
#: What the driver logs (WARNING) for a node torn down while ``deleting``.
SEEN_DELETING = ('Ironic node {first_node} is being torn down during the '
                 'deploy (provision_state deleting, target_provision_state '
                 'available)')
#: ... and what destroy() logs once Ironic's own tear-down is over.
TORE_DOWN = 'Ironic tore down node {first_node}'
#: A user delete during the build: it wins (issue 12).
DELETE_WON = [status('DELETED'), rescheduled(False), never_error,
              no_other_deploy, all_steps_fired]

#: scenario -> {tree: [checks]}.  The reproducer column is the bug as it is
#: on Nova 34.0.0 (measured); the fixed column is what must happen.  Every
#: fixed row also checks that no fault names another instance
#: (``no_foreign_uuid``, added below).
EXPECTED = {
    'undeploy-deleting': {
        'reproducer': [status('BUILD')],
        'fixed': [status('ERROR'), lost_fault(),
                  log_has(SEEN_DELETING, TORE_DOWN),
                  log_lacks('Successfully unprovisioned'), only_reads,
                  clean]},
    'undeploy-deleting-port': {
        'reproducer': [status('ERROR'), MISLEADING],
        'fixed': [status('ERROR'), lost_fault(),
                  log_has(SEEN_DELETING, TORE_DOWN), only_reads, clean]},
    'undeploy-cleared': {
        'reproducer': [status('BUILD')],
        'fixed': [status('ERROR'), lost_fault(), log_has(
            'Ironic node {first_node} was torn down during the deploy: it '
            'is no longer associated with the instance (provision_state '),
            clean]},
    'maintenance-delete': {
        'reproducer': [status('BUILD')],
        'fixed': [status('ERROR'), lost_fault(), log_has(
            'Ironic node {first_node} was deleted during the deploy'),
            clean]},
    'undeploy-no-alternate': {
        'reproducer': [status('ERROR'), MISLEADING],
        'fixed': [status('ERROR'), rescheduled(True),
                  fault_has('Exceeded maximum number of retries'), clean]},
    'undeploy-reschedule': {
        'reproducer': [status('ERROR'), MISLEADING, rescheduled(False)],
        'fixed': [status('ACTIVE'), on_other_node, rescheduled(True), clean]},
    'undeploy-cleared-reschedule': {
        'reproducer': [status('BUILD'), rescheduled(False)],
        'fixed': [status('ACTIVE'), on_other_node, rescheduled(True), clean]},
    'maintenance-delete-reschedule': {
        'reproducer': [status('BUILD'), rescheduled(False)],
        'fixed': [status('ACTIVE'), on_other_node, rescheduled(True), clean]},
    'deploy-failed': {
        'reproducer': [status('ERROR'),
                       fault_has('Failed to provision instance'), clean],
        'fixed': [status('ERROR'), fault_has('Failed to provision instance'),
                  clean]},
    'deploy-failed-reschedule': {
        'reproducer': [status('ACTIVE'), on_other_node, clean],
        'fixed': [status('ACTIVE'), on_other_node, clean]},
    'abort': {
        'reproducer': [status('ERROR'), fault_has('aborted'), clean],
        'fixed': [status('ERROR'), fault_has('aborted'), clean]},
    'user-delete': {
        # Rescheduled: the conductor may set ERROR (no host left) before
        # the delete completes.
        'reproducer': [status_in('DELETED', 'ERROR'), rescheduled(True)],
        'fixed': DELETE_WON + [clean]},
    'user-delete-alternate': {
        'reproducer': [status_in('DELETED', 'ERROR'), rescheduled(True)],
        'fixed': DELETE_WON + [clean]},
    'normal-build': {
        'reproducer': [status('ACTIVE'), one_call_per_poll, clean],
        'fixed': [status('ACTIVE'), one_call_per_poll, clean]},
    'stuck-recovery': {
        'reproducer': [status('BUILD'), recovery(
            listed_in_build_without_host=True,
            after_instance_build_timeout='BUILD',
            after_compute_restart='BUILD', after_reset_state='ERROR',
            after_delete='DELETED', allocations_after_delete={})],
        'fixed': [status('ERROR'), lost_fault(), recovery(
            listed_in_build_without_host=False,
            after_instance_build_timeout='ERROR',
            after_compute_restart='ERROR', after_reset_state='ERROR',
            after_delete='DELETED', allocations_after_delete={})]},
    'rebuild-error': {
        'reproducer': [status('ACTIVE'), clean],
        'fixed': [status('ACTIVE'), clean]},
    # -- issue 12
    'undeploy-reassociated': {
        'reproducer': [status('BUILD')],
        'fixed': [status('ERROR'), lost_fault(), log_has(
            'Ironic node {first_node} was torn down during the deploy and '
            'is now associated with instance {other_instance}'),
            log_lacks('Node None', 'Cleaning up VIFs failed'), only_reads,
            node_owned_by_other, clean]},
    'deleting-outlasts-retries': {
        'reproducer': [status('BUILD')],
        'fixed': [status('ERROR'), lost_fault(aborted=True), log_has(
            SEEN_DELETING, 'Ironic is still tearing down node {first_node} '
            "(provision state 'deleting') after",
            'Could not clean up failed build'),
            log_lacks('Successfully unprovisioned'), only_reads, clean]},
    'undeploy-deleting-reschedule': {
        'reproducer': [status('BUILD'), rescheduled(False)],
        'fixed': [status('ACTIVE'), on_other_node, rescheduled(True),
                  log_has(SEEN_DELETING, TORE_DOWN), clean]},
    'rebuild-undeploy': {
        'reproducer': [status('REBUILD')],
        'fixed': [status('ERROR'), task_state(None), lost_fault(),
                  log_has(SEEN_DELETING), clean]},
    'user-delete-after-teardown': {
        'reproducer': [status_in('DELETED', 'ERROR'), rescheduled(True)],
        'fixed': DELETE_WON + [clean]},
    'user-delete-at-teardown-poll': {
        'reproducer': [status('DELETED'), rescheduled(False)],
        'fixed': DELETE_WON + [log_has(
            'Ironic node {first_node} was torn down during the deploy: it '
            'is no longer associated with the instance'), clean]},
    'user-delete-during-destroy': {
        'reproducer': [status('BUILD')],
        'fixed': DELETE_WON + [log_has(SEEN_DELETING, TORE_DOWN), clean]},
    'user-delete-on-reschedule': {
        'reproducer': [status('DELETED'), rescheduled(False)],
        'fixed': DELETE_WON + [clean]},
    'rebuild-user-delete': {
        # The rebuild fails ("provisioning was aborted"): ERROR and a fault
        # on the way out.
        'reproducer': [status('DELETED'),
                       fault_created('provisioning was aborted')],
        'fixed': [status('DELETED'), never_error, all_steps_fired, clean]},
    # -- issue 14 (bug KKKKKKK, patches/rebuild/): the fixed tree is
    #    master-all, the teardown series with the rebuild change on top
    'rebuild-newest-microversion': {
        'reproducer': [status('ERROR'), fault_has(
            "Ironic doesn't support rebuilding volume backed instances")],
        'fixed': [status('ACTIVE'), rebuilt_with_new_image, clean]},
}
for _exp in EXPECTED.values():
    _exp['fixed'].append(no_foreign_uuid)


def judge(name, tree, obs, outcome_only=False):
    """Problems of one observation against EXPECTED (empty list: as expected).

    :param outcome_only: skip the checks marked ``detail`` (what the compute
        log says): Nova 34.0.0 does not log the fix's WARNING lines, which
        is not the bug.
    :raises HarnessError: for a scenario without expectations.
    """
    if name not in EXPECTED:
        raise HarnessError(f"scenario {name} has no expectation in "
                           "novaseries.mainjob.EXPECTED")
    if obs.get('error'):
        return ['runner error: ' + obs['error'].strip().splitlines()[-1]]
    if not obs.get('settled', True):
        return ['did not settle within the time limit']
    checks = [c for c in EXPECTED[name][tree]
              if not (outcome_only and getattr(c, 'detail', False))]
    return [p for p in (check(obs) for check in checks) if p]


# -- running ----------------------------------------------------------------

def reproducer_patch(target):
    """The series' reproducer commit: the first patch adding a regression
    test (``nova/tests/functional/regressions/test_bug_*.py``).

    :raises HarnessError: if the series has none.
    """
    patches, problem = target.series_status()
    if problem:
        raise HarnessError(problem)
    for patch in patches:
        text = patch.read_text(errors='replace')
        if '+++ b/nova/tests/functional/regressions/test_bug_' in text:
            return patch
    raise HarnessError(f"{target.name}: no patch in the series adds a "
                       "regression test; cannot make the reproducer tree")


def _stream(proc, label, lines):
    for line in proc.stdout:
        line = line.rstrip('\n')
        lines.append(line)
        if line.startswith('  ['):
            say(f"  {label:10}{line.strip()}")


def run_trees(ctx, target, venv, trees, scenarios=(), bench=()):
    """Run the inner runner in each tree (in parallel); return {tree: data}.

    :param trees: {label: tree path}.
    :raises HarnessError: if a runner process fails without writing JSON.
    """
    outdir = ctx.results('run')
    outdir.mkdir(parents=True, exist_ok=True)
    procs = {}
    for label, tree in trees.items():
        out = outdir / f"{label}.json"
        if out.exists():
            out.unlink()
        cmd = [str(venv / 'bin' / 'python'), str(INNER), '--out', str(out)]
        for name in scenarios:
            cmd += ['--scenario', name]
        for spec in bench:
            cmd += ['--bench', spec]
        env = runner.test_env(target, venv, tree)
        env['OS_DEBUG'] = '0'
        log = open(outdir / f"{label}.log", 'w')
        proc = subprocess.Popen(cmd, cwd=tree, env=env, text=True,
                                stdout=subprocess.PIPE, stderr=log,
                                stdin=subprocess.DEVNULL)
        lines = []
        thread = threading.Thread(target=_stream, args=(proc, label, lines))
        thread.start()
        procs[label] = (proc, thread, out, log, lines)
    data = {}
    for label, (proc, thread, out, log, lines) in procs.items():
        rc = proc.wait()
        thread.join()
        log.close()
        if not out.exists():
            # Nova's test fixtures send some output to stdout: keep both.
            (outdir / f"{label}.stdout.log").write_text('\n'.join(lines))
            tail = (outdir / f"{label}.log").read_text(
                errors='replace').splitlines()[-20:]
            raise HarnessError(f"scenario runner for {label} failed (exit "
                               f"{rc}); logs: {outdir / (label + '.log')}, "
                               f"{outdir / (label + '.stdout.log')}",
                               '\n'.join(lines[-20:] + ['--- stderr:'] + tail))
        data[label] = json.loads(out.read_text())
    return data


def prepare_trees(ctx, target):
    """Prepare build/run/{reproducer,fixed}; return {label: path}.

    reproducer: the target's series up to its reproducer commit; fixed:
    everything a packager ships, i.e. target ``<target>-all`` (the series
    with the separate changes stacked on it) if there is one, else the
    whole series.
    """
    repro = reproducer_patch(target)
    fixed = targets_mod.load(ctx).get(f'{target.name}-all', target)
    base = ctx.build / 'run'
    trees = {}
    for label, tgt, upto in (('reproducer', target, repro.name),
                             ('fixed', fixed, None)):
        dest = base / label
        say(f"tree {label}: target {tgt.name}, series "
            f"{'up to ' + upto if upto else 'complete'}")
        trees[label] = tree_mod.prepare(ctx, tgt, dest, upto, force=True)
    return trees


#: A server left in one of these never ends (the bug).
STUCK = ('BUILD', 'REBUILD')


def _wait_text(obs):
    if obs.get('status') in STUCK:
        return 'never'
    polls = obs.get('polls_after_action')
    if polls is None:
        return '-'
    return f"{polls} ({polls * POLL_INTERVAL}s)"


def _wall_text(obs):
    """Wall time from the action to the end at api_retry_interval = 0."""
    if obs.get('status') in STUCK:
        return 'never'
    wall = obs.get('wall_seconds_after_action')
    return '-' if wall is None else f"{wall:.1f}s"


def table(data):
    """Rows of the verdict table, as a list of strings."""
    rows = []
    head = (f"{'scenario':30} {'tree':10} {'status/task':16} "
            f"{'node state':11} {'polls (wait)':13} {'wall@0':7} "
            f"{'calls/poll':10} {'verdict'}")
    rows.append(head)
    rows.append('-' * len(head))
    names = [o['scenario'] for o in data['fixed']['scenarios']]
    for name in names:
        for label in TREES:
            obs = _find(data[label], name)
            first = next((n for n in obs.get('nodes', [])
                          if n['id'] == obs.get('first_node')), {})
            node_state = ('deleted' if first.get('deleted')
                          else first.get('provision_state', '?'))
            st = f"{obs.get('status')}/{obs.get('task_state') or '-'}"
            verdict = obs['verdict']
            rows.append(f"{name if label == 'reproducer' else '':30} "
                        f"{label:10} {st:16} {node_state:11} "
                        f"{_wait_text(obs):13} "
                        f"{_wall_text(obs):7} "
                        f"{str(obs.get('calls_per_poll')):10} {verdict}")
            if obs.get('fault'):
                rows.append(f"{'':41}fault: {obs['fault'][:110]}")
            for line in obs.get('driver_warnings') or []:
                # what Ironic showed, for the operator (compute log)
                rows.append(f"{'':41}log:   {_no_instance(line)[:110]}")
    return rows


def _no_instance(line):
    """A log message without oslo.log's ``[instance: <uuid>] `` prefix."""
    return re.sub(r'^\[instance: [0-9a-f-]+\] ', '', line)


def _find(tree_data, name):
    for obs in tree_data['scenarios']:
        if obs['scenario'] == name:
            return obs
    return {'scenario': name, 'error': 'not run', 'verdict': 'not run'}


def evaluate(data):
    """Add ``problems`` and ``verdict`` to each observation; return the
    number of scenarios the fixed tree got wrong."""
    wrong = 0
    for label in TREES:
        for obs in data[label]['scenarios']:
            problems = judge(obs['scenario'], label, obs)
            obs['problems'] = problems
            if label == 'fixed':
                obs['verdict'] = 'ok' if not problems else 'WRONG: ' + \
                    '; '.join(problems)
                wrong += bool(problems)
            elif problems:
                obs['verdict'] = 'unexpected: ' + '; '.join(problems)
            else:
                obs['verdict'] = ('bug reproduced' if _is_bug(obs)
                                  else 'as on 34.0.0')
    return wrong


def _is_bug(obs):
    """True when the fixed tree's expectations (outcome, not log lines)
    fail on this observation."""
    return bool(judge(obs['scenario'], 'fixed', obs, outcome_only=True))


def check_tree(ctx, tree, target_name='master', scenarios=(),
               json_out=None):
    """Run the scenarios in one Nova tree of the user's and judge it as a
    fixed tree (e.g. a distribution's patched Nova).

    The tree must contain the series' test fixtures (both fake Ironic
    commits: ``nova/tests/fixtures/ironic.py`` with its teardown controls
    and ``nova/tests/functional/ironic/base.py``). Returns the exit status.
    """
    tree = pathlib.Path(tree).resolve()
    fixture = tree / 'nova' / 'tests' / 'fixtures' / 'ironic.py'
    if not (fixture.exists() and 'def after_polls' in fixture.read_text() and
            (tree / 'nova' / 'tests' / 'functional' / 'ironic' /
             'base.py').exists()):
        raise HarnessError(f"{tree} lacks the fake Ironic and its teardown "
                           "controls: apply at least the series' first "
                           "three commits")
    target = targets_mod.get(ctx, target_name)
    venv, _ = runner.ensure_venv(ctx, target)
    data = run_trees(ctx, target, venv, {'fixed': tree}, scenarios)
    wrong = 0
    say('')
    for obs in data['fixed']['scenarios']:
        problems = judge(obs['scenario'], 'fixed', obs)
        obs['problems'] = problems
        wrong += bool(problems)
        say(f"{obs['scenario']:30} {obs.get('status'):8} "
            f"{'ok' if not problems else 'WRONG: ' + '; '.join(problems)}")
    out = pathlib.Path(json_out) if json_out else ctx.results('run') / \
        'tree.json'
    out.write_text(json.dumps(data, indent=1, sort_keys=True))
    say(f"\nJSON: {out}\n{tree}: {len(data['fixed']['scenarios']) - wrong} "
        f"of {len(data['fixed']['scenarios'])} scenarios right")
    return 1 if wrong else 0


#: Scenarios a real Ironic 39.0.0 on 127.0.0.1 can play (driver level, see
#: tests/realironic/test_e2e.py); the others need Nova's whole stack and
#: several nodes, which the real Ironic run does not set up.
REAL_IRONIC_SCENARIOS = {
    # the driver sees the real Ironic's ``deleting`` (about 4 s), as its
    # WARNING line says
    'undeploy-deleting': 'test_undeploy_in_wait_callback',
    'maintenance-delete': 'test_maintenance_and_delete_in_wait_callback',
    'deploy-failed': 'test_deploy_failed',
    'user-delete': 'test_user_delete_in_wait_callback',
}

#: The line each end-to-end test prints once spawn() has ended.
_RAISED = re.compile(r'^e2e: spawn\(\) raised (\w+)', re.M)


def _real_verdict(rc, output, ok_word):
    """One table cell of ``run --ironic real``: what spawn() raised (read
    from the test's output) and whether the test passed (``rc``)."""
    raised = _RAISED.findall(output)
    what = raised[-1] if raised else 'no spawn() result'
    if what == 'nothing':
        what = 'spawn() returned'
    return f"{what}: {ok_word if not rc else f'WRONG (rc {rc})'}"


def run_real(ctx, target_name='master'):
    """``run --ironic real``: the fixed and the reproducer driver against a
    real Ironic, for the scenarios it can play; the rest are listed as not
    applicable.  Each cell says what spawn() raised in that tree's test and
    whether that is what the test expects of the tree (REALIRONIC_EXPECT
    ``bug`` for the reproducer, ``fixed`` for the fixed tree).  Returns the
    exit status (0: the fixed tree is right)."""
    from novaseries import realironic
    target = targets_mod.get(ctx, target_name)
    trees = prepare_trees(ctx, target)
    venv, _ = runner.ensure_venv(ctx, target)
    results = {}
    for label, expect in (('reproducer', 'bug'), ('fixed', 'fixed')):
        log_path = ctx.results('run') / f"real-{label}.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        log_path.write_text('')
        for name, test in REAL_IRONIC_SCENARIOS.items():
            start = log_path.stat().st_size
            with open(log_path, 'a') as log:
                rc = realironic.selftest(trees[label], nova_venv=venv,
                                         build=ctx.build, pattern=test,
                                         expect=expect, log=log)
            with open(log_path, 'rb') as log:
                log.seek(start)
                output = log.read().decode(errors='replace')
            results[(name, label)] = (rc, output)
    wrong = 0
    say(f"\n{'scenario':30} {'reproducer (expect bug)':40} "
        "fixed (expect fixed)")
    for sc in EXPECTED:
        if sc not in REAL_IRONIC_SCENARIOS:
            say(f"{sc:30} not applicable (real Ironic)")
            continue
        r = results[(sc, 'reproducer')]
        f = results[(sc, 'fixed')]
        wrong += bool(f[0])
        say(f"{sc:30} {_real_verdict(*r, 'as expected'):40} "
            f"{_real_verdict(*f, 'ok')}")
    say(f"logs: {ctx.results('run')}/real-*.log")
    return 1 if wrong else 0


def run(ctx, target_name='master', scenarios=(), bench=(), json_out=None,
        ironic='fake'):
    """The main job.  Returns the exit status (0: fixed tree all right)."""
    if ironic == 'real':
        return run_real(ctx, target_name)
    target = targets_mod.get(ctx, target_name)
    start = time.monotonic()
    trees = prepare_trees(ctx, target)
    venv, _ = runner.ensure_venv(ctx, target)
    say(f"running {len(scenarios) or len(EXPECTED)} scenarios in "
        f"{len(trees)} trees (in parallel)...")
    data = run_trees(ctx, target, venv, trees, scenarios, bench)
    wrong = evaluate(data)
    say('')
    for row in table(data):
        say(row)
    if bench:
        say('')
        say('benchmark (N builds on N+S nodes, K torn down mid-deploy):')
        for label in TREES:
            for b in data[label].get('bench', []):
                say(f"  {label:10} N={b['n']:<3} S={b['s']:<2} K={b['k']:<3} "
                    f"outcome={b.get('outcome')} wall={b.get('wall_seconds')}s "
                    f"calls/build={b.get('ironic_calls_per_build')} "
                    f"healthy calls/poll={b.get('healthy_calls_per_poll')}"
                    f"{' ERROR' if b.get('error') else ''}")
    out = pathlib.Path(json_out) if json_out else ctx.results('run') / \
        'run.json'
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=1, sort_keys=True))
    say(f"\nJSON: {out}")
    say(f"fixed tree: {len(data['fixed']['scenarios']) - wrong} of "
        f"{len(data['fixed']['scenarios'])} scenarios right; "
        f"{time.monotonic() - start:.0f} s")
    return 1 if wrong else 0


def _register():
    from novaseries import cli

    @cli.command('run', 'the main job: every scenario on the reproducer and '
                 'the fixed tree, verdict table + JSON')
    @cli.arguments(
        (('--target',), dict(default='master')),
        (('--scenario',), dict(action='append', default=[],
                               help='only this scenario (repeatable)')),
        (('--bench',), dict(action='append', default=[], metavar='N:S:K',
                            help='benchmark: N concurrent builds on N+S '
                            'nodes, K torn down (e.g. 10:2:3)')),
        (('--json',), dict(help='where to write the JSON (default: '
                           'build/results/run/run.json)')),
        (('--ironic',), dict(choices=('fake', 'real'), default='fake')),
        (('--tree',), dict(help='instead: judge this Nova tree (with the '
                           "series' fake Ironic) as a fixed tree")))
    def cmd_run(ctx, args):
        unknown = [n for n in args.scenario if n not in EXPECTED]
        if unknown:
            raise HarnessError(f"unknown scenario {', '.join(unknown)} (known: "
                               f"{', '.join(EXPECTED)})")
        for spec in args.bench:
            if not re.fullmatch(r"[1-9]\d*:\d+:\d+", spec) or \
                    int(spec.split(':')[2]) > int(spec.split(':')[0]):
                raise HarnessError(f"--bench {spec!r}: expected N:S:K with "
                                   "N >= 1 builds, S spare nodes, K <= N torn down")
        if args.tree:
            return check_tree(ctx, args.tree, args.target, args.scenario,
                              args.json)
        return run(ctx, args.target, args.scenario, args.bench, args.json,
                   args.ironic)


_register()
