"""The main job's scenarios, each defined once: what it does, what the
reproducer tree shows, what the fixed tree must show, and which end-to-end
test plays it against a real Ironic (:data:`SCENARIOS`, rows of
``scenario.Scenario``), and the observation the player records of each
(:data:`OBSERVATION`).

Standard library only: the harness imports it to judge observations
(``novaseries.mainjob.judge``, against each scenario's checks: the
functions of ``checks.py`` and the check modules it names) and to list the
scenarios, and the scenario player imports it inside Nova's virtualenv
(``python -m novaseries.nova_side.player.play``) to know what to run.
"""

import types

from novaseries.scenarios.bounds import HELD_MAX_POLLS, one_call_per_poll
from novaseries.scenarios.checks import (
    all_of, all_steps_fired, any_of, DELETE_WON, fault_created, fault_has,
    first_node_leaked, log_has, log_lacks, log_reports, lost_fault,
    MISLEADING, never_error, no_not_found_fault, node_owned_by_other,
    on_other_node, only_reads, rebuilt_with_new_image, recovery,
    rescheduled, status, status_in, task_state, teardown_refused)
from novaseries.scenarios.invariant import clean, END_STATE
from novaseries.scenarios.outage_checks import at_api_back, outage
from novaseries.scenarios.scenario import Scenario
from novaseries.scenarios.texts import (
    API_UNREACHABLE, API_UNREACHABLE_ABORTED, CONNECT_FAILED_ABORTED,
    DELETING_ABORTED, DEPLOY_ABORTED, DEPLOY_FAILED, DEPLOY_WAIT_GAVE_UP,
    FAILED_ABORTED, HTTP_503_ABORTED, LEFT_TO_IRONIC, OUTLASTED,
    RETRIES_EXCEEDED, SEEN_DELETING, TORE_DOWN)

#: The observation of one scenario, as the player writes it (JSON), key ->
#: meaning.  Checks read only these.
OBSERVATION = {
    'scenario': 'the scenario name',
    'definition': "the scenario's player parameters (Scenario.describe())",
    'error': "the player's traceback when the scenario itself failed, or None",
    'settled': 'False when the server did not settle within the time limit',
    'test_seconds': 'wall time of the scenario in the player',
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
    'image': 'the image the server was booted with',
    'writes_after_action': 'non-read calls Nova sent to the first node after '
                           'the action',
    'hooks_fired': "the scenario's steps that ran, as action@poll",
    'rebuild_image': 'the image of the rebuild (kind rebuild-newest)',
    'recovery': 'what the operator recovery steps showed (kind recovery)',
    'at_api_back': 'kind outage-delete: the server (status, fault, host, '
                   'node, allocations) and its first node (state, instance) '
                   'when the Bare Metal API came back, before the delete',
    'api_proxy': "real Ironic, API outage scenarios: the API proxy's counts "
                 '(forwarded, refused, upstream_errors, outages)',
    'log': 'INFO-and-up lines of the ironic driver and the compute manager',
    'driver_warnings': "the ironic driver's WARNING messages",
    'instance_actions': "the server's instance actions",
    'refused': "the explorer's steps Ironic or the API refused, as "
               "'action: answer' (play_explore)",
    'at_reschedule': "the explorer's: at each reschedule of the build, the "
                     'nodes that still carried the server, as [node, '
                     'provision_state] (play_explore)',
    'saved_over_delete': "the explorer's: each save by the server's build "
                         "that replaced the user's delete's task state "
                         "deleting, as 'vm_state V, task_state T by METHOD' "
                         '(play_explore)',
    'api_max_retries': "the explorer's: [ironic] api_max_retries in the "
                       'case (play_explore)',
    'after_second_delete': "the explorer's: the observation after the "
                           "user's second delete of a server the first left "
                           'in ERROR (play_explore)',
    'deployed_nodes': 'pike: the nodes Nova asked Ironic to deploy, in order',
    'vifs_attached': "pike: its real Ironic's network interface attaches VIFs",
    'allocations_after_periodic': 'pike: allocations after the periodic task',
    'backend': '``checks.REAL_IRONIC`` when the run was against a real Ironic '
               '(--ironic real)',
    'nova_requests': 'real Ironic: how many requests Nova sent',
    'operator_requests': "real Ironic: how many requests the operator's side "
                         'sent (enrolment, actions, node removal)',
    'requests_file': 'real Ironic: the JSON lines file of every request',
    'leftover_nodes_removed': "real Ironic: nodes an earlier scenario's "
                              'node removal left, removed before this one',
}


#: The scenarios, in the order the main job plays and reports them.
SCENARIOS = (
    Scenario('undeploy-deleting', 'undeploy in wait call-back, seen while '
             '`deleting` (1 node, max_attempts=1)',
             action='undeploy', deleting_reads=3, max_attempts=1,
             source='the bug, case (a)',
             reproducer=[status('BUILD')],
             fixed=[status('ERROR'), lost_fault(),
                    log_has(SEEN_DELETING, TORE_DOWN),
                    log_lacks('Successfully unprovisioned'), only_reads],
             max_polls=8, real_ironic='test_undeploy_in_wait_callback'),
    Scenario('undeploy-deleting-port', 'same, server with a port (VIF '
             'detach hits 409 node locked)', action='undeploy',
             deleting_reads=3, port=True, max_attempts=1,
             source='the bug, case (a) with a port',
             reproducer=[status('ERROR'), MISLEADING],
             fixed=[status('ERROR'), no_not_found_fault, lost_fault(),
                    log_has(SEEN_DELETING, TORE_DOWN), only_reads],
             max_polls=8),
    Scenario('undeploy-cleared', 'undeploy in wait call-back, seen only '
             'after the association is cleared (1 node, max_attempts=1)',
             action='undeploy', deleting_reads=0, max_attempts=1,
             source='the bug, case (b)',
             reproducer=[status('BUILD')],
             fixed=[status('ERROR'), lost_fault(),
                    log_has('Ironic node {first_node} was torn down during '
                            'the deploy: it is no longer associated with the '
                            'instance (provision_state ')],
             max_polls=6),
    Scenario('maintenance-delete', 'maintenance + node delete during the '
             'deploy (1 node, max_attempts=1)', action='maintenance-delete',
             max_attempts=1, source='the bug, delete variant (c)',
             reproducer=[status('BUILD')],
             fixed=[status('ERROR'), lost_fault(),
                    log_has('Ironic node {first_node} was deleted during the '
                            'deploy')],
             max_polls=6, real_ironic='test_maintenance_and_delete_in_wait_callback'),
    Scenario('undeploy-no-alternate', 'undeploy seen while `deleting`, one '
             'node, default retries (no alternate: ERROR)',
             action='undeploy', deleting_reads=3, port=True,
             source='the bug: no alternate host',
             reproducer=[status('ERROR'), MISLEADING],
             fixed=[status('ERROR'), no_not_found_fault, rescheduled(True),
                    fault_has(RETRIES_EXCEEDED)],
             max_polls=9),
    Scenario('undeploy-reschedule', 'undeploy seen while `deleting`, an '
             'alternate node is free (reschedule)', nodes=2,
             action='undeploy', deleting_reads=3, port=True,
             source='the bug: alternate host',
             reproducer=[status('ERROR'), MISLEADING, rescheduled(False)],
             fixed=[status('ACTIVE'), no_not_found_fault, on_other_node,
                    rescheduled(True)]),
    Scenario('undeploy-cleared-reschedule', 'undeploy seen after the '
             'association is cleared, alternate node free', nodes=2,
             action='undeploy', deleting_reads=0,
             source='the bug: alternate host',
             reproducer=[status('BUILD'), rescheduled(False)],
             fixed=[status('ACTIVE'), on_other_node, rescheduled(True)]),
    Scenario('maintenance-delete-reschedule', 'maintenance + node delete, '
             'alternate node free', nodes=2, action='maintenance-delete',
             source='the bug: alternate host',
             reproducer=[status('BUILD'), rescheduled(False)],
             fixed=[status('ACTIVE'), on_other_node, rescheduled(True)]),
    Scenario('deploy-failed', 'control: deploy failed in Ironic (1 node, '
             'max_attempts=1)', action='fail', max_attempts=1,
             source='control',
             reproducer=[status('ERROR'), fault_has(DEPLOY_FAILED), clean],
             fixed=[status('ERROR'), fault_has(DEPLOY_FAILED)],
             real_ironic='test_deploy_failed'),
    Scenario('deploy-failed-reschedule', 'control: deploy failed, '
             'alternate node free', nodes=2, action='fail',
             source='control',
             reproducer=[status('ACTIVE'), on_other_node, clean],
             fixed=[status('ACTIVE'), on_other_node]),
    Scenario('abort', 'control: operator abort in wait call-back (deploy '
             'failed), 1 node, max_attempts=1', action='abort',
             max_attempts=1, source='control',
             reproducer=[status('ERROR'), fault_has(DEPLOY_ABORTED), clean],
             fixed=[status('ERROR'), fault_has(DEPLOY_ABORTED)],
             real_unplayable='a real abort leaves the node `deploy failed` '
             'with last_error null for about 2 s (doc/real-ironic.rst): the '
             "driver's poll then gives the fault 'Failed to provision "
             "instance <uuid>: None', where the fake sets last_error at "
             'once; a difference this series does not fix'),
    Scenario('user-delete', 'control: user deletes the server during the '
             'deploy (LP 1455000)', action='user-delete',
             source='LP 1455000',
             # Rescheduled: the conductor may set ERROR (no host left)
             # before the delete completes.
             reproducer=[status_in('DELETED', 'ERROR'), rescheduled(True)],
             fixed=DELETE_WON, max_polls=HELD_MAX_POLLS,
             real_ironic='test_user_delete_in_wait_callback'),
    Scenario('user-delete-alternate', 'user delete during the deploy, '
             'alternate node free (no reschedule, no leak)', nodes=2,
             action='user-delete', source='user-delete sibling bug',
             reproducer=[status_in('DELETED', 'ERROR'), rescheduled(True)],
             fixed=DELETE_WON, max_polls=HELD_MAX_POLLS),
    Scenario('normal-build', 'control: a normal build', action=None,
             source='control',
             reproducer=[status('ACTIVE'), one_call_per_poll, clean],
             fixed=[status('ACTIVE'), one_call_per_poll]),
    Scenario('normal-build-delete', 'control: a normal build, then the '
             'user deletes the ACTIVE server', kind='build-delete',
             source='control',
             reproducer=[status('DELETED'), clean],
             fixed=[status('DELETED')], max_polls=7),
    Scenario('rebuild-error', 'control: rebuild of a server in ERROR '
             '(LP 1735009)', kind='rebuild-error', source='LP 1735009',
             reproducer=[status('ACTIVE'), clean],
             fixed=[status('ACTIVE')]),
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
    # -- the generic fault, destroy() and unplug_vifs()
    Scenario('undeploy-reassociated', 'undeploy in wait call-back; another '
             'deploy claims the node for another instance before the driver '
             'looks (port, 1 node, max_attempts=1)', action='reassociate',
             port=True, max_attempts=1,
             source='the fault names no other instance',
             reproducer=[status('BUILD')],
             fixed=[status('ERROR'), lost_fault(),
                    log_has('Ironic node {first_node} was torn down during '
                            'the deploy and is now associated with instance '
                            '{other_instance}'),
                    log_lacks('Node None', 'Cleaning up VIFs failed'),
                    only_reads, node_owned_by_other],
             max_polls=2),
    Scenario('deleting-outlasts-retries', 'undeploy seen while `deleting`, '
             'which lasts longer than [ironic] api_max_retries=2 polls '
             '(1 node, max_attempts=1)', action='undeploy',
             deleting_reads=10, max_attempts=1, api_max_retries=2,
             finish_ironic_work=True,
             source="a tear-down Ironic owns is not Nova's failure",
             reproducer=[status('BUILD')],
             # Every alternate would refuse the instance, which Ironic still
             # associates with the node: the build is aborted, not
             # rescheduled, and its clean-up leaves the tear-down to Ironic
             # and holds nothing for the node.
             fixed=[status('ERROR'), lost_fault(aborted=True),
                    log_has(SEEN_DELETING, OUTLASTED, LEFT_TO_IRONIC),
                    log_lacks('Successfully unprovisioned',
                              'Could not clean up failed build'),
                    only_reads],
             max_polls=7),
    Scenario('undeploy-deleting-reschedule', 'undeploy seen while '
             '`deleting`, no port, an alternate node is free (the reschedule '
             "must claim it despite Ironic's unique association)", nodes=2,
             action='undeploy', deleting_reads=3,
             source='two nodes, no port',
             reproducer=[status('BUILD'), rescheduled(False)],
             fixed=[status('ACTIVE'), on_other_node, rescheduled(True),
                    log_has(SEEN_DELETING, TORE_DOWN)]),
    Scenario('undeploy-active-delete', 'an operator undeploys the node of '
             'an ACTIVE server with a port; the user deletes the server '
             'while Ironic tears the node down (`deleting`)',
             kind='undeploy-active-delete', port=True, deleting_reads=3,
             finish_ironic_work=True,
             source="a tear-down Ironic owns is not Nova's failure",
             # destroy() sends the node Ironic holds a VIF detach: 409, and
             # the failed delete keeps the server's allocation
             reproducer=[status('ERROR'), fault_has('ConflictException')],
             fixed=[status('DELETED'), never_error,
                    log_has(LEFT_TO_IRONIC), only_reads],
             max_polls=3),
    Scenario('rebuild-undeploy', 'undeploy in wait call-back during the '
             'rebuild of an ACTIVE server', action='undeploy',
             deleting_reads=1, kind='rebuild', finish_ironic_work=True,
             source='a tear-down during a rebuild',
             reproducer=[status('REBUILD')],
             fixed=[status('ERROR'), task_state(None), lost_fault(),
                    log_has(SEEN_DELETING)],
             max_polls=3),
    # -- a user delete wins whenever it arrives during the build
    Scenario('user-delete-after-teardown', 'undeploy, then the user deletes '
             'the server before the driver notices (2 nodes)', nodes=2,
             action='undeploy-delete', deleting_reads=1,
             source='user delete timings',
             reproducer=[status_in('DELETED', 'ERROR'), rescheduled(True)],
             fixed=DELETE_WON, max_polls=5),
    Scenario('user-delete-at-teardown-poll', 'undeploy; the user deletes the '
             'server right after the poll that sees the association cleared '
             '(2 nodes)', nodes=2, action='undeploy', deleting_reads=0,
             then=[(3, 'delete')], source='user delete timings',
             reproducer=[status('DELETED'), rescheduled(False)],
             # the driver reads the instance again before it logs a lost
             # node: the delete, not the teardown, is what it reports
             fixed=DELETE_WON + [
                 log_lacks('Ironic node {first_node} was torn down during '
                           'the deploy',
                           'Ironic node {first_node} is being torn down '
                           'during the deploy')],
             max_polls=6),
    Scenario('user-delete-during-teardown-wait', "undeploy; the user "
             "deletes the server while the build waits for Ironic's "
             'tear-down before a reschedule (2 nodes)',
             nodes=2, action='undeploy', deleting_reads=6,
             then=[(1, 'delete', 'teardown')], finish_ironic_work=True,
             source='user delete timings',
             reproducer_unplayable="the released driver takes the undeploy "
             'for a delete and leaves the build in BUILD (the bug): it never '
             "waits for Ironic's tear-down, where this scenario's delete "
             'comes',
             # since the teardown series' helper-1 review, the delete ends
             # the wait (the driver reads the instance before each poll)
             # and destroy() leaves the tear-down to Ironic, which nobody
             # polls to its end then: finish_ironic_work
             fixed=DELETE_WON + [log_has(SEEN_DELETING, LEFT_TO_IRONIC)]),
    Scenario('user-delete-on-reschedule', 'undeploy; the user deletes the '
             'server as the compute manager hands the reschedule back (it '
             'removes the allocation) (2 nodes)', nodes=2, action='undeploy',
             deleting_reads=0, delete_on_reschedule=True,
             source='user delete timings',
             reproducer=[status('DELETED'), rescheduled(False)],
             fixed=DELETE_WON, max_polls=6),
    Scenario('rebuild-user-delete', 'the user deletes the server during the '
             'rebuild of an ACTIVE server (after its 2nd poll)',
             action='delete', kind='rebuild',
             source='a user delete during a rebuild',
             # The rebuild fails ("provisioning was aborted"): ERROR and a
             # fault on the way out.
             reproducer=[status('DELETED'),
                         fault_created('Instance {server_id} provisioning '
                                       'was aborted')],
             fixed=[status('DELETED'), never_error, all_steps_fired],
             max_polls=7),
    # -- node leaks, separate bugs (patches/nodeleak/)
    Scenario('user-delete-deploying', 'the user deletes the server while '
             'Ironic deploys its node (`deploying`: locked, the tear-down '
             'request gets 409), 1 node, max_attempts=1', action='delete',
             after_polls=1, deploying_reads=5, max_attempts=1,
             source='LP 2169776',
             reproducer=[status('ERROR'), first_node_leaked],
             fixed=DELETE_WON),
    Scenario('reap-deleted', 'the server is deleted while its nova-compute '
             'is down (the API deletes it alone); after a restart the '
             'periodic reaper runs (running_deleted_instance_action=reap)',
             kind='reap', finish_ironic_work=True, source='LP 2169200',
             reproducer=[status('DELETED'), first_node_leaked],
             fixed=[status('DELETED'),
                    log_has("Destroying instance with name label")],
             max_polls=7),
    Scenario('reap-deleted-log', 'same, running_deleted_instance_action='
             'log: the reaper only logs the node', kind='reap-log',
             finish_ironic_work=True, source='LP 2169200',
             reproducer=[status('DELETED'), first_node_leaked],
             fixed=[status('DELETED'), first_node_leaked,
                    log_reports('marked as DELETED but still present on '
                                'host')],
             waive={'node-kept': 'running_deleted_instance_action = log '
                                 'only logs the node, which stays deployed '
                                 'for the deleted server (what the operator '
                                 'asked for)'}),
    Scenario('cleanup-fail-delete', 'the deploy fails, Ironic refuses the '
             "build clean-up's tear-down once (503), then the user deletes "
             'the server in ERROR (1 node, max_attempts=1)', action='fail',
             kind='cleanup-fail-delete', max_attempts=1, finish_ironic_work=True,
             source='LP 2169779',
             reproducer=[status('DELETED'), fault_created(FAILED_ABORTED),
                         teardown_refused, first_node_leaked],
             fixed=[status('DELETED'), fault_created(FAILED_ABORTED),
                    teardown_refused],
             max_polls=9,
             real_unplayable='a running Ironic does not refuse one '
             "tear-down request with 503 on demand; a 503 forged in Nova's "
             'session would test the forgery, and a stopped API gives a '
             'connection error (another driver path)'),
    # -- a separate bug (patches/rebuild/)
    Scenario('rebuild-newest-microversion', 'rebuild of an ACTIVE '
             'image-backed server with another image at the newest compute '
             'API microversion (2.93+ asks to re-image a boot volume)',
             kind='rebuild-newest', source='bug KKKKKKK (likely LP 2127017)',
             reproducer=[status('ERROR'),
                         fault_has("Ironic doesn't support rebuilding volume "
                                   "backed instances")],
             fixed=[status('ACTIVE'), rebuilt_with_new_image]),
    # -- the Bare Metal API unreachable during the deploy wait
    # (patches/apiblip/)
    Scenario('api-outage-within-retries', 'the Bare Metal API answers '
             "nova-compute 503 while the deploy waits in wait call-back and "
             "comes back right after the driver's first read it refused; "
             'the deploy completes (1 node)', action='api-blip',
             source='bug BBBBBBB',
             # today: the failed read fails the deploy. Against the fake,
             # the clean-up tears the node down and the build is
             # rescheduled, to no other node; against a real Ironic the
             # outage comes in `deploying` (real_deploy.deploy_interfaces)
             # and Ironic refuses the tear-down of the locked node (409):
             # the build is aborted with the read's 503 and the node stays
             # deployed for the server in ERROR
             reproducer=[status('ERROR'), outage(back=True), any_of(
                 all_of(rescheduled(True), fault_has(RETRIES_EXCEEDED)),
                 all_of(rescheduled(False), fault_has(HTTP_503_ABORTED),
                        first_node_leaked))],
             fixed=[status('ACTIVE'), rescheduled(False), never_error,
                    outage(back=True)]),
    Scenario('api-outage-outlasts-retries', 'the Bare Metal API refuses '
             "nova-compute's connections while the deploy waits in wait "
             'call-back, past [ironic] api_max_retries=2; once the build '
             'settled it comes back and the user deletes the server '
             '(1 node)', action='api-down', kind='outage-delete',
             api_max_retries=2, finish_ironic_work=True,
             source='bug BBBBBBB',
             # today: the deploy wait's failed read fails the build, whose
             # clean-up cannot reach the API either: aborted (no
             # reschedule) with the connection error, host and allocation
             # dropped; the delete then never reaches nova-compute and
             # the node keeps the instance in wait call-back
             reproducer=[status('DELETED'), rescheduled(False),
                         fault_created(CONNECT_FAILED_ABORTED),
                         at_api_back('ERROR', claim_kept=False),
                         outage(back=False), first_node_leaked],
             # LP 2169779 (master-all): the build whose clean-up could not
             # reach the API keeps its host, node and allocation, so that
             # the delete reaches nova-compute and tears the node down
             fixed=[status('DELETED'), rescheduled(False),
                    at_api_back('ERROR', API_UNREACHABLE_ABORTED,
                                claim_kept=True),
                    outage(back=False)],
             # the node left deployed for the deleted server, not the
             # fault's wording
             bug=[END_STATE]),
    Scenario('api-outage-user-delete', 'the Bare Metal API answers '
             "nova-compute 503 while the deploy waits in wait call-back, "
             "past [ironic] api_max_retries=2; right after the driver's "
             'first read it refused the user deletes the server; once the '
             'build settled the API comes back and the user deletes it '
             'again (1 node)', action='api-down-delete',
             kind='outage-delete', api_max_retries=2, finish_ironic_work=True,
             source='bug BBBBBBB: a delete during the outage',
             # today: the refused read fails the deploy (the fault the
             # read's 503); the build's clean-up cannot reach the API
             # either: aborted (no reschedule), host and allocation
             # dropped.  The first delete had reached nova-compute
             # before that and fails there too (ERROR again, the 503's
             # fault); the second one never reaches nova-compute, and the
             # node keeps the instance in wait call-back
             reproducer=[status('DELETED'), rescheduled(False),
                         fault_created(HTTP_503_ABORTED),
                         at_api_back('ERROR', claim_kept=False),
                         outage(back=False, delete=True), first_node_leaked],
             # the deploy wait reads the instance before each retry: the
             # delete ends it within one interval (the build's abort says
             # the instance is being deleted, no 'IronicDeployAPI-
             # Unreachable' abort); the build's clean-up and the delete
             # spend their own retries and fail, the delete with the
             # API's fault, and the server keeps its claim (LP 2169779)
             # until the second delete tears the node down
             fixed=[status('DELETED'), rescheduled(False),
                    fault_created(DELETING_ABORTED),
                    at_api_back('ERROR', API_UNREACHABLE, claim_kept=True),
                    log_lacks(DEPLOY_WAIT_GAVE_UP),
                    outage(back=False, delete=True)],
             # the node left deployed for the deleted server
             bug=[END_STATE]),
)


#: The instance another deploy claims the node for (``reassociate``).
OTHER_INSTANCE = '0e7e4b0a-0000-4000-8000-0000000000ff'
#: The scenarios by name, in the order of :data:`SCENARIOS` (read-only).
BY_NAME = types.MappingProxyType({s.name: s for s in SCENARIOS})

#: The scenarios CI plays against a real Ironic through the whole stack
#: (``run --ironic real``; the CI step "main job vs real Ironic"): the bug
#: with one node and with a reschedule to the other, a user delete
#: while the failed build waits for Ironic's tear-down, and the Bare Metal
#: API unreachable during the deploy wait, with a user delete during it
#: (bug BBBBBBB, through the API proxy).
REAL_CI = ('undeploy-deleting', 'undeploy-deleting-reschedule',
           'user-delete-during-teardown-wait', 'api-outage-within-retries',
           'api-outage-outlasts-retries', 'api-outage-user-delete')
