"""The end-state invariant every scenario's fixed tree is judged by
(:func:`end_state`), part by part (:data:`END_STATE_PARTS`), and what a
server left behind (:func:`leftovers`, which the report lists too).

Standard library only: the scenario player imports it in Nova's venv.
"""

from novaseries.scenarios.checks import find_node, missing, REAL_IRONIC

#: What a node may keep of a server: (text, key of the node's view).
KEPT = (('instance', 'instance_id'), ('instance_info', 'instance_info'),
        ('VIFs', 'vifs'))
#: Provision states of a node that Ironic has freed or is freeing.
FREEING = frozenset(['available', 'deleting', 'cleaning', 'clean wait'])
#: The provision state a failed deploy leaves a node in, the instance
#: still associated.
FAILED_DEPLOY = 'deploy failed'
#: Provision states a deploy leaves a node in (with the deploy's instance
#: associated): a node that carries another instance is in one of them,
#: unless someone tears that deploy down.
DEPLOYED = frozenset(['deploying', 'wait call-back', 'active',
                      FAILED_DEPLOY])
#: The end-state invariant's text for a server on a node Ironic does not
#: have (part ``host-node``), of the node's id.
NODE_GONE = 'on node %s, which Ironic does not have'
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


def noop_vifs(obs):
    """True when the observation's Ironic attaches no VIF: a real one
    (``backend``) with the noop network interface (Ironic 39.0.0 here);
    pike's Ironic 9.1.7 uses ``flat`` and says so (``vifs_attached``)."""
    return obs.get('backend') == REAL_IRONIC and not obs.get('vifs_attached')


def _freed(node, server_id):
    """Ironic has freed the node of the server or is freeing it: the node
    is gone, carries another instance or none, or is being torn down."""
    return (node is None or node.get('deleted') or
            node.get('instance_id') != server_id or
            node.get('provision_state') in FREEING or
            node.get('target_provision_state') == 'available')


def leftover_parts(obs, claim_kept, stays_on_node=False):
    """:func:`leftovers` as ``(part of END_STATE_PARTS, text)`` pairs; a
    field the rules need that the observation lacks is ``(None, 'no
    <field> recorded')``, which no waiver covers.

    :param stays_on_node: the server in ERROR stays on its node, as a
        failed rebuild leaves it (Nova keeps the server on its host; the
        node keeps the instance, as the failed deploy left it, for the
        next rebuild or the delete): that node may be one an operator
        deleted, or carry the server in :data:`FAILED_DEPLOY`; otherwise
        it is checked as any other.
    """
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
    stays = False
    if holds or final == 'ERROR':
        need = missing(obs, 'host', 'node')
        if need:
            return [(None, need)]
        own = obs['node']
        if bool(obs['host']) != bool(own) or (holds and not own):
            left.append(('host-node', 'host %s and node %s disagree' % (
                obs['host'], own)))
        stays = stays_on_node and final == 'ERROR'
        if own and not stays and \
                (find_node(obs, own) or {'deleted': True}).get('deleted'):
            left.append(('host-node', NODE_GONE % own))
    if port:
        need = missing(obs, 'port_id', 'port_device_id')
        if need:
            return [(None, need)]
    names = {n['id']: n.get('name') or n['id'] for n in obs['nodes']}
    mine = {own} if holds and own else set()
    for rp in sorted(obs['allocations']):
        freed = _freed(find_node(obs, rp), sid)
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
    no_vifs = noop_vifs(obs)
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
            elif vif and not no_vifs and vif not in vifs:
                left.append(('own-node', "its node %s lacks the port's VIF"
                             % name))
            continue
        if node.get('instance_id') not in (None, sid):
            # another instance's node now: not ours to clean, but as that
            # instance's deploy left it
            left += [('foreign-node', text)
                     for text in _foreign_node(obs, node, name, vif)]
            continue
        if stays and node['id'] == own and \
                node.get('instance_id') == sid and \
                node.get('provision_state') == FAILED_DEPLOY:
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
    return [text for part, text in leftover_parts(obs, claim_kept)
            if part not in waive]


def claim_problem(obs):
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
        if claim_kept and (problem := claim_problem(obs)):
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
