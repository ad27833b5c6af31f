"""Pike's scenarios: what ``novaseries run --release pike`` plays through
nova 16.1.8's whole stack against the pike-era Ironic
(``novaseries/nova_side/pike_driver_tests/play_pike_stack.py``), judged by
the main job's judge (``mainjob.judge``, with this table) and its checks.

They are the main table's scenarios as pike can play them: one compute
host, no alternate hosts (a reschedule goes back to the scheduler), a
real Ironic (``checks.REAL_IRONIC``: the checks a real Ironic cannot
check are skipped, the wall-time bound applies), and the log lines of the
34.0.0 series are not checked (pike's backport words them its own way).
What pike itself does differently is said per scenario: a waived part of
the end-state invariant names its reason.

Standard library only, as the main table.
"""

import types

from novaseries.scenarios.checks import (
    DELETE_WON, lost_fault, missing, never_error, rescheduled, status)
from novaseries.scenarios.scenario import Scenario

#: The release the reproducer tree is.
RELEASED = 'nova 16.1.8'

#: Why the allocation of scenario ``delete-at-reschedule`` is not checked:
#: the leak ``patches/pike`` leaves (README, *Packagers*, Pike).
CONDUCTOR_HALF = (
    "bug DDDDDDD's conductor half, which patches/pike leaves out: for a "
    "server deleted after nova-compute handed its failed build back, the "
    "conductor's reschedule has the scheduler claim another node, then "
    "finds the server deleted and leaves the claim; nova-compute's next "
    "update_available_resource removes it (allocations_after_periodic)")


def one_deploy(obs):
    """Nova asked Ironic for one deploy only (``deployed_nodes``)."""
    if problem := missing(obs, 'deployed_nodes'):
        return problem
    if len(obs['deployed_nodes']) > 1:
        return 'deployed %d times' % len(obs['deployed_nodes'])


one_deploy.text = 'no deploy on another node'


def claim_leaked(obs):
    """The scheduler's claim of the other node, made for the conductor's
    reschedule, is left in placement for the deleted server, and nothing
    else is: one allocation, not on the first node, whose usage is 0
    (nova-compute removed the failed build's own; the leak
    :data:`CONDUCTOR_HALF` names)."""
    if problem := missing(obs, 'allocations', 'usages', 'first_node',
                          'status'):
        return problem
    first, allocations = obs['first_node'], obs['allocations']
    if obs['status'] != 'DELETED' or len(allocations) != 1 or \
            first in allocations or obs['usages'].get(first):
        return ("not the leak of DDDDDDD's conductor half (one allocation "
                'of the deleted server, on the other node): status %s, '
                'allocations %s' % (obs['status'], allocations))


claim_leaked.text = ("the scheduler's claim of the other node left in "
                     "placement, and nothing else (DDDDDDD's conductor half)")


def healed_by_periodic(obs):
    """Nothing of the server is left in placement once nova-compute's
    update_available_resource has run (``allocations_after_periodic``)."""
    if problem := missing(obs, 'allocations_after_periodic'):
        return problem
    if obs['allocations_after_periodic']:
        return 'allocations after the periodic task: %s' % (
            obs['allocations_after_periodic'],)


healed_by_periodic.text = "none left after update_available_resource"

#: The user's delete wins, as in the main table, with pike's record of
#: the deploys (the real Ironic keeps no history of the nodes).
_DELETE_WON = [c for c in DELETE_WON if c.__name__ != 'no_other_deploy'] + [
    one_deploy]
_NOT_RESCHEDULED = next(c for c in DELETE_WON
                        if getattr(c, 'text', '') == 'not rescheduled')
_ERROR = status('ERROR')


SCENARIOS = (
    Scenario(
        name='undeploy-wait-callback',
        title="the report's steps: openstack baremetal node undeploy while "
              "the deploy waits in wait call-back (1 node, a port, "
              "max_attempts=1)",
        action='undeploy', nodes=1, max_attempts=1, deleting_reads=0,
        port=True,
        source='the bug as reported against Pike',
        reproducer=(status('BUILD'),),
        bug=(_ERROR,),
        fixed=(_ERROR, lost_fault()),
    ),
    Scenario(
        name='maintenance-delete',
        title='maintenance + node delete while the deploy waits in wait '
              'call-back (1 node, max_attempts=1)',
        action='maintenance-delete', nodes=1, max_attempts=1,
        source='the bug, delete variant',
        reproducer=(status('BUILD'),),
        bug=(_ERROR,),
        fixed=(_ERROR, lost_fault()),
    ),
    Scenario(
        name='user-delete',
        title='control: the user deletes the server while the deploy waits '
              'in wait call-back (bug MMMMMMM; 1 node, max_attempts=3)',
        action='user-delete', nodes=1, max_attempts=3,
        source='LP 1455000, bug MMMMMMM',
        reproducer=(status('DELETED'), rescheduled(True)),
        bug=(_NOT_RESCHEDULED,),
        fixed=tuple(_DELETE_WON),
    ),
    Scenario(
        name='normal-build-delete',
        title='control: a normal build, then the user deletes the ACTIVE '
              'server',
        kind='build-delete', nodes=1, max_attempts=1, source='control',
        reproducer=(status('DELETED'), never_error),
        fixed=(status('DELETED'), never_error),
    ),
    Scenario(
        name='delete-at-reschedule',
        title="the spawn fails on the first node; the user deletes the "
              "server once nova-compute has handed the build back, before "
              "the scheduler claims the other node for the conductor's "
              "reschedule (2 nodes, max_attempts=2)",
        action='fail', nodes=2, max_attempts=2, delete_on_reschedule=True,
        source="bug DDDDDDD's conductor half (not in patches/pike)",
        reproducer=(status('DELETED'), claim_leaked, healed_by_periodic),
        fixed=(status('DELETED'), claim_leaked, healed_by_periodic),
        waive={'allocation': CONDUCTOR_HALF},
    ),
)

BY_NAME = types.MappingProxyType({sc.name: sc for sc in SCENARIOS})

#: The scenario that shows the bug as reported: the reproducer tree must
#: show it there (``run --release pike`` fails otherwise).
REPORTED = 'undeploy-wait-callback'
#: Scenarios whose expected verdict, on both trees, is a leak the series
#: does not fix on pike: ``{name: what}`` (the report names it).
KNOWN_LEAKS = types.MappingProxyType({'delete-at-reschedule': CONDUCTOR_HALF})
