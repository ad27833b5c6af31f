"""The checks of the main job's scenarios (``scenario_table.Scenario``'s
``reproducer`` and ``fixed``): functions of one observation (a dict, keys
``scenario_table.OBSERVATION``) that return a problem string or None, the
texts they look for, and :func:`leftovers` (what a server left behind).

Standard library only, like the table: the harness and the scenario player
(in Nova's venv) both import it.
"""

import re

#: The backend of ``run --ironic real`` (the observation's ``backend``).
REAL = 'real Ironic'

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


def missing(obs, *keys):
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
        if problem := missing(obs, 'faults_created'):
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
    if not any(h.startswith('refuse-teardown@') for h in obs['hooks_fired']):
        return 'no tear-down request was refused'


teardown_refused.text = "the clean-up's tear-down request was refused"


def outage(back, delete=False):
    """The scenario's API outage happened as defined: the API went down
    (``api-blip``/``api-down``/``api-down-delete`` in ``hooks_fired``)
    and, with ``back``, came back on the event of the first read it
    refused (``api-up@first-refused``), else only once the build had
    settled (``api-up@settled``); with ``delete``, the user deleted the
    server on the event of the first read it refused
    (``user-delete@first-refused``), before the API came back."""
    want = 'api-up@first-refused' if back else 'api-up@settled'

    def check(obs):
        if problem := missing(obs, 'hooks_fired'):
            return problem
        fired = obs['hooks_fired']
        downs = [i for i, h in enumerate(fired)
                 if h.startswith(('api-blip@', 'api-down@',
                                  'api-down-delete@'))]
        if not downs:
            return 'the API never went down: %s' % fired
        if want not in fired[downs[0]:]:
            return 'the API did not come back as defined (%s): %s' % (
                want, fired)
        if delete and 'user-delete@first-refused' not in fired[
                downs[0]:fired.index(want, downs[0])]:
            return ('the user did not delete the server at the first read '
                    'the API refused: %s' % fired)
    check.text = ('the API went down and came back right after the first '
                  'read it refused' if back else
                  'the API went down and came back once the build settled')
    if delete:
        check.text = ('the API went down, the user deleted the server at '
                      'the first read it refused, and the API came back '
                      'once the build settled')
    return check


def at_api_back(status, fault=None, claim_kept=None):
    """What the server was when the API came back, before the user's
    delete (``at_api_back``, kind ``outage-delete``): its ``status``, its
    ``fault`` exactly (formatted with the observation; None: not
    checked), and
    with ``claim_kept`` True, its host, node and allocation kept on the
    first node, which Ironic still shows carrying it (LP 2169779); False:
    no host and no allocation."""
    def check(obs):
        if problem := missing(obs, 'at_api_back', 'first_node', 'server_id'):
            return problem
        seen = obs['at_api_back']
        problems = []
        if seen.get('status') != status:
            problems.append('status %s, expected %s' % (seen.get('status'),
                                                        status))
        if fault is not None:
            want, problem = _format(fault, obs)
            if problem:
                return problem
            if seen.get('fault') != want:
                problems.append('fault %r, expected %r' % (seen.get('fault'),
                                                           want))
        first = obs['first_node']
        kept = (bool(seen.get('host')) and seen.get('node') == first and
                first in (seen.get('allocations') or ()) and
                seen.get('first_node_instance') == obs['server_id'])
        gone = not seen.get('host') and not seen.get('allocations')
        if claim_kept is True and not kept:
            problems.append('claim not kept: host %s, node %s, allocations '
                            '%s, first node carries %s' % (
                                seen.get('host'), seen.get('node'),
                                seen.get('allocations'),
                                seen.get('first_node_instance')))
        elif claim_kept is False and not gone:
            problems.append('claim kept: host %s, allocations %s' % (
                seen.get('host'), seen.get('allocations')))
        if problems:
            return 'when the API came back: ' + '; '.join(problems)
    check.text = 'when the API came back: %s%s%s' % (
        status, ', fault %r' % fault if fault else '',
        {True: ', host/node/allocation kept', False: ', no host/allocation',
         None: ''}[claim_kept])
    return check


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
    node = _node(obs, obs['first_node']) or {'deleted': True}
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
    node = _node(obs, obs['first_node']) or {}
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


#: What a node may keep of a server: (text, key of the node's view).
KEPT = (('instance', 'instance_id'), ('instance_info', 'instance_info'),
        ('VIFs', 'vifs'))
#: Provision states of a node that Ironic has freed or is freeing.
FREEING = frozenset(['available', 'deleting', 'cleaning', 'clean wait'])
#: Provision states a deploy leaves a node in (with the deploy's instance
#: associated): a node that carries another instance is in one of them,
#: unless someone tears that deploy down.
DEPLOYED = frozenset(['deploying', 'wait call-back', 'active',
                      'deploy failed'])
#: Why the port's VIF on the nodes is not checked against a real Ironic.
NOOP_VIFS = ("VIFs on the nodes: the real Ironic's noop network interface "
             'attaches none (vifs is always empty); the port\'s device_id '
             'is still checked')

#: The parts of the end-state invariant (:func:`leftovers`, which every
#: scenario's fixed tree is judged by: :func:`end_state`), name -> what it
#: requires.  A scenario may waive a part, naming it and why
#: (``Scenario(waive={part: reason})``); the invariant then checks every
#: other part.
END_STATE_PARTS = {
    'host-node': "an ACTIVE or ERROR server's host and node are both set "
                 'or both clear, on a node Ironic has',
    'allocation': "placement allocations and usage only on an ACTIVE "
                  "server's own node (or a kept claim's), none on a node "
                  'Ironic freed or is freeing',
    'own-node': "the node an ACTIVE server (or a kept claim) is on carries "
                'it (``active`` for an ACTIVE server), with its port\'s VIF',
    'node-kept': 'every other node without another instance is '
                 '``available`` and keeps no instance, instance_info or VIF '
                 'of the server',
    'foreign-node': 'a node that carries another instance is in a state '
                    "that instance's deploy leaves it in, not being torn "
                    "down, and keeps neither the server's VIF nor its "
                    'image',
    'port': 'the port is bound to an ACTIVE server (and to an ERROR one '
            'that keeps its claim), and not bound to a deleted server nor '
            'to one in ERROR without a host (a failed build unbinds it)',
}


def _freed(node, server_id):
    """Ironic has freed the node of the server or is freeing it: the node
    is gone, carries another instance or none, or is being torn down."""
    return (node is None or node.get('deleted') or
            node.get('instance_id') != server_id or
            node.get('provision_state') in FREEING or
            node.get('target_provision_state') == 'available')


def _leftover_parts(obs, claim_kept):
    """:func:`leftovers` as ``(part of END_STATE_PARTS, text)`` pairs; a
    field the rules need that the observation lacks is ``(None, 'no
    <field> recorded')``, which no waiver covers."""
    need = missing(obs, 'status', 'server_id', 'usages', 'allocations',
                   'nodes', 'definition')
    if need:
        return [(None, need)]
    sid, final = obs['server_id'], obs['status']
    placed = final == 'ACTIVE'
    holds = placed or claim_kept
    port = bool(obs['definition'].get('port'))
    left = []
    own = None
    if holds or final == 'ERROR':
        need = missing(obs, 'host', 'node')
        if need:
            return [(None, need)]
        own = obs['node']
        if bool(obs['host']) != bool(own) or (holds and not own):
            left.append(('host-node', 'host %s and node %s disagree' % (
                obs['host'], own)))
        if own and (_node(obs, own) or {'deleted': True}).get('deleted'):
            left.append(('host-node', 'on node %s, which Ironic does not '
                         'have' % own))
    if port:
        need = missing(obs, 'port_id', 'port_device_id')
        if need:
            return [(None, need)]
    names = {n['id']: n.get('name') or n['id'] for n in obs['nodes']}
    mine = {own} if holds and own else set()
    for rp in sorted(obs['allocations']):
        freed = _freed(_node(obs, rp), sid)
        if rp not in mine or freed:
            left.append(('allocation', 'allocation on %s%s' % (
                names.get(rp, rp), ', which Ironic has freed or is freeing'
                if freed else '')))
    for rp in sorted(mine - set(obs['allocations'])):
        left.append(('allocation', 'no allocation on its node %s' %
                     names.get(rp, rp)))
    for rp, used in sorted(obs['usages'].items()):
        if used != (1 if rp in mine else 0):
            left.append(('allocation', 'placement usage %s on %s, expected '
                         '%s' % (used, names.get(rp, rp), int(rp in mine))))
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
                left.append(('own-node', 'its node %s is %s for %s' % (
                    name, state, node.get('instance_id'))))
            elif vif and not real and vif not in vifs:
                left.append(('own-node', "its node %s lacks the port's VIF"
                             % name))
            continue
        if node.get('instance_id') not in (None, sid):
            # another instance's node now: not ours to clean, but as that
            # instance's deploy left it
            left += [('foreign-node', text)
                     for text in _foreign_node(obs, node, name, vif)]
            continue
        if node.get('provision_state') != 'available':
            left.append(('node-kept', '%s %s' % (
                name, node.get('provision_state'))))
        kept = [what for what, key in KEPT if node.get(key)]
        if kept:
            left.append(('node-kept', '%s keeps %s' % (name, '/'.join(kept))))
    device = obs['port_device_id'] if port else None
    if port and holds and device != sid:
        left.append(('port', 'port not bound to the server (device_id %s)'
                     % device))
    if port and final == 'DELETED' and device:
        left.append(('port', 'port still bound to the deleted server'))
    if port and final == 'ERROR' and not holds and not obs['host'] and \
            device == sid:
        left.append(('port', 'port still bound to the server in ERROR '
                     'without a host'))
    return left


def _foreign_node(obs, node, name, vif):
    """What is wrong with a node that carries another instance (texts):
    it must be in a state that instance's deploy leaves it in
    (:data:`DEPLOYED`, not being torn down) and keep nothing of the
    server: not its VIF, not its image (``instance_info``; the scenarios'
    other deploy sends none to the fake Ironic and ``other-image`` to a
    real one)."""
    problems = []
    state = node.get('provision_state')
    if state not in DEPLOYED or \
            node.get('target_provision_state') == 'available':
        problems.append('%s (carrying %s) is %s -> %s, not as its deploy '
                        'left it' % (name, node.get('instance_id'), state,
                                     node.get('target_provision_state')))
    if vif and vif in (node.get('vifs') or []):
        problems.append("%s (another instance's) keeps the server's VIF"
                        % name)
    if node.get('image_source'):
        if problem := missing(obs, 'image'):
            return problems + [problem]
        if node['image_source'] in (obs['image'], obs.get('rebuild_image')):
            problems.append("%s (another instance's) keeps the server's "
                            'image in its instance_info' % name)
    return problems


def leftovers(obs, claim_kept=False, waive=()):
    """What the server left behind, or where Nova and Ironic disagree
    about it, as short texts (empty: nothing): the end-state invariant,
    part by part (:data:`END_STATE_PARTS`), without the parts in
    ``waive``.

    An ACTIVE server holds exactly one allocation, on the node it is on
    (placement usage 1 there, 0 everywhere else), and that node is
    ``active`` and carries it (with its port, the port's VIF); its port is
    bound to it.  Any other server holds no allocation and no usage: a
    failed build clears the host and removes the allocation, and so does
    a failed rebuild (Nova deletes the allocation of the node it scheduled
    the rebuild to).  An ERROR server's host and node are both set or
    both clear, and its node, if any, is one Ironic has; one without a
    host has its port unbound (the failed build deallocated its network).
    Every node that is not the ACTIVE server's own is ``available`` and
    keeps nothing of the server; a node that another instance has by now
    is not the server's to clean, but it must be as that instance's deploy
    left it and keep nothing of the server.
    ``claim_kept``: the ERROR server keeps its host, node, allocation,
    usage and port binding (see :func:`end_state`); Ironic must then
    still show that node carrying the server (no claim on a node Ironic
    freed or is freeing).
    A field these rules need that the observation lacks is a leftover
    text (``no <field> recorded``), whatever is waived.
    """
    return [text for part, text in _leftover_parts(obs, claim_kept)
            if part not in waive]


def _claim_problem(obs):
    """Why the ERROR server did not keep its claim (host, node, allocation
    and usage on its node), or None."""
    need = missing(obs, 'host', 'node', 'usages', 'allocations')
    if need:
        return need
    node = obs['node']
    if not obs['host'] or not node or node not in obs['allocations'] or \
            obs['usages'].get(node) != 1:
        return ('the claim was not kept: host %s, node %s, placement usage '
                '%s, allocations %s' % (
                    obs['host'], node, obs['usages'].get(node),
                    sorted(obs['allocations'])))


def end_state(claim_kept=False, waive=None):
    """The end-state invariant as a check (:func:`leftovers`): what
    ``Scenario`` adds to every fixed column.

    :param claim_kept: the server in ERROR keeps its host, node,
        allocation, placement usage and port binding until it is deleted,
        on the node that Ironic still shows carrying it (its clean-up
        failed: a build whose clean-up failed keeps what its delete
        needs); the other nodes are clean.  A claim on a node that
        Ironic freed or is freeing is a leftover.
    :param waive: ``{part: why}``: parts of :data:`END_STATE_PARTS` not
        checked, each with the reason (in the check's text).
    :raises ValueError: a part that is not in END_STATE_PARTS, or one
        waived without a reason.
    """
    waive = dict(waive or {})
    unknown = sorted(set(waive) - set(END_STATE_PARTS))
    if unknown:
        raise ValueError('unknown part(s) of the end-state invariant: %s '
                         '(known: %s)' % (', '.join(unknown),
                                          ', '.join(END_STATE_PARTS)))
    unsaid = sorted(part for part, why in waive.items()
                    if not isinstance(why, str) or not why.strip())
    if unsaid:
        raise ValueError('a waived part of the end-state invariant needs '
                         'its reason: %s' % ', '.join(unsaid))

    def check(obs):
        if claim_kept and (problem := _claim_problem(obs)):
            return problem
        left = leftovers(obs, claim_kept=claim_kept, waive=waive)
        if left:
            return 'left behind: ' + '; '.join(left)
    check.text = ('host, node, allocation, usage and port binding kept for '
                  'the delete; nothing else left behind'
                  if claim_kept else 'nothing left behind')
    if waive:
        check.text += ' (not checked: %s)' % '; '.join(
            '%s: %s' % item for item in sorted(waive.items()))
    check.end_state = True
    check.claim_kept = claim_kept
    check.waive = waive
    return check


#: Nothing left behind: allocations, usage, nodes, VIFs, ports; an ACTIVE
#: server on its node only, as Ironic shows it (:func:`leftovers`).
clean = end_state()
#: The server in ERROR keeps its claim for its delete, and nothing else is
#: left (``end_state(claim_kept=True)``).
claim_kept = end_state(claim_kept=True)
#: ``Scenario(bug=[END_STATE])``: the scenario's own end-state invariant
#: (which ``Scenario`` builds) is the bug's symptom.
END_STATE = 'the end-state invariant'


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


def one_call_per_poll(obs):
    if problem := missing(obs, 'calls_per_poll'):
        return problem
    if obs['calls_per_poll'] != 1.0:
        return '%s Ironic calls per poll' % obs['calls_per_poll']


one_call_per_poll.text = '1 Ironic call per poll'

#: The fixed tree's driver polls after the action, at most, unless a
#: scenario says otherwise (``max_polls``): the fake run's largest count
#: measured is 13 (``deploy-failed-reschedule``: a failed deploy,
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
        if problem := missing(obs, 'polls_after_action',
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


#: Seconds a real Ironic may take per driver poll that the fake run's
#: bound allows (``max_polls``): a fake poll stands for one real state of
#: the node or less, which lasts up to about 8 s (``deleting`` with the
#: harness's ``[fake]`` delays of 2 s; ``deploying`` about 7 s) and is
#: polled 1 s apart (``real_backend.API_RETRY_INTERVAL``): 4 s per poll,
#: on average, leaves room for the longest of them.
REAL_SECONDS_PER_POLL = 4
#: ... and at least this many seconds (an operator's undeploy that waits
#: for Ironic's whole tear-down before it goes on, ``reassociate``, takes
#: 10-15 s itself).
REAL_MIN_SECONDS = 30


def real_seconds(max_polls):
    """The default bound of :func:`seconds_at_most` for a scenario whose
    fake run may take ``max_polls`` driver polls after the action."""
    return max(REAL_MIN_SECONDS, REAL_SECONDS_PER_POLL * max_polls)


def seconds_at_most(limit):
    """Against a real Ironic, the wall time from the action to the end
    (``wall_seconds_after_action``) is at most ``limit`` seconds: the
    user's wait in real time, where the fake run bounds the driver's
    polls (:func:`polls_at_most`).  Not checked against the fake Ironic
    (``real_only``): at ``api_retry_interval = 0`` its wall time is the
    CPU and the threads' scheduling of the test process (several times
    longer in threading mode, and on a loaded machine), not Nova's
    waits; its polls are what it bounds, and a fake scenario that hangs
    does not settle, which is an error."""
    def check(obs):
        if problem := missing(obs, 'wall_seconds_after_action'):
            return problem
        wall = obs['wall_seconds_after_action']
        if wall > limit:
            return '%.1f s from the action to the end, at most %d s' % (
                wall, limit)
    check.text = ('at most %d s from the action to the end (real Ironic)'
                  % limit)
    check.real_only = ('the wall time from the action to the end: at '
                       "api_retry_interval 0 the fake's is the test "
                       "process's CPU and scheduling; its polls are "
                       'bounded instead')
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
#: The fix's fault for a deploy wait that could not reach the Bare Metal
#: API within [ironic] api_max_retries (bug BBBBBBB) ...
API_UNREACHABLE = 'The Bare Metal API could not be reached.'
#: ... behind the abort, when the build's clean-up could not reach it
#: either.
API_UNREACHABLE_ABORTED = ABORTED + API_UNREACHABLE
#: The abort of a build whose deploy wait ended as the user's delete
#: (UnexpectedDeletingTaskStateError: the instance's task_state is
#: ``deleting``) and whose clean-up could not reach the API, where a deploy
#: wait that gave up would give :data:`API_UNREACHABLE_ABORTED`.
DELETING_ABORTED = ABORTED + 'Conflict updating instance {server_id}. '
#: What the fix's deploy wait logs when it gives up on the API: not when a
#: user delete ended it.
DEPLOY_WAIT_GAVE_UP = ('Could not reach the Bare Metal API while waiting '
                       'for the deploy of baremetal node {first_node}')
#: What the compute manager's fault says when the build's clean-up could
#: not connect to the API (keystoneauth's ConnectFailure) on a tree
#: without the fix: the build is aborted.
CONNECT_FAILED_ABORTED = ABORTED + 'Unable to establish connection to '
#: ... or the failed read's own error (openstacksdk's, of a 503 answer),
#: when the clean-up failed otherwise (a real Ironic refuses the tear-down
#: of a node in ``deploying`` with 409).
HTTP_503_ABORTED = ABORTED + 'HttpException: 503'
#: The conductor's fault when no alternate is left.
RETRIES_EXCEEDED = ('Exceeded maximum number of retries. Exhausted all '
                    'hosts available for retrying build failures for '
                    'instance {server_id}.')
#: Polls of a ``user-delete`` scenario: its first deploy is held in ``wait
#: call-back`` (a poll every 0.05 s at most) until the player's main thread
#: has deleted the server, whenever it gets to it (9-10 measured on a
#: loaded machine).
HELD_MAX_POLLS = 24
#: A user delete during the build: it wins.
DELETE_WON = [status('DELETED'), rescheduled(False), never_error,
              no_other_deploy, all_steps_fired]
