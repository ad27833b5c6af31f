"""The main job's scenarios, each defined once: what it does, what the
reproducer tree shows, what the fixed tree must show, and which end-to-end
test plays it against a real Ironic.

Standard library only: the harness imports it (``novaseries.mainjob``, as
``novaseries.scenarios.scenario_table``) to judge observations and to list
the scenarios, and the scenario runner imports it inside Nova's virtualenv
(``nova_scenarios.py``, from this folder, as ``scenario_table``) to know
what to run.  The runner records an observation per scenario (a dict,
keys in :data:`OBSERVATION`); :func:`judge` compares it with the
scenario's checks.
"""

import re

#: The observation of one scenario, as the runner writes it (JSON), key ->
#: meaning.  Checks read only these.
OBSERVATION = {
    'scenario': 'the scenario name',
    'definition': "the scenario's runner parameters (Scenario.describe())",
    'error': "the runner's traceback when the scenario itself failed, or None",
    'settled': 'False when the server did not settle within the time limit',
    'test_seconds': 'wall time of the scenario in the runner',
    'server_id': "the server's uuid",
    'status': 'server status at the end (DELETED when it is gone)',
    'vm_state': 'vm_state at the end',
    'task_state': 'task_state at the end',
    'host': 'OS-EXT-SRV-ATTR:host at the end',
    'node': 'the Ironic node the server is on at the end (hypervisor_hostname)',
    'fault': "the server's fault message at the end, or None",
    'faults_created': "every fault message created for the server on the way",
    'error_saves': 'how many times the server was saved with vm_state ERROR',
    'lost_fault': "the tree's IronicNodeLost message for this node and server "
                  '(absent on a tree without IronicNodeLost)',
    'lost_fault_fields': 'the fields IronicNodeLost.msg_fmt takes',
    'first_node': 'the node of the first deploy',
    'first_node_history': "the first node's (provision_state, target) sequence",
    'nodes': 'every node at the end: id, name, provision_state, '
             'target_provision_state, instance_id, instance_info (bool), '
             'image_source, vifs, maintenance, history; or {id, deleted: True}',
    'other_instance': 'the instance another deploy claimed the node for '
                      '(action reassociate)',
    'allocations': "the server's placement allocations at the end",
    'usages': 'CUSTOM_BAREMETAL usage per resource provider at the end',
    'build_results': "the compute manager's build results (active, failed, "
                     'rescheduled, ...)',
    'port_device_id': "the server's Neutron port's device_id at the end "
                      '(scenarios with a port)',
    'ironic_calls': 'Ironic calls by proxy method',
    'ironic_calls_total': 'number of Ironic calls',
    'polls': "the driver's polls of the first deploy",
    'calls_per_poll': 'Ironic calls per poll of the first deploy (1.0 healthy)',
    'polls_after_action': "the driver's polls from the operator's action to "
                          'the end',
    'wall_seconds_after_action': 'wall time from the action to the end (s)',
    'writes_after_action': 'non-read calls Nova sent to the first node after '
                           'the action',
    'hooks_fired': "the scenario's steps that ran, as action@poll",
    'rebuild_image': 'the image of the rebuild (kind rebuild-newest)',
    'recovery': 'what the operator recovery steps showed (kind recovery)',
    'log': 'INFO-and-up lines of the ironic driver and the compute manager',
    'driver_warnings': "the ironic driver's WARNING messages",
    'instance_actions': "the server's instance actions",
    'backend': "'real Ironic' when the run was against a real Ironic "
               '(--ironic real)',
    'nova_requests': 'real Ironic: how many requests Nova sent',
    'operator_requests': "real Ironic: how many requests the operator's side "
                         'sent (enrolment, actions, sweep)',
    'requests_file': 'real Ironic: the JSON lines file of every request',
    'leftover_nodes_removed': "real Ironic: nodes an earlier scenario's "
                              'sweep left, removed before this one',
}

# -- checks ------------------------------------------------------------------
# Each check takes the observation dict (keys: OBSERVATION) and returns a
# problem string or None; ``text`` says what it checks (``run --list``).


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
            return 'fault %r, not the generic one: the tree has no IronicNodeLost' % (
                (obs.get('fault') or '')[:90],)
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


def log_reports(*parts):
    """An outcome check, unlike :func:`log_has`: the compute log has each
    of ``parts`` where a log line is what Nova was asked to produce (e.g.
    ``running_deleted_instance_action = log``), so its absence on the
    reproducer tree is the bug."""
    check = _log_check(parts, True)
    check.detail = False
    return check


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


def teardown_refused(obs):
    """Ironic refused the build clean-up's tear-down request (the
    ``cleanup-fail-delete`` kind's step): the clean-up failed."""
    if not any(h.startswith('refuse-teardown@')
               for h in obs.get('hooks_fired') or []):
        return 'no tear-down request was refused'


teardown_refused.text = "the clean-up's tear-down request was refused"


def first_node_leaked(obs):
    """The first node still carries the server's instance."""
    node = next((n for n in obs.get('nodes', [])
                 if n.get('id') == obs.get('first_node')), {})
    if node.get('deleted') or node.get('instance_id') != obs.get('server_id'):
        return 'the first node no longer carries the server'


first_node_leaked.text = "the first node keeps the server's instance"


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


#: What a node may keep of a server: (text, key of the node's view).
KEPT = (('instance', 'instance_id'), ('instance_info', 'instance_info'),
        ('VIFs', 'vifs'))


def leftovers(obs, claim_kept=False):
    """What the server left behind, as short texts (empty: nothing).

    Only an ACTIVE server may hold an allocation and a placement usage of 1
    and keep its node deployed: a failed build clears the host and removes
    the allocation, and so does a failed rebuild (Nova deletes the
    allocation of the node it scheduled the rebuild to).  A node that
    another instance has by now is not the server's to clean.
    ``claim_kept``: the server keeps its allocation and usage (see
    :func:`claim_kept`); its nodes must still be clean.
    """
    left = []
    final = obs.get('status')
    placed = final == 'ACTIVE'
    holds = placed or claim_kept
    usage = sum((obs.get('usages') or {}).values())
    if usage != (1 if holds else 0):
        left.append('placement usage %s, expected %s' % (usage, int(holds)))
    if not holds and obs.get('allocations'):
        left.append('allocation on %s' % ', '.join(sorted(obs['allocations'])))
    for node in obs.get('nodes', []):
        if node.get('deleted'):
            continue
        if node.get('instance_id') not in (None, obs.get('server_id')):
            continue  # another instance's node now: not ours to clean
        if node['id'] == obs.get('node') and placed:
            continue
        if node['provision_state'] != 'available':
            left.append('%s %s' % (node['name'], node['provision_state']))
        kept = [what for what, key in KEPT if node.get(key)]
        if kept:
            left.append('%s keeps %s' % (node['name'], '/'.join(kept)))
    if final == 'DELETED' and obs.get('port_device_id'):
        left.append('port still bound to the deleted server')
    return left


def clean(obs):
    """Nothing left behind: allocations, usage, nodes, VIFs, ports."""
    left = leftovers(obs)
    return ('left behind: ' + '; '.join(left)) if left else None


clean.text = 'nothing left behind'


def claim_kept(obs):
    """The server in ERROR keeps its host, allocation and placement usage
    until it is deleted, and the node is clean otherwise: a build whose
    clean-up failed keeps what its delete needs (LP 2169779,
    ``patches/nodeleak`` 0006), also when Ironic finishes the tear-down
    that Nova stopped waiting for."""
    usage = sum((obs.get('usages') or {}).values())
    if not obs.get('host') or usage != 1 or not obs.get('allocations'):
        return ('the claim was not kept: host %s, placement usage %s, '
                'allocations %s' % (obs.get('host'), usage,
                                    sorted(obs.get('allocations') or {})))
    left = leftovers(obs, claim_kept=True)
    if left:
        return 'left behind: ' + '; '.join(left)


claim_kept.text = ('host, allocation and usage kept for the delete '
                   '(LP 2169779); the node clean')


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
#: ... what spawn() logs once Ironic's own tear-down is over (it waits for
#: it before a reschedule) ...
TORE_DOWN = 'Ironic tore down node {first_node}'
#: ... or when it stopped waiting (the build is aborted, not rescheduled) ...
OUTLASTED = ('Ironic is still tearing down node {first_node} '
             '(provision_state deleting) after 2 polls; the build is not '
             'rescheduled')
#: ... and what destroy() logs for a node that Ironic is tearing down.
LEFT_TO_IRONIC = ('Ironic is tearing down node {first_node}; leaving its '
                  'tear-down to Ironic.')
#: A user delete during the build: it wins (issue 12).
DELETE_WON = [status('DELETED'), rescheduled(False), never_error,
              no_other_deploy, all_steps_fired]


class Scenario:
    """One named case of the matrix.

    :param name: short identifier (used on the command line and in JSON).
    :param title: one-line description for the table.
    :param nodes: Ironic nodes managed by the compute service.
    :param action: what happens during the first deploy: ``undeploy``,
        ``maintenance-delete``, ``fail``, ``abort``, ``reassociate``
        (undeploy; once Ironic's tear-down is over another deploy claims the
        node for another instance), ``user-delete`` (the runner's main
        thread deletes the server as soon as it can), ``delete`` (the user's
        delete lands right there, before the driver's next read),
        ``undeploy-delete`` (undeploy, then that delete) or None.
    :param after_polls: the action runs right after the driver's Nth poll
        of the first deploy (of the rebuild, for ``kind='rebuild'``).
    :param then: more ``(polls, action)`` steps on the same node, after its
        Nth poll of the deploy, or ``(polls, action, 'teardown')`` after the
        Nth poll of the driver's wait for the tear-down (_wait_for_teardown,
        or _unprovision on a tree without it: a step whose poll never comes
        does not run: see ``hooks_fired`` in the observation).
    :param delete_on_reschedule: after the action, the user deletes the
        server at the moment the compute manager removes the build's
        allocation (what it does right before handing a failed build back
        to the conductor for a reschedule).
    :param deploying_reads: driver reads a deploy stays in ``deploying``
        (locked by the conductor: Ironic refuses a tear-down with 409);
        None: the fake Ironic's default (1).
    :param deleting_reads: driver reads that observe the node in
        ``deleting`` (still associated, locked by the conductor) after an
        undeploy; 0 means the driver only sees the aftermath (association
        cleared, ``cleaning``/``available``).
    :param port: boot with a Neutron port (a VIF on the node).
    :param max_attempts: ``[scheduler] max_attempts``.
    :param api_max_retries: ``[ironic] api_max_retries`` (None: default).
    :param settle_ironic: let Ironic's conductor finish its pending work
        (``IronicFixture.settle``) before the nodes are recorded, for a
        tear-down nobody polls to its end.
    :param kind: ``build`` (boot and act during the deploy), ``rebuild``
        (boot, then act during the rebuild of the ACTIVE server),
        ``rebuild-newest`` (rebuild the ACTIVE server with another image
        at the newest compute API microversion, bug KKKKKKK),
        ``rebuild-error`` (rebuild a server that is in ERROR), ``reap`` /
        ``reap-log`` (LP 2169200: the ACTIVE server is deleted while its
        nova-compute is down, nova-compute restarts, then the periodic
        ``_cleanup_running_deleted_instances`` runs once with
        ``running_deleted_instance_action`` ``reap`` / ``log``),
        ``build-delete`` (a normal build, then the user deletes the
        ACTIVE server), ``undeploy-active-delete`` (a normal build, then
        an operator undeploys the node and the user deletes the server
        while Ironic holds the node in ``deleting``) or
        ``cleanup-fail-delete`` (LP 2169779: the action fails the deploy,
        Ironic's API refuses the clean-up's tear-down request once with
        503, then the user deletes the server in ERROR) or ``recovery`` (a
        build, then the operator recovery steps).
    :param source: where the case comes from (bug report, control).
    :param reproducer: checks (functions of the observation, below) that
        hold on the reproducer tree: Nova as released, measured.
    :param fixed: checks that must hold on the fixed tree (every scenario
        also gets :func:`no_foreign_uuid`).
    :param real_ironic: the end-to-end test of ``tests/realironic/
        test_e2e.py`` that plays the scenario at the driver level against
        a real Ironic (``novaseries ironic selftest``), or None.
    :param real: True when ``novaseries run --ironic real`` plays the
        scenario through Nova's whole stack against a real Ironic
        (``real_backend.py``); otherwise why it does not (a text).
    """

    def __init__(self, name, title, nodes=1, action=None, after_polls=2,
                 deleting_reads=3, port=False, max_attempts=3, kind='build',
                 deploying_reads=None,
                 source='', then=(), delete_on_reschedule=False,
                 api_max_retries=None, settle_ironic=False, reproducer=(),
                 fixed=(), real_ironic=None, real=True):
        self.name = name
        self.title = title
        self.nodes = nodes
        self.action = action
        self.after_polls = after_polls
        self.then = [list(step) for step in then]
        self.delete_on_reschedule = delete_on_reschedule
        self.deleting_reads = deleting_reads
        self.deploying_reads = deploying_reads
        self.port = port
        self.max_attempts = max_attempts
        self.api_max_retries = api_max_retries
        self.settle_ironic = settle_ironic
        self.kind = kind
        self.source = source
        self.reproducer = list(reproducer)
        self.fixed = list(fixed) + [no_foreign_uuid]
        self.real_ironic = real_ironic
        self.real = real

    #: What the runner reads (the rest are the expectations).
    RUNNER_FIELDS = ('name', 'title', 'nodes', 'action', 'after_polls', 'then',
                     'delete_on_reschedule', 'deleting_reads',
                     'deploying_reads', 'port',
                     'max_attempts', 'api_max_retries', 'settle_ironic',
                     'kind', 'source')

    def describe(self):
        """The runner's parameters, JSON-ready (the observation's
        ``definition``)."""
        return {field: getattr(self, field) for field in self.RUNNER_FIELDS}

    def expectations(self, tree):
        """What the checks of ``tree`` (``reproducer`` or ``fixed``) say,
        as short texts."""
        return [getattr(check, 'text', check.__name__)
                for check in getattr(self, tree)]


SCENARIOS = [
    Scenario('undeploy-deleting', 'undeploy in wait call-back, seen while '
             '`deleting` (1 node, max_attempts=1)',
             action='undeploy', deleting_reads=3, max_attempts=1,
             source='the bug, case (a)',
             reproducer=[status('BUILD')],
             fixed=[status('ERROR'), lost_fault(),
                    log_has(SEEN_DELETING, TORE_DOWN),
                    log_lacks('Successfully unprovisioned'), only_reads,
                    clean],
             real_ironic='test_undeploy_in_wait_callback'),
    Scenario('undeploy-deleting-port', 'same, server with a port (VIF '
             'detach hits 409 node locked)', action='undeploy',
             deleting_reads=3, port=True, max_attempts=1,
             source='the bug, case (a) with a port',
             reproducer=[status('ERROR'), MISLEADING],
             fixed=[status('ERROR'), lost_fault(),
                    log_has(SEEN_DELETING, TORE_DOWN), only_reads, clean]),
    Scenario('undeploy-cleared', 'undeploy in wait call-back, seen only '
             'after the association is cleared (1 node, max_attempts=1)',
             action='undeploy', deleting_reads=0, max_attempts=1,
             source='the bug, case (b)',
             reproducer=[status('BUILD')],
             fixed=[status('ERROR'), lost_fault(),
                    log_has('Ironic node {first_node} was torn down during '
                            'the deploy: it is no longer associated with the '
                            'instance (provision_state '),
                    clean]),
    Scenario('maintenance-delete', 'maintenance + node delete during the '
             'deploy (1 node, max_attempts=1)', action='maintenance-delete',
             max_attempts=1, source='the bug, delete variant (c)',
             reproducer=[status('BUILD')],
             fixed=[status('ERROR'), lost_fault(),
                    log_has('Ironic node {first_node} was deleted during the '
                            'deploy'),
                    clean],
             real_ironic='test_maintenance_and_delete_in_wait_callback'),
    Scenario('undeploy-no-alternate', 'undeploy seen while `deleting`, one '
             'node, default retries (no alternate: ERROR)',
             action='undeploy', deleting_reads=3, port=True,
             source='the bug: no alternate host',
             reproducer=[status('ERROR'), MISLEADING],
             fixed=[status('ERROR'), rescheduled(True),
                    fault_has('Exceeded maximum number of retries'), clean]),
    Scenario('undeploy-reschedule', 'undeploy seen while `deleting`, an '
             'alternate node is free (reschedule)', nodes=2,
             action='undeploy', deleting_reads=3, port=True,
             source='the bug: alternate host',
             reproducer=[status('ERROR'), MISLEADING, rescheduled(False)],
             fixed=[status('ACTIVE'), on_other_node, rescheduled(True), clean]),
    Scenario('undeploy-cleared-reschedule', 'undeploy seen after the '
             'association is cleared, alternate node free', nodes=2,
             action='undeploy', deleting_reads=0,
             source='the bug: alternate host',
             reproducer=[status('BUILD'), rescheduled(False)],
             fixed=[status('ACTIVE'), on_other_node, rescheduled(True), clean]),
    Scenario('maintenance-delete-reschedule', 'maintenance + node delete, '
             'alternate node free', nodes=2, action='maintenance-delete',
             source='the bug: alternate host',
             reproducer=[status('BUILD'), rescheduled(False)],
             fixed=[status('ACTIVE'), on_other_node, rescheduled(True), clean]),
    Scenario('deploy-failed', 'control: deploy failed in Ironic (1 node, '
             'max_attempts=1)', action='fail', max_attempts=1,
             source='control',
             reproducer=[status('ERROR'),
                         fault_has('Failed to provision instance'), clean],
             fixed=[status('ERROR'), fault_has('Failed to provision instance'),
                    clean],
             real_ironic='test_deploy_failed'),
    Scenario('deploy-failed-reschedule', 'control: deploy failed, '
             'alternate node free', nodes=2, action='fail',
             source='control',
             reproducer=[status('ACTIVE'), on_other_node, clean],
             fixed=[status('ACTIVE'), on_other_node, clean]),
    Scenario('abort', 'control: operator abort in wait call-back (deploy '
             'failed), 1 node, max_attempts=1', action='abort',
             max_attempts=1, source='control',
             reproducer=[status('ERROR'), fault_has('aborted'), clean],
             fixed=[status('ERROR'), fault_has('aborted'), clean],
             real='a real abort leaves the node `deploy failed` with '
                  'last_error null for about 2 s (doc/real-ironic.rst): the '
                  "driver's poll then gives the fault 'Failed to provision "
                  "instance <uuid>: None', where the fake sets last_error at "
                  'once; a difference this series does not fix'),
    Scenario('user-delete', 'control: user deletes the server during the '
             'deploy (LP 1455000)', action='user-delete',
             source='LP 1455000',
             # Rescheduled: the conductor may set ERROR (no host left)
             # before the delete completes.
             reproducer=[status_in('DELETED', 'ERROR'), rescheduled(True)],
             fixed=DELETE_WON + [clean],
             real_ironic='test_user_delete_in_wait_callback'),
    Scenario('user-delete-alternate', 'user delete during the deploy, '
             'alternate node free (no reschedule, no leak)', nodes=2,
             action='user-delete', source='user-delete sibling bug',
             reproducer=[status_in('DELETED', 'ERROR'), rescheduled(True)],
             fixed=DELETE_WON + [clean]),
    Scenario('normal-build', 'control: a normal build', action=None,
             source='control',
             reproducer=[status('ACTIVE'), one_call_per_poll, clean],
             fixed=[status('ACTIVE'), one_call_per_poll, clean]),
    Scenario('normal-build-delete', 'control: a normal build, then the '
             'user deletes the ACTIVE server', kind='build-delete',
             source='control',
             reproducer=[status('DELETED'), clean],
             fixed=[status('DELETED'), clean]),
    Scenario('rebuild-error', 'control: rebuild of a server in ERROR '
             '(LP 1735009)', kind='rebuild-error', source='LP 1735009',
             reproducer=[status('ACTIVE'), clean],
             fixed=[status('ACTIVE'), clean]),
    Scenario('stuck-recovery', 'undeploy seen after the association is '
             'cleared, then the operator recovery steps of '
             'doc/operators.rst', action='undeploy', deleting_reads=0,
             max_attempts=1, kind='recovery',
             source='doc/operators.rst',
             reproducer=[status('BUILD'), recovery(
              listed_in_build_without_host=True,
              after_instance_build_timeout='BUILD',
              after_compute_restart='BUILD', after_reset_state='ERROR',
              after_delete='DELETED', allocations_after_delete={})],
             fixed=[status('ERROR'), lost_fault(), recovery(
              listed_in_build_without_host=False,
              after_instance_build_timeout='ERROR',
              after_compute_restart='ERROR', after_reset_state='ERROR',
              after_delete='DELETED', allocations_after_delete={})]),
    # -- issue 12: the generic fault, destroy() and unplug_vifs()
    Scenario('undeploy-reassociated', 'undeploy in wait call-back; another '
             'deploy claims the node for another instance before the driver '
             'looks (port, 1 node, max_attempts=1)', action='reassociate',
             port=True, max_attempts=1,
             source='issue 12: no other instance in the fault',
             reproducer=[status('BUILD')],
             fixed=[status('ERROR'), lost_fault(),
                    log_has('Ironic node {first_node} was torn down during '
                            'the deploy and is now associated with instance '
                            '{other_instance}'),
                    log_lacks('Node None', 'Cleaning up VIFs failed'),
                    only_reads, node_owned_by_other, clean]),
    Scenario('deleting-outlasts-retries', 'undeploy seen while `deleting`, '
             'which lasts longer than [ironic] api_max_retries=2 polls '
             '(1 node, max_attempts=1)', action='undeploy',
             deleting_reads=10, max_attempts=1, api_max_retries=2,
             settle_ironic=True,
             source="issue 37: a tear-down Ironic owns is not Nova's failure",
             reproducer=[status('BUILD')],
             # Every alternate would refuse the instance, which Ironic still
             # associates with the node: the build is aborted, not
             # rescheduled, and its clean-up leaves the tear-down to Ironic
             # and holds nothing for the node.
             fixed=[status('ERROR'), lost_fault(aborted=True),
                    log_has(SEEN_DELETING, OUTLASTED, LEFT_TO_IRONIC),
                    log_lacks('Successfully unprovisioned',
                              'Could not clean up failed build'),
                    only_reads, clean]),
    Scenario('undeploy-deleting-reschedule', 'undeploy seen while '
             '`deleting`, no port, an alternate node is free (the reschedule '
             "must claim it despite Ironic's unique association)", nodes=2,
             action='undeploy', deleting_reads=3,
             source='issue 12: two nodes, no port',
             reproducer=[status('BUILD'), rescheduled(False)],
             fixed=[status('ACTIVE'), on_other_node, rescheduled(True),
                    log_has(SEEN_DELETING, TORE_DOWN), clean]),
    Scenario('undeploy-active-delete', 'an operator undeploys the node of '
             'an ACTIVE server with a port; the user deletes the server '
             'while Ironic tears the node down (`deleting`)',
             kind='undeploy-active-delete', port=True, deleting_reads=3,
             settle_ironic=True,
             source="issue 37: a tear-down Ironic owns is not Nova's failure",
             # destroy() sends the node Ironic holds a VIF detach: 409, and
             # the failed delete keeps the server's allocation
             reproducer=[status('ERROR'), fault_has('ConflictException')],
             fixed=[status('DELETED'), never_error,
                    log_has(LEFT_TO_IRONIC), only_reads, clean]),
    Scenario('rebuild-undeploy', 'undeploy in wait call-back during the '
             'rebuild of an ACTIVE server', action='undeploy',
             deleting_reads=1, kind='rebuild', settle_ironic=True,
             source='issue 12: teardown during a rebuild',
             reproducer=[status('REBUILD')],
             fixed=[status('ERROR'), task_state(None), lost_fault(),
                    log_has(SEEN_DELETING), clean]),
    # -- issue 12: a user delete wins whenever it arrives during the build
    Scenario('user-delete-after-teardown', 'undeploy, then the user deletes '
             'the server before the driver notices (2 nodes)', nodes=2,
             action='undeploy-delete', deleting_reads=1,
             source='issue 12: user delete timings',
             reproducer=[status_in('DELETED', 'ERROR'), rescheduled(True)],
             fixed=DELETE_WON + [clean]),
    Scenario('user-delete-at-teardown-poll', 'undeploy; the user deletes the '
             'server right after the poll that sees the association cleared '
             '(2 nodes)', nodes=2, action='undeploy', deleting_reads=0,
             then=[(3, 'delete')], source='issue 12: user delete timings',
             reproducer=[status('DELETED'), rescheduled(False)],
             # the driver reads the instance again before it logs a lost
             # node: the delete, not the teardown, is what it reports
             fixed=DELETE_WON + [
                 log_lacks('Ironic node {first_node} was torn down during '
                           'the deploy',
                           'Ironic node {first_node} is being torn down '
                           'during the deploy'),
                 clean]),
    Scenario('user-delete-during-teardown-wait', "undeploy; the user "
             "deletes the server while the build waits for Ironic's "
             'tear-down before a reschedule (2 nodes)',
             nodes=2, action='undeploy', deleting_reads=6,
             then=[(1, 'delete', 'teardown')],
             source='issue 12: user delete timings',
             reproducer=[status('BUILD')],
             fixed=DELETE_WON + [log_has(SEEN_DELETING, TORE_DOWN), clean]),
    Scenario('user-delete-on-reschedule', 'undeploy; the user deletes the '
             'server as the compute manager hands the reschedule back (it '
             'removes the allocation) (2 nodes)', nodes=2, action='undeploy',
             deleting_reads=0, delete_on_reschedule=True,
             source='issue 12: user delete timings',
             reproducer=[status('DELETED'), rescheduled(False)],
             fixed=DELETE_WON + [clean]),
    Scenario('rebuild-user-delete', 'the user deletes the server during the '
             'rebuild of an ACTIVE server (after its 2nd poll)',
             action='delete', kind='rebuild',
             source='issue 12: user delete during a rebuild',
             # The rebuild fails ("provisioning was aborted"): ERROR and a
             # fault on the way out.
             reproducer=[status('DELETED'),
                         fault_created('provisioning was aborted')],
             fixed=[status('DELETED'), never_error, all_steps_fired, clean]),
    # -- issue 25: node leaks, separate bugs (patches/nodeleak/)
    Scenario('user-delete-deploying', 'the user deletes the server while '
             'Ironic deploys its node (`deploying`: locked, the tear-down '
             'request gets 409), 1 node, max_attempts=1', action='delete',
             after_polls=1, deploying_reads=5, max_attempts=1,
             source='LP 2169776',
             reproducer=[status('ERROR'), first_node_leaked],
             fixed=DELETE_WON + [clean]),
    Scenario('reap-deleted', 'the server is deleted while its nova-compute '
             'is down (the API deletes it alone); after a restart the '
             'periodic reaper runs (running_deleted_instance_action=reap)',
             kind='reap', settle_ironic=True, source='LP 2169200',
             reproducer=[status('DELETED'), first_node_leaked],
             fixed=[status('DELETED'),
                    log_has("Destroying instance with name label"), clean]),
    Scenario('reap-deleted-log', 'same, running_deleted_instance_action='
             'log: the reaper only logs the node', kind='reap-log',
             settle_ironic=True, source='LP 2169200',
             reproducer=[status('DELETED'), first_node_leaked],
             fixed=[status('DELETED'), first_node_leaked,
                    log_reports('marked as DELETED but still present on '
                                'host')]),
    Scenario('cleanup-fail-delete', 'the deploy fails, Ironic refuses the '
             "build clean-up's tear-down once (503), then the user deletes "
             'the server in ERROR (1 node, max_attempts=1)', action='fail',
             kind='cleanup-fail-delete', max_attempts=1, settle_ironic=True,
             source='LP 2169779',
             reproducer=[status('DELETED'), fault_created('aborted'),
                         teardown_refused, first_node_leaked],
             fixed=[status('DELETED'), fault_created('aborted'),
                    teardown_refused, clean],
             real='a running Ironic 39.0.0 does not refuse one tear-down '
                  "request with 503 on demand; a 503 forged in Nova's "
                  'session would test the forgery, and a stopped API gives '
                  'a connection error (another driver path)'),
    # -- issue 14: a separate bug (patches/rebuild/)
    Scenario('rebuild-newest-microversion', 'rebuild of an ACTIVE '
             'image-backed server with another image at the newest compute '
             'API microversion (2.93+ asks to re-image a boot volume)',
             kind='rebuild-newest', source='bug KKKKKKK (likely LP 2127017)',
             reproducer=[status('ERROR'),
                         fault_has("Ironic doesn't support rebuilding volume "
                                   "backed instances")],
             fixed=[status('ACTIVE'), rebuilt_with_new_image, clean]),
]


#: The instance another deploy claims the node for (``reassociate``).
OTHER_INSTANCE = '0e7e4b0a-0000-4000-8000-0000000000ff'
BY_NAME = {s.name: s for s in SCENARIOS}

#: The scenarios CI plays against a real Ironic through the whole stack
#: (``run --ironic real``; the CI step "main job vs real Ironic"): the bug
#: with one node and with a reschedule to the other, and a user delete
#: while the failed build waits for Ironic's tear-down.
REAL_CI = ('undeploy-deleting', 'undeploy-deleting-reschedule',
           'user-delete-during-teardown-wait')
TREES = ('reproducer', 'fixed')


def judge(name, tree, obs, outcome_only=False):
    """Problems of one observation against the scenario's checks of
    ``tree`` (``reproducer`` or ``fixed``); an empty list means as
    expected.

    :param outcome_only: skip the checks marked ``detail`` (what the compute
        log says): Nova as released does not log the fix's WARNING lines,
        which is not the bug.
    :raises KeyError: for an unknown scenario or tree.
    """
    scenario = BY_NAME[name]
    if tree not in TREES:
        raise KeyError(tree)
    if obs.get('error'):
        return ['runner error: ' + obs['error'].strip().splitlines()[-1]]
    if not obs.get('settled', True):
        return ['did not settle within the time limit']
    checks = [c for c in getattr(scenario, tree)
              if not (outcome_only and getattr(c, 'detail', False))]
    return [p for p in (check(obs) for check in checks) if p]
