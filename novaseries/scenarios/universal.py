"""The explorer's judge: what must hold after any case, whatever its
schedule (:func:`problems`), rule by rule (:data:`RULES`).  No case has
expectations of its own: the rules are the end-state invariant
(``invariant.leftovers``, part by part), the fault's tenant rule
(``checks.no_foreign_uuid``), the bound on the driver's polls
(``bounds.polls_at_most``) and what a user's delete must end in.

Standard library only: the harness judges with it and tests import it.
"""

from novaseries.scenarios.bounds import DEFAULT_MAX_POLLS, polls_at_most
from novaseries.scenarios.checks import (
    fired_action, formatted, missing, no_foreign_uuid, RESCHEDULE_DELETE)
from novaseries.scenarios.explore_space import SECOND_DELETE
from novaseries.scenarios.invariant import (
    claim_problem, END_STATE_PARTS, leftover_parts)
from novaseries.scenarios.outage_checks import at_api_back
from novaseries.scenarios.scenario import (
    ACT_IN_REBUILD_KINDS, MAIN_THREAD_DELETE_ACTIONS, OUTAGE_ACTIONS)
from novaseries.scenarios.texts import NODE_LOCKED

#: The rules, name -> what must hold.  ``end-state: <part>`` for each part
#: of ``invariant.END_STATE_PARTS`` is a rule too (:data:`END_STATE_RULE`).
RULES = {
    'played': 'the player played the case to its end and the server '
              'settled',
    'final': 'no server in BUILD or REBUILD, nor with a task state, once '
             'everything has settled',
    'fault': 'a server in ERROR shows a fault',
    'delete': "a user's delete ends with the server gone (404); a delete "
              'during an outage past its budget may leave it in ERROR '
              'keeping its claim when the API comes back, before the '
              'delete then; a moment\'s conductor lock when the case allows '
              'no retry of the refused tear-down ([ironic] api_max_retries '
              '= 0) may leave it in ERROR with the fault texts.NODE_LOCKED, '
              'keeping its claim, and then a second delete ends 404 with '
              'nothing left',
    'deleting': 'once the user deletes the server, its build in '
                'nova-compute (explore_space.BUILD_METHODS) replaces the '
                "delete's task state deleting with none of its own (a "
                "reschedule's scheduling, an ERROR's none): the delete ends "
                'the server',
    'outcome': 'a build or a rebuild whose events (those not refused) '
               'were all harmless (none, a brief conductor lock, an API '
               'blip: HARMLESS_ACTIONS), and that the user did not delete, '
               'ends ACTIVE; so does a new build with an alternate node and '
               'an attempt left (2 nodes and max_attempts 2 at least) whose '
               'one event was an operator\'s tear-down or a deploy failure '
               '(ALTERNATE_ACTIONS), when Ironic\'s tear-down of the failed '
               'node fits Nova\'s wait for it (deleting_reads at most '
               '[ironic] api_max_retries)',
    'reschedule': 'a failed build is handed back for a reschedule only once '
                  'no node carries the server any more (Ironic has freed '
                  'the failed node, or the build ends there): never into a '
                  'node Ironic is still tearing down for it',
    'tenant': "no fault names another tenant's instance or node "
              '(checks.no_foreign_uuid)',
    'polls': 'the driver polls at most %d times after the first step '
             '(bounds.polls_at_most), and while the Bare Metal API is down '
             'until the build has settled OUTAGE_BUDGETS budgets of '
             '[ironic] api_max_retries + 2 reads more' % DEFAULT_MAX_POLLS,
}
#: The rule of a part of the end-state invariant: ``END_STATE_RULE %
#: part``.
END_STATE_RULE = 'end-state: %s'
#: Every rule's name, those of the end-state invariant's parts included.
RULE_NAMES = tuple(RULES) + tuple(END_STATE_RULE % part
                                  for part in END_STATE_PARTS)
#: The user's deletes a step makes (the actions of ``scenario.ACTIONS``
#: that delete the server; ``checks.RESCHEDULE_DELETE`` is the delete at a
#: reschedule's allocation removal, ``delete_on_reschedule``).
DELETE_ACTIONS = frozenset(['delete', 'undeploy-delete']) | \
    MAIN_THREAD_DELETE_ACTIONS
#: The kinds whose play ends with the user's delete (``outage-delete``'s
#: once the API is back).
DELETING_KINDS = frozenset(['build-delete', 'undeploy-active-delete',
                            'outage-delete'])
#: The starting points whose server was on its node before the steps (a
#: rebuild, ``scenario.ACT_IN_REBUILD_KINDS``): a failed rebuild leaves
#: the server in ERROR on its node, as Nova leaves every failed rebuild on
#: its host, and the node carrying it as the failed deploy left it, or
#: deleted by an operator (``invariant.leftover_parts``'s
#: ``stays_on_node``).
PLACED_KINDS = ACT_IN_REBUILD_KINDS
#: The events after which a build or a rebuild must still succeed (rule
#: ``outcome``): a moment's conductor lock (a retry passes it) and an API
#: blip (the poll loops ride it out).
HARMLESS_ACTIONS = frozenset(['lock-briefly', 'api-blip'])
#: The starting points rule ``outcome`` holds to: a new build, a rebuild.
OUTCOME_KINDS = frozenset(['build']) | ACT_IN_REBUILD_KINDS
#: The events after which a new build with an alternate node and an
#: attempt left must still end ACTIVE (rule ``outcome``): the failed node
#: is torn down (by Ironic or by the build's clean-up) and the build
#: rescheduled to the alternate.
ALTERNATE_ACTIONS = frozenset(['undeploy', 'maintenance-delete', 'fail',
                               'abort', 'reassociate'])
assert not ALTERNATE_ACTIONS & (HARMLESS_ACTIONS | DELETE_ACTIONS)
#: The statuses a server may show once settled.
SETTLED_STATUSES = frozenset(['ACTIVE', 'ERROR', 'DELETED'])
#: The outage budgets the driver may spend polling per action that takes
#: the API down until the build has settled (``polls``), each ``[ironic]
#: api_max_retries`` + 2 reads (the observation's ``api_max_retries``:
#: the option's value in the case): the deploy wait rides out the outage
#: within one, destroy() within the other.  An ``api-blip`` ends at the
#: first refused read: no budget.
OUTAGE_BUDGETS = {'api-down': 2, 'api-down-delete': 2}
assert set(OUTAGE_BUDGETS) <= OUTAGE_ACTIONS
#: What a server shows, when the API came back, after a delete during an
#: outage past its budget: ERROR keeping its claim (or already gone).
_KEPT_AT_API_BACK = at_api_back('ERROR', claim_kept=True)


#: What a server left in ERROR by a delete past the driver's budget
#: (:func:`locked_without_retry`) keeps of its claim and what not: parts of the
#: end-state invariant not checked then, each with its reason (the
#: second delete's end is checked whole).
FAILED_DELETE_WAIVES = {
    'port': "a delete whose destroy() failed deallocates the server's "
            'network (ComputeManager._shutdown_instance, for every virt '
            'driver): the server keeps its host, node and allocation, not '
            'its port binding',
}
assert set(FAILED_DELETE_WAIVES) <= set(END_STATE_PARTS)


def _deleting(obs):
    if problem := missing(obs, 'saved_over_delete'):
        return problem
    if obs['saved_over_delete']:
        return "the build saved %s over the user's delete" % (
            obs['saved_over_delete'][0])


def _alternate_left(obs):
    """Whether the case is a new build with an alternate node and an
    attempt left, one event of ALTERNATE_ACTIONS its only one, and a
    tear-down that fits Nova's wait (``deleting_reads`` at most the
    observation's ``api_max_retries``, the option's value in the case)."""
    case = obs['definition']
    fired = _fired(obs)
    return (case.get('kind') == 'build' and case.get('nodes', 1) >= 2 and
            case.get('max_attempts', 1) >= 2 and
            len(fired) == 1 and fired[0] in ALTERNATE_ACTIONS and
            case.get('deleting_reads', 0) <= obs['api_max_retries'])


def _outcome(obs):
    if obs['status'] == 'ACTIVE' or user_deleted(obs):
        return None
    if problem := missing(obs, 'api_max_retries'):
        return problem
    if (obs['definition'].get('kind') in OUTCOME_KINDS and
            set(_fired(obs)) <= HARMLESS_ACTIONS) or _alternate_left(obs):
        return '%s after %s' % (obs['status'], ', '.join(
            obs.get('hooks_fired') or ['no event']))


def _reschedule(obs):
    if problem := missing(obs, 'at_reschedule'):
        return problem
    held = [nodes for nodes in obs['at_reschedule'] if nodes]
    if held:
        return 'rescheduled while %s still carried it' % ', '.join(
            '%s (%s)' % tuple(node) for node in held[0])


def _polls(obs):
    budgets = OUTAGE_BUDGETS.get(obs['definition'].get('action'), 0)
    bound = DEFAULT_MAX_POLLS
    if budgets:
        if problem := missing(obs, 'api_max_retries'):
            return problem
        bound += budgets * (obs['api_max_retries'] + 2)
    return polls_at_most(bound)(obs)


def user_deleted(obs):
    """Whether the user deleted the server in this case: a step that
    deletes it ran, the reschedule's delete came, or the kind deletes it."""
    fired = obs.get('hooks_fired') or ()
    return (obs.get('definition', {}).get('kind') in DELETING_KINDS or
            RESCHEDULE_DELETE in fired or
            any(fired_action(label) in DELETE_ACTIONS for label in fired))


def _played(obs):
    if obs.get('error'):
        return 'player error: ' + (obs['error'].strip().splitlines() or ['?'])[-1]
    if problem := missing(obs, 'settled', 'status'):
        return problem
    if not obs['settled']:
        return 'did not settle within the time limit'


def _final(obs):
    if problem := missing(obs, 'task_state'):
        return problem
    if obs['status'] not in SETTLED_STATUSES or obs['task_state']:
        return 'status %s, task_state %s once settled' % (
            obs['status'], obs['task_state'])


def _fault(obs):
    if obs['status'] == 'ERROR' and not obs.get('fault'):
        return 'ERROR without a fault'


def _fired(obs):
    """The actions of the steps that ran and were not refused."""
    actions = [fired_action(label) for label in obs.get('hooks_fired') or ()]
    for refusal in obs.get('refused') or ():
        action = refusal.partition(':')[0]
        if action in actions:
            actions.remove(action)
    return [a for a in actions if a]


def locked_without_retry(obs):
    """Whether the server the user deleted is in ERROR because a moment's
    conductor lock (``lock-briefly``) refused the tear-down with 409 and
    the case gives the driver no retry (``api_max_retries`` 0): its fault
    is ``texts.NODE_LOCKED``."""
    if obs['status'] != 'ERROR' or not user_deleted(obs) or \
            obs.get('api_max_retries') != 0 or \
            'lock-briefly' not in _fired(obs):
        return False
    locked, _ = formatted(NODE_LOCKED, obs)
    return obs.get('fault') == locked


def _delete(obs):
    back = obs.get('at_api_back')
    if back and back.get('status') != 'DELETED' and any(
            fired_action(label) in MAIN_THREAD_DELETE_ACTIONS
            for label in obs.get('hooks_fired') or ()):
        if problem := _KEPT_AT_API_BACK(obs):
            return 'deleted during the outage: ' + problem
    if not user_deleted(obs) or obs['status'] == 'DELETED':
        return None
    if not locked_without_retry(obs):
        return 'the user deleted the server, but it is %s' % obs['status']
    if problem := claim_problem(obs):
        return 'in ERROR after the delete: ' + problem
    second = obs.get(SECOND_DELETE)
    if second is None:
        return 'no second delete recorded'
    if problem := _played(second):
        return 'the second delete: ' + problem
    if second['status'] != 'DELETED':
        return 'the second delete left it %s' % second['status']
    left = leftover_parts(second, claim_kept=False)
    if left:
        return 'after the second delete: ' + '; '.join(t for _, t in left)


def problems(obs):
    """What is wrong with the observation of a case: ``[(rule, text)]``,
    rules of :data:`RULE_NAMES` in that order (empty: every rule holds).
    A case the player could not play, or whose server did not settle, is
    the one problem ``played`` (the other rules need a settled end)."""
    if problem := _played(obs):
        return [('played', problem)]
    found = [(rule, text) for rule, check in (
        ('final', _final), ('fault', _fault), ('delete', _delete),
        ('deleting', _deleting), ('outcome', _outcome),
        ('reschedule', _reschedule),
        ('tenant', no_foreign_uuid), ('polls', _polls))
        if (text := check(obs))]
    placed = obs['definition'].get('kind') in PLACED_KINDS
    kept = locked_without_retry(obs)
    found += [(END_STATE_RULE % part if part else 'played', text)
              for part, text in leftover_parts(obs, claim_kept=kept,
                                               stays_on_node=placed)
              if not (kept and part in FAILED_DELETE_WAIVES)]
    order = {rule: i for i, rule in enumerate(RULE_NAMES)}
    return sorted(found, key=lambda item: order[item[0]])


def rule_text(rule):
    """What rule ``rule`` (a name of :data:`RULE_NAMES`) requires."""
    part = rule.partition(END_STATE_RULE % '')[2]
    return END_STATE_PARTS[part] if part else RULES[rule]
