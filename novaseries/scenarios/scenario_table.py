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
    'port_id': "the server's Neutron port (its VIF id), or None",
    'port_device_id': "the server's Neutron port's device_id at the end "
                      '(scenarios with a port)',
    'ironic_calls': 'Ironic calls by proxy method',
    'ironic_calls_total': 'number of Ironic calls',
    'polls': "the driver's polls of the first deploy",
    'calls_per_poll': 'Ironic calls per poll of the first deploy (1.0 healthy)',
    'polls_after_action': "the driver's polls from the operator's action to "
                          'the end',
    'held_polls_after_action': 'of those, polls of a deploy held in wait '
                               'call-back (each waits for a change)',
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
# A check never passes on data it does not have: a field it reads that the
# observation lacks is a problem (``no <field> recorded``), not a pass.
# ``fake_only`` (a text, why): the check cannot be made against a real
# Ironic (``run --ironic real``); judge() skips it there, and
# :func:`unchecked` says so.

#: Fields whose value may be None (a server with no fault, no host, ...);
#: any other field that is None counts as not recorded.
NULLABLE = frozenset(['fault', 'task_state', 'vm_state', 'host', 'node',
                      'error', 'port_device_id', 'port_id'])


def _missing(obs, *keys):
    """``no <keys> recorded`` for the fields the observation lacks, or
    None when it has them all."""
    gone = [k for k in keys if k not in obs or
            (obs[k] is None and k not in NULLABLE)]
    if gone:
        return 'no %s recorded' % ', '.join(gone)


def _format(text, obs):
    """``text`` formatted with the observation: (text, None), or (None,
    the problem) when it names a field the observation lacks."""
    try:
        return text.format(**obs), None
    except (KeyError, IndexError) as e:
        return None, 'no %s recorded (for %r)' % (e.args[0], text)


def _node(obs, node_id):
    """The node ``node_id`` of the observation's ``nodes``, or None."""
    return next((n for n in obs['nodes'] if n.get('id') == node_id), None)


def status(expected):
    def check(obs):
        if 'status' not in obs:
            return 'no status recorded'
        if obs['status'] != expected:
            return 'status %s, expected %s' % (obs['status'], expected)
    check.text = expected
    return check


def status_in(*expected):
    def check(obs):
        if 'status' not in obs:
            return 'no status recorded'
        if obs['status'] not in expected:
            return 'status %s, expected one of %s' % (obs['status'],
                                                      expected)
    check.text = ' or '.join(expected)
    return check


def fault_has(*parts):
    """The server's fault has each of ``parts`` (formatted with the
    observation: ``{server_id}``): the text that names the cause."""
    def check(obs):
        if 'fault' not in obs:
            return 'no fault recorded'
        fault = obs['fault'] or ''
        missing = []
        for part in parts:
            text, problem = _format(part, obs)
            if problem:
                return problem
            if text not in fault:
                missing.append(text)
        if missing:
            return 'fault %r lacks %r' % (fault[:90], missing)
    check.text = 'fault names ' + ', '.join(parts)
    return check


def no_not_found_fault(obs):
    """No fault of the server, shown or created on the way, says that the
    server (which exists) could not be found: what 34.0.0 tells the owner
    of a build whose node was torn down (InstanceNotFound)."""
    problem = _missing(obs, 'server_id', 'fault', 'faults_created')
    if problem:
        return problem
    lie = 'Instance %s could not be found' % obs['server_id']
    for fault in [obs['fault'] or ''] + list(obs['faults_created']):
        if lie in fault:
            return ('fault says the server (which exists) could not be '
                    'found: %r' % fault[:90])


no_not_found_fault.text = "no fault says the server could not be found"


def task_state(expected):
    def check(obs):
        if 'task_state' not in obs:
            return 'no task_state recorded'
        if obs['task_state'] != expected:
            return 'task_state %s, expected %s' % (obs['task_state'],
                                                   expected)
    check.text = 'task_state %s' % expected
    return check


#: What the fault says before IronicNodeLost's message when the build was
#: aborted (BuildAbortException around it).
ABORTED = 'Build of instance {server_id} aborted: '


def lost_fault(aborted=False):
    """The fault is exactly the generic message of the tree's IronicNodeLost
    (``lost_fault`` in the observation: its ``msg_fmt`` with this node and
    this server), which may take the server's own uuid and nothing else
    (not even the node's: the owner reads it); with
    ``aborted``, behind ``Build of instance <uuid> aborted:``."""
    def check(obs):
        problem = _missing(obs, 'fault', 'server_id')
        if problem:
            return problem
        generic = obs.get('lost_fault')
        if generic is None:
            return ('fault %r, not the generic one: the tree has no '
                    'IronicNodeLost' % ((obs['fault'] or '')[:90],))
        if problem := _missing(obs, 'lost_fault_fields'):
            return problem
        extra = set(obs['lost_fault_fields']) - {'instance'}
        if extra:
            return 'IronicNodeLost message takes %s' % sorted(extra)
        want = (ABORTED.format(**obs) if aborted else '') + generic
        if obs['fault'] != want:
            return 'fault %r, expected %r' % (obs['fault'], want)
    check.text = 'fault is the generic IronicNodeLost message' + (
        ' (build aborted)' if aborted else '')
    return check


_UUID = re.compile(r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-'
                   r'[0-9a-f]{12}', re.I)


def own_nodes(obs):
    """The nodes that were the server's: its first deploy's, the one it is
    on, and every node a deploy was requested on (the scenario boots one
    server; ``nodes[].history`` leaves ``available``)."""
    own = {obs.get('first_node'), obs.get('node')}
    for node in obs.get('nodes') or ():
        if any(state != 'available' for state, _ in node.get('history') or ()):
            own.add(node['id'])
    return {n.lower() for n in own if n}


def no_foreign_uuid(obs):
    """No fault of the server (shown or created on the way) names an
    instance or a node other than the server itself and its own nodes
    (:func:`own_nodes`): nothing of another tenant's."""
    problem = _missing(obs, 'server_id', 'nodes', 'first_node', 'fault',
                       'faults_created')
    if problem:
        return problem
    mine = {obs['server_id'].lower()} | own_nodes(obs)
    faults = [obs['fault'] or ''] + list(obs['faults_created'])
    other = obs.get('other_instance')
    for fault in faults:
        foreign = [u for u in _UUID.findall(fault) if u.lower() not in mine]
        if foreign or (other and other in fault):
            return 'fault names another uuid %s: %r' % (
                foreign or [other], fault[:90])


no_foreign_uuid.text = 'no other instance or node in the fault'


def _log_check(parts, present):
    """A ``detail`` check: the compute log (INFO and up of the driver and
    the compute manager) has (``present``) or lacks each of ``parts``,
    formatted with the observation."""
    def check(obs):
        if problem := _missing(obs, 'log'):
            return problem
        log = '\n'.join(obs['log'])
        wrong = []
        for part in parts:
            text, problem = _format(part, obs)
            if problem:
                return problem
            if (text in log) != present:
                wrong.append(text)
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
    """A fault containing ``text`` (formatted with the observation) was
    created for the server (even if the server is gone now)."""
    def check(obs):
        if problem := _missing(obs, 'faults_created'):
            return problem
        want, problem = _format(text, obs)
        if problem:
            return problem
        if not any(want in f for f in obs['faults_created']):
            return 'no fault with %r created (%r)' % (
                want, obs['faults_created'])
    check.text = 'fault %r created' % text
    return check


def only_reads(obs):
    """Nova sent the first node nothing but reads after the action."""
    if problem := _missing(obs, 'writes_after_action'):
        return problem
    if obs['writes_after_action']:
        return 'Nova sent %s to the node after the action' % (
            obs['writes_after_action'],)


only_reads.text = 'only reads of the node after the action'


def never_error(obs):
    """The server never went to ERROR and got no fault, not even on its
    way out (what a user delete must give)."""
    if problem := _missing(obs, 'error_saves', 'faults_created', 'fault'):
        return problem
    problems = []
    if obs['error_saves']:
        problems.append('put in ERROR %s times' % obs['error_saves'])
    if obs['faults_created'] or obs['fault']:
        problems.append('faults created: %r' % [
            f[:60] for f in obs['faults_created'] or [obs['fault']]])
    return '; '.join(problems) or None


never_error.text = 'never ERROR, no fault'


def no_other_deploy(obs):
    """No deploy was requested on any node but the first."""
    if problem := _missing(obs, 'nodes', 'first_node'):
        return problem
    others = [n for n in obs['nodes']
              if n.get('id') != obs['first_node'] and not n.get('deleted')]
    if any('history' not in n for n in others):
        return 'no history recorded of %s' % [
            n.get('name') for n in others if 'history' not in n]
    moved = [n['name'] for n in others
             if n['history'] != [['available', None]]]
    if moved:
        return 'deployed on another node too: %s' % moved


no_other_deploy.text = 'no deploy on another node'


def node_owned_by_other(obs):
    """The first node is the other instance's (Nova left it alone)."""
    if problem := _missing(obs, 'nodes', 'first_node', 'other_instance'):
        return problem
    node = _node(obs, obs['first_node'])
    if node is None or node.get('deleted'):
        return 'the first node %s is not in the nodes recorded' % (
            obs['first_node'],)
    if node.get('instance_id') != obs['other_instance']:
        return 'node %s belongs to %s, expected the other instance' % (
            node.get('name'), node.get('instance_id'))


node_owned_by_other.text = "node is the other instance's"


def all_steps_fired(obs):
    """Every step of the scenario happened (a step whose poll never came
    did not: then the scenario did not test its timing)."""
    if problem := _missing(obs, 'definition', 'hooks_fired'):
        return problem
    sc = obs['definition']
    want = (1 if sc.get('action') else 0) + len(sc.get('then') or []) + \
        (1 if sc.get('delete_on_reschedule') else 0)
    fired = obs['hooks_fired']
    if len(fired) < want:
        return 'only %d of %d steps happened: %s' % (len(fired), want, fired)


all_steps_fired.text = 'every step happened'


def teardown_refused(obs):
    """Ironic refused the build clean-up's tear-down request (the
    ``cleanup-fail-delete`` kind's step): the clean-up failed."""
    if problem := _missing(obs, 'hooks_fired'):
        return problem
    if not any(h.startswith('refuse-teardown@') for h in obs['hooks_fired']):
        return 'no tear-down request was refused'


teardown_refused.text = "the clean-up's tear-down request was refused"


def first_node_leaked(obs):
    """The first node still carries the server's instance."""
    if problem := _missing(obs, 'nodes', 'first_node', 'server_id'):
        return problem
    node = _node(obs, obs['first_node']) or {'deleted': True}
    if node.get('deleted') or node.get('instance_id') != obs['server_id']:
        return 'the first node no longer carries the server'


first_node_leaked.text = "the first node keeps the server's instance"


def on_other_node(obs):
    if problem := _missing(obs, 'node', 'first_node'):
        return problem
    if obs['node'] in (None, obs['first_node']):
        return 'not rescheduled to another node (node %s)' % obs['node']


on_other_node.text = 'on the alternate node'


def rebuilt_with_new_image(obs):
    """The first node carries the image the server was rebuilt with."""
    if problem := _missing(obs, 'nodes', 'first_node', 'rebuild_image'):
        return problem
    node = _node(obs, obs['first_node']) or {}
    if node.get('image_source') != obs['rebuild_image']:
        return 'node image %s, not the rebuild image %s' % (
            node.get('image_source'), obs['rebuild_image'])


rebuilt_with_new_image.text = 'node redeployed with the new image'


def rescheduled(expected):
    def check(obs):
        if problem := _missing(obs, 'build_results'):
            return problem
        did = 'rescheduled' in obs['build_results']
        if did != expected:
            return 'build %s rescheduled (results %s)' % (
                'was' if did else 'was not', obs['build_results'])
    check.text = 'rescheduled' if expected else 'not rescheduled'
    return check


#: What a node may keep of a server: (text, key of the node's view).
KEPT = (('instance', 'instance_id'), ('instance_info', 'instance_info'),
        ('VIFs', 'vifs'))
#: Provision states of a node that Ironic has freed or is freeing.
FREEING = frozenset(['available', 'deleting', 'cleaning', 'clean wait'])
#: Why the port's VIF on the nodes is not checked against a real Ironic.
NOOP_VIFS = ("VIFs on the nodes: the real Ironic's noop network interface "
             'attaches none (vifs is always empty); the port\'s device_id '
             'is still checked')


def _freed(node, server_id):
    """Ironic has freed the node of the server or is freeing it: the node
    is gone, carries another instance or none, or is being torn down."""
    return (node is None or node.get('deleted') or
            node.get('instance_id') != server_id or
            node.get('provision_state') in FREEING or
            node.get('target_provision_state') == 'available')


def leftovers(obs, claim_kept=False):
    """What the server left behind, or where Nova and Ironic disagree
    about it, as short texts (empty: nothing).

    An ACTIVE server holds exactly one allocation, on the node it is on
    (placement usage 1 there, 0 everywhere else), and that node is
    ``active`` and carries it (with its port, the port's VIF); its port is
    bound to it.  Any other server holds no allocation and no usage: a
    failed build clears the host and removes the allocation, and so does
    a failed rebuild (Nova deletes the allocation of the node it scheduled
    the rebuild to).  An ERROR server's host and node are both set or
    both clear, and its node, if any, is one Ironic has.  Every node that
    is not the ACTIVE server's own is ``available`` and keeps nothing of
    the server; a node that another instance has by now is not the
    server's to clean, but it must not keep the server's VIF.
    ``claim_kept``: the ERROR server keeps its host, node, allocation and
    usage (see :func:`claim_kept`); Ironic must then still show that node
    carrying the server (no claim on a node Ironic freed or is freeing).
    A field these rules need that the observation lacks is a leftover
    text (``no <field> recorded``).
    """
    need = _missing(obs, 'status', 'server_id', 'usages', 'allocations',
                    'nodes', 'definition')
    if need:
        return [need]
    sid, final = obs['server_id'], obs['status']
    placed = final == 'ACTIVE'
    holds = placed or claim_kept
    port = bool(obs['definition'].get('port'))
    left = []
    own = None
    if holds or final == 'ERROR':
        need = _missing(obs, 'host', 'node')
        if need:
            return [need]
        own = obs['node']
        if bool(obs['host']) != bool(own) or (holds and not own):
            left.append('host %s and node %s disagree' % (obs['host'], own))
        if own and (_node(obs, own) or {'deleted': True}).get('deleted'):
            left.append('on node %s, which Ironic does not have' % own)
    if port:
        need = _missing(obs, 'port_id', 'port_device_id')
        if need:
            return [need]
    names = {n['id']: n.get('name') or n['id'] for n in obs['nodes']}
    mine = {own} if holds and own else set()
    for rp in sorted(obs['allocations']):
        freed = _freed(_node(obs, rp), sid)
        if rp not in mine or freed:
            left.append('allocation on %s%s' % (
                names.get(rp, rp), ', which Ironic has freed or is freeing'
                if freed else ''))
    for rp in sorted(mine - set(obs['allocations'])):
        left.append('no allocation on its node %s' % names.get(rp, rp))
    for rp, used in sorted(obs['usages'].items()):
        if used != (1 if rp in mine else 0):
            left.append('placement usage %s on %s, expected %s' % (
                used, names.get(rp, rp), int(rp in mine)))
    vif = obs.get('port_id') if port else None
    real = obs.get('backend') == REAL
    for node in obs['nodes']:
        if node.get('deleted'):
            continue
        name = node.get('name') or node['id']
        vifs = node.get('vifs') or []
        if node['id'] in mine:
            state = node.get('provision_state')
            if node.get('instance_id') != sid or (placed and
                                                  state != 'active'):
                left.append('its node %s is %s for %s' % (
                    name, state, node.get('instance_id')))
            elif vif and not real and vif not in vifs:
                left.append("its node %s lacks the port's VIF" % name)
            continue
        if node.get('instance_id') not in (None, sid):
            # another instance's node now: not ours to clean
            if vif and vif in vifs:
                left.append("%s (another instance's) keeps the server's "
                            'VIF' % name)
            continue
        if node.get('provision_state') != 'available':
            left.append('%s %s' % (name, node.get('provision_state')))
        kept = [what for what, key in KEPT if node.get(key)]
        if kept:
            left.append('%s keeps %s' % (name, '/'.join(kept)))
    if port and placed and obs['port_device_id'] != sid:
        left.append('port not bound to the server (device_id %s)' %
                    obs['port_device_id'])
    if port and final == 'DELETED' and obs['port_device_id']:
        left.append('port still bound to the deleted server')
    return left


def clean(obs):
    """Nothing left behind: allocations, usage, nodes, VIFs, ports; an
    ACTIVE server on its node only, as Ironic shows it (:func:`leftovers`)."""
    left = leftovers(obs)
    return ('left behind: ' + '; '.join(left)) if left else None


clean.text = 'nothing left behind'


def claim_kept(obs):
    """The server in ERROR keeps its host, node, allocation and placement
    usage until it is deleted, on the node that Ironic still shows
    carrying it (its clean-up failed), and the other nodes are clean: a
    build whose clean-up failed keeps what its delete needs (LP 2169779).
    A claim on a node that Ironic freed or is freeing is a leftover."""
    need = _missing(obs, 'host', 'node', 'usages', 'allocations')
    if need:
        return need
    node = obs['node']
    if not obs['host'] or not node or node not in obs['allocations'] or \
            obs['usages'].get(node) != 1:
        return ('the claim was not kept: host %s, node %s, placement usage '
                '%s, allocations %s' % (
                    obs['host'], node, obs['usages'].get(node),
                    sorted(obs['allocations'])))
    left = leftovers(obs, claim_kept=True)
    if left:
        return 'left behind: ' + '; '.join(left)


claim_kept.text = ('host, node, allocation and usage kept for the delete '
                   '(LP 2169779); the other nodes clean')


def recovery(**expected):
    """The operator recovery steps (doc/operators.rst) showed this."""
    def check(obs):
        if problem := _missing(obs, 'recovery'):
            return problem
        seen = obs['recovery']
        wrong = {k: seen.get(k, 'not recorded') for k, v in expected.items()
                 if k not in seen or seen[k] != v}
        if wrong:
            return 'recovery steps: %s (expected %s)' % (
                wrong, {k: expected[k] for k in wrong})
    check.text = 'recovery steps'
    return check


def one_call_per_poll(obs):
    if problem := _missing(obs, 'calls_per_poll'):
        return problem
    if obs['calls_per_poll'] != 1.0:
        return '%s Ironic calls per poll' % obs['calls_per_poll']


one_call_per_poll.text = '1 Ironic call per poll'

#: The fixed tree's driver polls after the action, at most, unless a
#: scenario says otherwise (``max_polls``): the fake run's largest count in
#: session 37's run was 13 (``deploy-failed-reschedule``: a failed deploy,
#: its tear-down, the reschedule's whole deploy), plus a margin of 3.
DEFAULT_MAX_POLLS = 16


def polls_at_most(limit):
    """The driver polled at most ``limit`` times from the action to the
    end (``polls_after_action``), polls of a held deploy aside
    (``held_polls_after_action``: the fake Ironic makes each wait for a
    change, so how many there are depends on how soon Nova's threads get
    to the test's action, not on the series): the fix must not make the
    user wait longer than it needs."""
    def check(obs):
        if problem := _missing(obs, 'polls_after_action',
                               'held_polls_after_action'):
            return problem
        held = obs['held_polls_after_action']
        polls = obs['polls_after_action'] - held
        if polls > limit:
            aside = ' (%d of a held deploy aside)' % held if held else ''
            return '%s driver polls after the action%s, at most %d' % (
                polls, aside, limit)
    check.text = 'at most %d driver polls after the action' % limit
    check.fake_only = ("the bound on the driver's polls after the action: "
                       "a real Ironic's polls count its seconds, not the "
                       "fake's reads")
    return check


#: 34.0.0's fault for a build whose node was torn down: the driver's
#: InstanceNotFound for a server that exists, behind the abort.
MISLEADING = fault_has(ABORTED + 'Instance {server_id} could not be found')
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
#: The driver's fault for a deploy that failed in Ironic (its last_error
#: follows: the fake's ``Deploy failed``, a real Ironic's own) ...
DEPLOY_FAILED = 'Failed to provision instance {server_id}: '
#: ... for one an operator aborted (``baremetal node abort``) ...
DEPLOY_ABORTED = ('Failed to provision instance {server_id}: By request, '
                  'the deploy operation was aborted')
#: ... and behind the abort of the build whose clean-up failed.
FAILED_ABORTED = ABORTED + DEPLOY_FAILED
#: The conductor's fault when no alternate is left.
RETRIES_EXCEEDED = ('Exceeded maximum number of retries. Exhausted all '
                    'hosts available for retrying build failures for '
                    'instance {server_id}.')
#: Polls of a ``user-delete`` scenario: its first deploy is held in ``wait
#: call-back`` (a poll every 0.05 s at most) until the runner's main thread
#: has deleted the server, whenever it gets to it (9-10 in session 37's
#: run on a loaded machine).
HELD_MAX_POLLS = 24
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
    :param real_ironic: the end-to-end test of ``novaseries/ironic/
        driver_tests/test_e2e.py`` that plays the scenario at the driver level against
        a real Ironic (``novaseries ironic selftest``), or None.
    :param real: True when ``novaseries run --ironic real`` plays the
        scenario through Nova's whole stack against a real Ironic
        (``real_backend.py``); otherwise why it does not (a text).
    :param max_polls: the fixed tree's driver polls from the action to
        the end (``polls_after_action``), at most (:func:`polls_at_most`,
        added to ``fixed``); default :data:`DEFAULT_MAX_POLLS`.
    """

    def __init__(self, name, title, nodes=1, action=None, after_polls=2,
                 deleting_reads=3, port=False, max_attempts=3, kind='build',
                 deploying_reads=None,
                 source='', then=(), delete_on_reschedule=False,
                 api_max_retries=None, settle_ironic=False, reproducer=(),
                 fixed=(), real_ironic=None, real=True,
                 max_polls=DEFAULT_MAX_POLLS):
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
        self.max_polls = max_polls
        self.fixed = list(fixed) + [polls_at_most(max_polls),
                                    no_foreign_uuid]
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
             max_polls=8, real_ironic='test_undeploy_in_wait_callback'),
    Scenario('undeploy-deleting-port', 'same, server with a port (VIF '
             'detach hits 409 node locked)', action='undeploy',
             deleting_reads=3, port=True, max_attempts=1,
             source='the bug, case (a) with a port',
             reproducer=[status('ERROR'), MISLEADING],
             fixed=[status('ERROR'), no_not_found_fault, lost_fault(),
                    log_has(SEEN_DELETING, TORE_DOWN), only_reads, clean],
             max_polls=8),
    Scenario('undeploy-cleared', 'undeploy in wait call-back, seen only '
             'after the association is cleared (1 node, max_attempts=1)',
             action='undeploy', deleting_reads=0, max_attempts=1,
             source='the bug, case (b)',
             reproducer=[status('BUILD')],
             fixed=[status('ERROR'), lost_fault(),
                    log_has('Ironic node {first_node} was torn down during '
                            'the deploy: it is no longer associated with the '
                            'instance (provision_state '),
                    clean],
             max_polls=6),
    Scenario('maintenance-delete', 'maintenance + node delete during the '
             'deploy (1 node, max_attempts=1)', action='maintenance-delete',
             max_attempts=1, source='the bug, delete variant (c)',
             reproducer=[status('BUILD')],
             fixed=[status('ERROR'), lost_fault(),
                    log_has('Ironic node {first_node} was deleted during the '
                            'deploy'),
                    clean],
             max_polls=6, real_ironic='test_maintenance_and_delete_in_wait_callback'),
    Scenario('undeploy-no-alternate', 'undeploy seen while `deleting`, one '
             'node, default retries (no alternate: ERROR)',
             action='undeploy', deleting_reads=3, port=True,
             source='the bug: no alternate host',
             reproducer=[status('ERROR'), MISLEADING],
             fixed=[status('ERROR'), no_not_found_fault, rescheduled(True),
                    fault_has(RETRIES_EXCEEDED), clean],
             max_polls=9),
    Scenario('undeploy-reschedule', 'undeploy seen while `deleting`, an '
             'alternate node is free (reschedule)', nodes=2,
             action='undeploy', deleting_reads=3, port=True,
             source='the bug: alternate host',
             reproducer=[status('ERROR'), MISLEADING, rescheduled(False)],
             fixed=[status('ACTIVE'), no_not_found_fault, on_other_node,
                    rescheduled(True), clean]),
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
             reproducer=[status('ERROR'), fault_has(DEPLOY_FAILED), clean],
             fixed=[status('ERROR'), fault_has(DEPLOY_FAILED), clean],
             real_ironic='test_deploy_failed'),
    Scenario('deploy-failed-reschedule', 'control: deploy failed, '
             'alternate node free', nodes=2, action='fail',
             source='control',
             reproducer=[status('ACTIVE'), on_other_node, clean],
             fixed=[status('ACTIVE'), on_other_node, clean]),
    Scenario('abort', 'control: operator abort in wait call-back (deploy '
             'failed), 1 node, max_attempts=1', action='abort',
             max_attempts=1, source='control',
             reproducer=[status('ERROR'), fault_has(DEPLOY_ABORTED), clean],
             fixed=[status('ERROR'), fault_has(DEPLOY_ABORTED), clean],
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
             fixed=DELETE_WON + [clean], max_polls=HELD_MAX_POLLS,
             real_ironic='test_user_delete_in_wait_callback'),
    Scenario('user-delete-alternate', 'user delete during the deploy, '
             'alternate node free (no reschedule, no leak)', nodes=2,
             action='user-delete', source='user-delete sibling bug',
             reproducer=[status_in('DELETED', 'ERROR'), rescheduled(True)],
             fixed=DELETE_WON + [clean], max_polls=HELD_MAX_POLLS),
    Scenario('normal-build', 'control: a normal build', action=None,
             source='control',
             reproducer=[status('ACTIVE'), one_call_per_poll, clean],
             fixed=[status('ACTIVE'), one_call_per_poll, clean]),
    Scenario('normal-build-delete', 'control: a normal build, then the '
             'user deletes the ACTIVE server', kind='build-delete',
             source='control',
             reproducer=[status('DELETED'), clean],
             fixed=[status('DELETED'), clean], max_polls=7),
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
              after_delete='DELETED', allocations_after_delete={})],
             max_polls=6),
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
                    only_reads, node_owned_by_other, clean],
             max_polls=2),
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
                    only_reads, clean],
             max_polls=7),
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
                    log_has(LEFT_TO_IRONIC), only_reads, clean],
             max_polls=3),
    Scenario('rebuild-undeploy', 'undeploy in wait call-back during the '
             'rebuild of an ACTIVE server', action='undeploy',
             deleting_reads=1, kind='rebuild', settle_ironic=True,
             source='issue 12: teardown during a rebuild',
             reproducer=[status('REBUILD')],
             fixed=[status('ERROR'), task_state(None), lost_fault(),
                    log_has(SEEN_DELETING), clean],
             max_polls=3),
    # -- issue 12: a user delete wins whenever it arrives during the build
    Scenario('user-delete-after-teardown', 'undeploy, then the user deletes '
             'the server before the driver notices (2 nodes)', nodes=2,
             action='undeploy-delete', deleting_reads=1,
             source='issue 12: user delete timings',
             reproducer=[status_in('DELETED', 'ERROR'), rescheduled(True)],
             fixed=DELETE_WON + [clean], max_polls=5),
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
                 clean],
             max_polls=6),
    Scenario('user-delete-during-teardown-wait', "undeploy; the user "
             "deletes the server while the build waits for Ironic's "
             'tear-down before a reschedule (2 nodes)',
             nodes=2, action='undeploy', deleting_reads=6,
             then=[(1, 'delete', 'teardown')], settle_ironic=True,
             source='issue 12: user delete timings',
             reproducer=[status('BUILD')],
             # since the teardown series' helper-1 review, the delete ends
             # the wait (the driver reads the instance before each poll)
             # and destroy() leaves the tear-down to Ironic, which nobody
             # polls to its end then: settle_ironic
             fixed=DELETE_WON + [log_has(SEEN_DELETING, LEFT_TO_IRONIC),
                                 clean]),
    Scenario('user-delete-on-reschedule', 'undeploy; the user deletes the '
             'server as the compute manager hands the reschedule back (it '
             'removes the allocation) (2 nodes)', nodes=2, action='undeploy',
             deleting_reads=0, delete_on_reschedule=True,
             source='issue 12: user delete timings',
             reproducer=[status('DELETED'), rescheduled(False)],
             fixed=DELETE_WON + [clean], max_polls=6),
    Scenario('rebuild-user-delete', 'the user deletes the server during the '
             'rebuild of an ACTIVE server (after its 2nd poll)',
             action='delete', kind='rebuild',
             source='issue 12: user delete during a rebuild',
             # The rebuild fails ("provisioning was aborted"): ERROR and a
             # fault on the way out.
             reproducer=[status('DELETED'),
                         fault_created('Instance {server_id} provisioning '
                                       'was aborted')],
             fixed=[status('DELETED'), never_error, all_steps_fired, clean],
             max_polls=7),
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
                    log_has("Destroying instance with name label"), clean],
             max_polls=7),
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
             reproducer=[status('DELETED'), fault_created(FAILED_ABORTED),
                         teardown_refused, first_node_leaked],
             fixed=[status('DELETED'), fault_created(FAILED_ABORTED),
                    teardown_refused, clean],
             max_polls=9,
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


#: The backend of ``run --ironic real`` (the observation's ``backend``).
REAL = 'real Ironic'


def scenario_error(obs):
    """Why the observation is no verdict at all: the runner failed, the
    server did not settle, or a step of the scenario never happened (then
    the scenario did not test what it defines, on either tree); None when
    it happened as defined."""
    if obs.get('error'):
        return 'runner error: ' + obs['error'].strip().splitlines()[-1]
    problem = _missing(obs, 'error', 'settled')
    if problem:
        return 'the record is incomplete: ' + problem
    if not obs['settled']:
        return 'did not settle within the time limit'
    steps = all_steps_fired(obs)
    if steps:
        return 'the scenario did not happen as defined: ' + steps


def unchecked(name, obs):
    """What the fixed tree's checks of scenario ``name`` cannot check in
    this observation (texts; empty but against a real Ironic)."""
    if obs.get('backend') != REAL:
        return []
    skipped = [c.fake_only for c in BY_NAME[name].fixed
               if getattr(c, 'fake_only', None)]
    if BY_NAME[name].port:
        skipped.append(NOOP_VIFS)
    return skipped


def judge(name, tree, obs, outcome_only=False):
    """Problems of one observation against the scenario's checks of
    ``tree`` (``reproducer`` or ``fixed``); an empty list means as
    expected.  An observation that is no verdict (:func:`scenario_error`)
    gives that one problem.  Against a real Ironic, the checks marked
    ``fake_only`` are skipped (:func:`unchecked` lists them).

    :param outcome_only: skip the checks marked ``detail`` (what the compute
        log says): Nova as released does not log the fix's WARNING lines,
        which is not the bug.
    :raises KeyError: for an unknown scenario or tree.
    """
    scenario = BY_NAME[name]
    if tree not in TREES:
        raise KeyError(tree)
    broken = scenario_error(obs)
    if broken:
        return [broken]
    real = obs.get('backend') == REAL
    checks = [c for c in getattr(scenario, tree)
              if not (outcome_only and getattr(c, 'detail', False)) and
              not (real and getattr(c, 'fake_only', None))]
    return [p for p in (check(obs) for check in checks) if p]
