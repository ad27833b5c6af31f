"""The texts the main job's checks look for in a server's faults and in
the compute log (``{field}``: formatted with the observation).

Standard library only: the scenario player imports it in Nova's venv.
"""

#: What the fault says before IronicNodeLost's message when the build was
#: aborted (BuildAbortException around it).
ABORTED = 'Build of instance {server_id} aborted: '

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
#: The fault of a delete whose tear-down request Ironic refused with 409
#: (NodeLocked) past the driver's retries ([ironic] api_max_retries).
NODE_LOCKED = ('The bare metal node of instance {server_id} is locked by '
               'Ironic and could not be torn down; retry the delete later.')
#: The conductor's fault when no alternate is left.
RETRIES_EXCEEDED = ('Exceeded maximum number of retries. Exhausted all '
                    'hosts available for retrying build failures for '
                    'instance {server_id}.')
