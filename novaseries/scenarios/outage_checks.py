"""The checks of the API outage scenarios (the outage actions,
``scenario.OUTAGE_ACTIONS``): the outage happened as defined, and what the
server was when the API came back (functions of one observation,
``checks``).

Standard library only: the scenario player imports it in Nova's venv.
"""

from novaseries.scenarios.checks import (
    API_UP_AT_REFUSAL, API_UP_SETTLED, fired_action, formatted, missing,
    USER_DELETE_AT_REFUSAL)
from novaseries.scenarios.scenario import OUTAGE_ACTIONS


def outage(back, delete=False):
    """The scenario's API outage happened as defined: the API went down
    (one of ``OUTAGE_ACTIONS`` in ``hooks_fired``) and, with ``back``,
    came back on the event of the first read it refused
    (``API_UP_AT_REFUSAL``), else only once the build had settled
    (``API_UP_SETTLED``); with ``delete``, the user deleted the server on
    the event of the first read it refused (``USER_DELETE_AT_REFUSAL``),
    before the API came back."""
    want = API_UP_AT_REFUSAL if back else API_UP_SETTLED

    def check(obs):
        if problem := missing(obs, 'hooks_fired'):
            return problem
        fired = obs['hooks_fired']
        downs = [i for i, h in enumerate(fired)
                 if fired_action(h) in OUTAGE_ACTIONS]
        if not downs:
            return 'the API never went down: %s' % fired
        if want not in fired[downs[0]:]:
            return 'the API did not come back as defined (%s): %s' % (
                want, fired)
        if delete and USER_DELETE_AT_REFUSAL not in fired[
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
            want, problem = formatted(fault, obs)
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
