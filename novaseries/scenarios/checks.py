"""The observation checks of the main job's scenarios
(``scenario.Scenario``'s ``reproducer`` and ``fixed``): functions of
one observation (a dict, keys ``scenario_table.OBSERVATION``) that return a
problem string or None, and what the other check modules build on
(:func:`missing`, :func:`formatted`, :func:`find_node`, :data:`REAL_IRONIC`,
the ``hooks_fired`` labels: :func:`fired`, :func:`fired_action`).

The end-state invariant is in ``invariant``, the API outage's checks in
``outage_checks``, the bounds on the user's wait in ``bounds``, and the
texts the checks look for in ``texts``.  Standard library only, like the
table: the harness and the scenario player (in Nova's venv) both import
them.
"""

import re

from novaseries.scenarios.texts import ABORTED

#: The backend of ``run --ironic real`` (the observation's ``backend``).
REAL_IRONIC = 'real Ironic'

#: The steps the player records in an observation's ``hooks_fired``
#: (labels made by :func:`fired`) besides the actions of
#: ``scenario.ACTIONS``: the end of an API outage, and Ironic refusing
#: the build clean-up's tear-down (kind ``cleanup-fail-delete``).
API_UP = 'api-up'
REFUSE_TEARDOWN = 'refuse-teardown'
#: The ``hooks_fired`` label of the user's delete at the moment a failed
#: build's allocation is removed for a reschedule
#: (``Scenario.delete_on_reschedule``).
RESCHEDULE_DELETE = 'delete (allocation removed)'
#: When a step ran, in its ``hooks_fired`` label, if not at a poll: on
#: the first read the API refused, or once the build had settled.
FIRST_REFUSED = 'first-refused'
SETTLED = 'settled'


def fired(action, at):
    """The ``hooks_fired`` label of a step: ``action`` (an action, or
    :data:`API_UP`/:data:`REFUSE_TEARDOWN`) run ``at`` a poll count of
    its node (int), or :data:`FIRST_REFUSED`/:data:`SETTLED`."""
    return '%s@%s' % (action, at)


def fired_action(label):
    """The action of a ``hooks_fired`` label made by :func:`fired`;
    None if ``label`` is not one."""
    action, at, _ = label.partition('@')
    return action if at else None


#: The ``hooks_fired`` labels of an outage's end: the API came back on
#: the first read it refused, or once the build had settled; and of the
#: user's delete on that first refused read (``api-down-delete``).
API_UP_AT_REFUSAL = fired(API_UP, FIRST_REFUSED)
API_UP_SETTLED = fired(API_UP, SETTLED)
USER_DELETE_AT_REFUSAL = fired('user-delete', FIRST_REFUSED)

# Each check takes the observation dict (keys: OBSERVATION) and returns a
# problem string or None; ``text`` says what it checks (``run --list``).
# A check never passes on data it does not have: a field it reads that the
# observation lacks is a problem (``no <field> recorded``), not a pass.
# ``fake_only`` (a text, why): the check cannot be made against a real
# Ironic (``run --ironic real``); ``mainjob.judge.problems_of`` skips it
# there, and ``mainjob.judge.unchecked`` says so.

#: Fields whose value may be None (a server with no fault, no host, ...);
#: any other field that is None counts as not recorded.
NULLABLE = frozenset(['fault', 'task_state', 'vm_state', 'host', 'node',
                      'error', 'port_device_id', 'port_id'])


def missing(obs, *keys):
    """``no <keys> recorded`` for the fields the observation lacks, or
    None when it has them all."""
    gone = [k for k in keys if k not in obs or
            (obs[k] is None and k not in NULLABLE)]
    if gone:
        return 'no %s recorded' % ', '.join(gone)


def formatted(text, obs):
    """``text`` formatted with the observation: (text, None), or (None,
    the problem) when it names a field the observation lacks."""
    try:
        return text.format(**obs), None
    except (KeyError, IndexError) as e:
        return None, 'no %s recorded (for %r)' % (e.args[0], text)


def find_node(obs, node_id):
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
            text, problem = formatted(part, obs)
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
    problem = missing(obs, 'server_id', 'fault', 'faults_created')
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


def lost_fault(aborted=False):
    """The fault is exactly the generic message of the tree's IronicNodeLost
    (``lost_fault`` in the observation: its ``msg_fmt`` with this node and
    this server), which may take the server's own uuid and nothing else
    (not even the node's: the owner reads it); with
    ``aborted``, behind ``Build of instance <uuid> aborted:``."""
    def check(obs):
        problem = missing(obs, 'fault', 'server_id')
        if problem:
            return problem
        generic = obs.get('lost_fault')
        if generic is None:
            return ('fault %r, not the generic one: the tree has no '
                    'IronicNodeLost' % ((obs['fault'] or '')[:90],))
        if problem := missing(obs, 'lost_fault_fields'):
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
    problem = missing(obs, 'server_id', 'nodes', 'first_node', 'fault',
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
        if problem := missing(obs, 'log'):
            return problem
        log = '\n'.join(obs['log'])
        wrong = []
        for part in parts:
            text, problem = formatted(part, obs)
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
        if problem := missing(obs, 'faults_created'):
            return problem
        want, problem = formatted(text, obs)
        if problem:
            return problem
        if not any(want in f for f in obs['faults_created']):
            return 'no fault with %r created (%r)' % (
                want, obs['faults_created'])
    check.text = 'fault %r created' % text
    return check


def only_reads(obs):
    """Nova sent the first node nothing but reads after the action."""
    if problem := missing(obs, 'writes_after_action'):
        return problem
    if obs['writes_after_action']:
        return 'Nova sent %s to the node after the action' % (
            obs['writes_after_action'],)


only_reads.text = 'only reads of the node after the action'


def never_error(obs):
    """The server never went to ERROR and got no fault, not even on its
    way out (what a user delete must give)."""
    if problem := missing(obs, 'error_saves', 'faults_created', 'fault'):
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
    if problem := missing(obs, 'nodes', 'first_node'):
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
    if problem := missing(obs, 'nodes', 'first_node', 'other_instance'):
        return problem
    node = find_node(obs, obs['first_node'])
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
    if problem := missing(obs, 'definition', 'hooks_fired'):
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
    if problem := missing(obs, 'hooks_fired'):
        return problem
    if not any(fired_action(h) == REFUSE_TEARDOWN
               for h in obs['hooks_fired']):
        return 'no tear-down request was refused'


teardown_refused.text = "the clean-up's tear-down request was refused"


def all_of(*checks):
    """Every one of ``checks`` holds (for :func:`any_of`)."""
    def check(obs):
        problems = [p for p in (c(obs) for c in checks) if p]
        if problems:
            return '; '.join(problems)
    check.text = ' and '.join(getattr(c, 'text', c.__name__) for c in checks)
    return check


def any_of(*checks):
    """At least one of ``checks`` holds: a reproducer tree whose bug
    shows one way against the fake Ironic and another against a real one
    (say, a teardown accepted in the fake's ``wait call-back`` and refused
    with 409 in a real ``deploying``)."""
    def check(obs):
        problems = [c(obs) for c in checks]
        if all(problems):
            return 'none of: ' + ' | '.join(problems)
    check.text = ' (or) '.join('(%s)' % getattr(c, 'text', c.__name__)
                               for c in checks)
    return check


def first_node_leaked(obs):
    """The first node still carries the server's instance."""
    if problem := missing(obs, 'nodes', 'first_node', 'server_id'):
        return problem
    node = find_node(obs, obs['first_node']) or {'deleted': True}
    if node.get('deleted') or node.get('instance_id') != obs['server_id']:
        return 'the first node no longer carries the server'


first_node_leaked.text = "the first node keeps the server's instance"


def on_other_node(obs):
    if problem := missing(obs, 'node', 'first_node'):
        return problem
    if obs['node'] in (None, obs['first_node']):
        return 'not rescheduled to another node (node %s)' % obs['node']


on_other_node.text = 'on the alternate node'


def rebuilt_with_new_image(obs):
    """The first node carries the image the server was rebuilt with."""
    if problem := missing(obs, 'nodes', 'first_node', 'rebuild_image'):
        return problem
    node = find_node(obs, obs['first_node']) or {}
    if node.get('image_source') != obs['rebuild_image']:
        return 'node image %s, not the rebuild image %s' % (
            node.get('image_source'), obs['rebuild_image'])


rebuilt_with_new_image.text = 'node redeployed with the new image'


def rescheduled(expected):
    def check(obs):
        if problem := missing(obs, 'build_results'):
            return problem
        did = 'rescheduled' in obs['build_results']
        if did != expected:
            return 'build %s rescheduled (results %s)' % (
                'was' if did else 'was not', obs['build_results'])
    check.text = 'rescheduled' if expected else 'not rescheduled'
    return check


def recovery(**expected):
    """The operator recovery steps (doc/operators.rst) showed this."""
    def check(obs):
        if problem := missing(obs, 'recovery'):
            return problem
        seen = obs['recovery']
        wrong = {k: seen.get(k, 'not recorded') for k, v in expected.items()
                 if k not in seen or seen[k] != v}
        if wrong:
            return 'recovery steps: %s (expected %s)' % (
                wrong, {k: expected[k] for k in wrong})
    check.text = 'recovery steps'
    return check


#: 34.0.0's fault for a build whose node was torn down: the driver's
#: InstanceNotFound for a server that exists, behind the abort.
MISLEADING = fault_has(ABORTED + 'Instance {server_id} could not be found')
#: A user delete during the build: it wins.
DELETE_WON = [status('DELETED'), rescheduled(False), never_error,
              no_other_deploy, all_steps_fired]
