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
    fired_action, missing, no_foreign_uuid)
from novaseries.scenarios.explore_space import SECOND_DELETE
from novaseries.scenarios.invariant import (
    claim_problem, END_STATE_PARTS, leftover_parts)
from novaseries.scenarios.scenario import MAIN_THREAD_DELETE_ACTIONS, OUTAGE_ACTIONS

#: The rules, name -> what must hold.  ``end-state: <part>`` for each part
#: of ``invariant.END_STATE_PARTS`` is a rule too (:data:`END_STATE_RULE`).
RULES = {
    'played': 'the player played the case to its end and the server '
              'settled',
    'final': 'no server in BUILD or REBUILD, nor with a task state, once '
             'everything has settled',
    'fault': 'a server in ERROR shows a fault',
    'delete': "a user's delete ends with the server gone (404); past the "
              "driver's budget (the Bare Metal API down, or a case with no "
              'retry of a refused tear-down: [ironic] api_max_retries = 0) '
              'it may end in ERROR keeping its claim (host, node, '
              'allocation), and then a second delete ends 404 with '
              'nothing left',
    'tenant': "no fault names another tenant's instance or node "
              '(checks.no_foreign_uuid)',
    'polls': 'the driver polls at most %d times after the first step '
             '(bounds.polls_at_most), and while the Bare Metal API is down '
             'at most OUTAGE_BUDGETS budgets of [ironic] api_max_retries + 2 '
             'reads more (the deploy wait rides out an outage within one, '
             'destroy() within another)' % DEFAULT_MAX_POLLS,
}
#: The rule of a part of the end-state invariant: ``END_STATE_RULE %
#: part``.
END_STATE_RULE = 'end-state: %s'
#: Every rule's name, those of the end-state invariant's parts included.
RULE_NAMES = tuple(RULES) + tuple(END_STATE_RULE % part
                                  for part in END_STATE_PARTS)
#: The user's deletes a step makes (the actions of ``scenario.ACTIONS``
#: that delete the server), and the ``hooks_fired`` label of the delete
#: at a reschedule's allocation removal (``delete_on_reschedule``).
DELETE_ACTIONS = frozenset(['delete', 'undeploy-delete']) | \
    MAIN_THREAD_DELETE_ACTIONS
RESCHEDULE_DELETE = 'delete (allocation removed)'
#: The kinds whose play ends with the user's delete.
DELETING_KINDS = frozenset(['build-delete', 'undeploy-active-delete',
                            'outage-delete'])
#: The starting points whose server was on its node before the steps (a
#: rebuild): a failed rebuild leaves the server in ERROR on its node, as
#: Nova leaves every failed rebuild on its host, and the node keeps it as
#: the failed deploy left it (``invariant.leftover_parts``'s
#: ``stays_on_node``), also when an operator deleted it.
PLACED_KINDS = frozenset(['rebuild'])
#: Task states a server may show once settled: none.
SETTLED_STATUSES = frozenset(['ACTIVE', 'ERROR', 'DELETED'])

#: The outage budgets the driver may spend polling (``polls``), each
#: ``[ironic] api_max_retries`` + 2 reads, and that option's default in
#: Nova.
OUTAGE_BUDGETS = 2
NOVA_API_MAX_RETRIES = 60


def _polls(obs):
    case = obs['definition']
    bound = DEFAULT_MAX_POLLS
    if case.get('action') in OUTAGE_ACTIONS:
        retries = case.get('api_max_retries')
        bound += OUTAGE_BUDGETS * (2 + (NOVA_API_MAX_RETRIES if retries is None
                                        else retries))
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
        return 'player error: ' + obs['error'].strip().splitlines()[-1]
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


def past_budget(obs):
    """Whether the user's delete may have failed past the driver's
    budget: the case takes the Bare Metal API down, or gives the driver no
    retry of a tear-down Ironic refuses (``api_max_retries`` 0), and the
    server the user deleted is in ERROR."""
    case = obs['definition']
    return (obs['status'] == 'ERROR' and user_deleted(obs) and
            (case.get('action') in OUTAGE_ACTIONS or
             case.get('api_max_retries') == 0))


def _delete(obs):
    if not user_deleted(obs) or obs['status'] == 'DELETED':
        back = obs.get('at_api_back')
        if back and back.get('status') not in ('ERROR', 'DELETED') and \
                any(fired_action(label) in MAIN_THREAD_DELETE_ACTIONS
                    for label in obs.get('hooks_fired') or ()):
            return ('deleted during the outage, but %s when the API came '
                    'back' % back.get('status'))
        return None
    if not past_budget(obs):
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
        ('tenant', no_foreign_uuid), ('polls', _polls))
        if (text := check(obs))]
    placed = obs['definition'].get('kind') in PLACED_KINDS
    found += [(END_STATE_RULE % part if part else 'played', text)
              for part, text in leftover_parts(obs, claim_kept=past_budget(obs),
                                               stays_on_node=placed)]
    order = {rule: i for i, rule in enumerate(RULE_NAMES)}
    return sorted(found, key=lambda item: order[item[0]])


def rule_text(rule):
    """What rule ``rule`` (a name of :data:`RULE_NAMES`) requires."""
    part = rule.partition(END_STATE_RULE % '')[2]
    return END_STATE_PARTS[part] if part else RULES[rule]
