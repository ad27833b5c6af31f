"""Playing one scenario of the table against the fake Ironic
(``nova.tests.fixtures.IronicFixture``) in Nova's functional-test
environment: :class:`ScenarioTest`, and :func:`run_scenario`, which runs
one in a fresh environment and returns its observation (keys:
``scenario_table.OBSERVATION``).  It records; it does not judge.
"""

import collections
import re
import threading
import time
import traceback
import unittest

# The test package applies Nova's monkey patching; it must come first.
import nova.tests.functional  # noqa: F401  isort:skip
from nova.compute import vm_states  # noqa: E402
from nova import context as nova_context  # noqa: E402
from nova import exception as nova_exception  # noqa: E402
from nova import objects  # noqa: E402
from nova.scheduler.client import report  # noqa: E402
from nova.tests.fixtures import ironic as ironic_fixture  # noqa: E402
from nova.tests.functional.ironic import base as ironic_base  # noqa: E402
from openstack import exceptions as sdk_exc  # noqa: E402

from novaseries.scenarios import counting_ironic  # noqa: E402
from novaseries.scenarios.scenario_table import OTHER_INSTANCE  # noqa: E402
from novaseries.scenarios.watch import (  # noqa: E402
    BuildWatch, log_lines, Observe, poll_stats)

#: How long a scenario against the fake Ironic may take to settle, and a
#: step to come, in seconds (wall clock): the fake's tear-downs and
#: reschedules take reads, not time (a real Ironic's:
#: ``play_real.REAL_SETTLE_TIMEOUT``).
FAKE_SETTLE_TIMEOUT = 30.0
#: A server is settled when nothing changed for this long (seconds) and no
#: build is running.
SETTLE_QUIET = 0.6
#: Actions whose deploy the fake holds in ``wait call-back`` (no read
#: ends it): the runner's main thread acts (``user-delete``), or the
#: Bare Metal API goes down (``api-blip``: its callback comes once the API
#: is back; ``api-down`` and ``api-down-delete``: it never comes).
HELD_ACTIONS = ('user-delete', 'api-blip', 'api-down', 'api-down-delete')


class ScenarioTest(Observe, ironic_base.IronicTestBase):
    """Runs one Scenario (set as the class attribute SCENARIO)."""

    SCENARIO = None
    CALLBACK_READS = 3
    NUM_NODES = 1
    RESULT = None
    #: Seconds a scenario may take to settle, and a step to come.
    SETTLE_TIMEOUT = FAKE_SETTLE_TIMEOUT

    def setUp(self):
        self.watch = BuildWatch()
        super().setUp()
        self.watch.install(self)
        self.flags(max_attempts=self.SCENARIO.max_attempts,
                   group='scheduler')
        if self.SCENARIO.api_max_retries is not None:
            self.flags(api_max_retries=self.SCENARIO.api_max_retries,
                       group='ironic')
        for node_id in self.node_ids:
            if self.SCENARIO.deploying_reads is not None:
                self.ironic.configure_node(
                    node_id, deploying_reads=self.SCENARIO.deploying_reads)
            self.ironic.configure_node(
                node_id, deleting_reads=self.SCENARIO.deleting_reads,
                # a user delete from the main thread: every deploy waits
                # in wait call-back until the delete has been accepted
                # (see _run), whatever the threads' scheduling
                **({'callback_reads': None}
                   if self.SCENARIO.action in HELD_ACTIONS else {}))
        self._watch_errors_and_faults()
        self._count_held_polls()
        if self.SCENARIO.delete_on_reschedule:
            self._delete_on_reschedule()

    def _start_ironic(self):
        # the scenario table is timed by reads (counting_ironic)
        counting_ironic.install(self)
        super()._start_ironic()

    def _count_held_polls(self):
        """Record, for each poll of a held deploy (``wait call-back``
        that no read ends: the fake Ironic makes such a poll wait up to
        ``held_poll_wait`` seconds for a change), the length of the call
        log when it started. How many of those a scenario sees depends on
        how soon Nova's threads get to the test's action, not on the
        series: the bound on the polls after the action leaves them out
        (``scenario_table.polls_at_most``)."""
        self.held_polls = []
        fake = self.ironic
        held = getattr(fake, '_held', None)
        if held is None:    # the real backend has no held polls
            return

        def spy(node_id):
            result = held(node_id)
            if result:
                self.held_polls.append(len(fake.call_log))
            return result

        fake._held = spy

    def _watch_errors_and_faults(self):
        """Record every save that puts an instance in ERROR and every
        instance fault created, even those a delete later hides."""
        self.error_saves = []
        self.faults_created = []
        real_save = objects.Instance.save

        def save(instance, *args, **kwargs):
            error = ('vm_state' in instance.obj_what_changed() and
                     instance.vm_state == vm_states.ERROR)
            real_save(instance, *args, **kwargs)
            if error:
                self.error_saves.append(instance.uuid)

        self.stub_out('nova.objects.Instance.save', save)
        real_fault = objects.InstanceFault.create

        def create_fault(fault):
            self.faults_created.append(
                (fault.instance_uuid, fault.message))
            return real_fault(fault)

        self.stub_out('nova.objects.InstanceFault.create', create_fault)

    def _delete_on_reschedule(self):
        """Once the action ran, delete the server when the compute manager
        removes its allocation (right before it hands a failed build back
        to the conductor)."""
        real = report.SchedulerReportClient.delete_allocation_for_instance
        test = self

        def delete_allocation(client, context, uuid, *args, **kwargs):
            result = real(client, context, uuid, *args, **kwargs)
            acted = getattr(test, '_acted', {})
            if 'node' in acted and 'deleted_on_reschedule' not in acted:
                acted['deleted_on_reschedule'] = True
                acted.setdefault('fired', []).append(
                    'delete (allocation removed)')
                # This can run after _do_build_and_run_instance returned
                # (34.0.0 removes a failed build's allocation then): the
                # compute service is not idle until the delete is done.
                with test.watch.busy():
                    test.api.delete_server(uuid)
            return result

        self.stub_out('nova.scheduler.client.report.SchedulerReportClient.'
                      'delete_allocation_for_instance', delete_allocation)

    # -- observation helpers

    def _settle(self, server_id):
        """Wait until the server is final, or nothing moves any more.

        :returns: (server or None, settled: bool, seconds waited)
        """
        start = time.monotonic()
        last = None
        last_change = start
        while True:
            server = self._server_or_none(server_id)
            key = None if server is None else (
                server['status'], server['OS-EXT-STS:task_state'],
                server['OS-EXT-SRV-ATTR:host'])
            now = time.monotonic()
            if key != last:
                last, last_change = key, now
            with self.watch.lock:
                idle = (self.watch.running == 0 and
                        self.watch.builds_pending() <= 0 and
                        now - self.watch.last_change > SETTLE_QUIET)
            final = server is None or server['status'] in ('ACTIVE', 'ERROR')
            # Before its rebuild_instance ran and returned, a REBUILD server
            # is on its way (API, conductor); after it, REBUILD is final.
            moving = (server is not None and server['status'] == 'REBUILD'
                      and not self.watch.rebuilds_done())
            # A delete the API accepted is on its way to the compute
            # service (which runs it after the build); one that never ends
            # is a "did not settle".
            moving = moving or (server is not None and
                                server['OS-EXT-STS:task_state'] == 'deleting')
            # A build handed back to the conductor (task_state scheduling)
            # is on its way to another host or to ERROR.
            moving = moving or (server is not None and
                                server['OS-EXT-STS:task_state'] ==
                                'scheduling')
            if idle and not moving and (
                    final or now - last_change > SETTLE_QUIET):
                return server, True, now - start
            if now - start > self.SETTLE_TIMEOUT:
                return server, False, now - start
            time.sleep(0.05)

    def _usages(self):
        """{rp name: CUSTOM_BAREMETAL used} for every resource provider."""
        used = {}
        for rp in self._get_all_providers():
            usage = self._get_provider_usages(rp['uuid']) or {}
            used[rp['name']] = usage.get('CUSTOM_BAREMETAL', 0)
        return used

    def _node_view(self, node_id):
        node = self.ironic.get(node_id)
        if node is None:
            return {'id': node_id, 'deleted': True}
        return {
            'history': [list(h) for h in self.ironic.history(node_id)],
            'id': node_id,
            'name': node.name,
            'provision_state': node.provision_state,
            'target_provision_state': node.target_provision_state,
            'instance_id': node.instance_id,
            'instance_info': bool(node.instance_info),
            'image_source': (node.instance_info or {}).get('image_source'),
            'vifs': self.ironic.vifs(node_id),
            'maintenance': node.is_maintenance,
        }

    def _act(self, action, node_id, server_id):
        """Perform an action on the node being deployed.

        Runs in the driver's thread, right after its poll, with the fake
        Ironic's lock held: the driver's next read sees the effect.
        """
        if action == 'undeploy':
            self.ironic.undeploy(node_id)
        elif action == 'maintenance-delete':
            self.ironic.set_maintenance(node_id)
            self.ironic.delete_node(node_id)
        elif action == 'fail':
            self.ironic.fail_deploy(node_id)
        elif action == 'abort':
            self.ironic.abort(node_id)
        elif action == 'reassociate':
            self.ironic.undeploy(node_id)
            self.ironic.settle(node_id)
            self.ironic.associate(node_id, OTHER_INSTANCE)
        elif action == 'user-delete':
            # the runner's main thread deletes it, whenever it gets to it
            # (the deploy waits in wait call-back meanwhile: see setUp)
            self._user_delete.set()
        elif action == 'delete':
            # The API sets task_state DELETING at once and casts the
            # terminate to the compute service, which waits for the build.
            self.api.delete_server(server_id)
        elif action == 'undeploy-delete':
            self.ironic.undeploy(node_id)
            self.api.delete_server(server_id)
        elif action == 'api-blip':
            self._api_outage(node_id, 503, back=True)
        elif action == 'api-down':
            self._api_outage(node_id, 'refused', back=False)
        elif action == 'api-down-delete':
            self._api_outage(node_id, 503, back=False, user_delete=True)
        else:
            raise ValueError('unknown action %r' % action)

    def _api_outage(self, node_id, answer, back, user_delete=False):
        """The Bare Metal API becomes unreachable for nova-compute
        (``IronicFixture.api_down(answer)``; the node stays held in ``wait
        call-back``).  With ``back``, it comes back right after the
        driver's first call of ``nodes`` about the node that it refused,
        and the deploy's callback comes (``release``): the event, not a
        count of reads.  Else it stays down until :meth:`_api_up`; with
        ``user_delete`` (action ``api-down-delete``), right after that
        first refused call the user deletes the server
        (:meth:`_delete_at_refusal`)."""
        fired = self._acted.setdefault('fired', [])
        self.ironic.api_down(answer)
        if back:
            def api_back(node):
                fired.append('api-up@first-refused')
                self.ironic.api_up()
                self.ironic.release(node)

            self.ironic.on_call('nodes', api_back, node=node_id)
        elif user_delete:
            self.ironic.on_call('nodes', lambda node: self._delete_at_refusal(),
                                node=node_id)

    def _delete_at_refusal(self):
        """Action ``api-down-delete``, on the first read the API refused:
        the runner's main thread deletes the server (kind
        ``outage-delete``, see _run); this thread (the driver's, before
        its read fails; against a real Ironic the API proxy's, before the
        refusal is sent) waits until the API has accepted the delete, so
        that the driver's next look at the instance sees it, whatever the
        threads' scheduling.

        :raises AssertionError: the delete did not come in time.
        """
        self._acted.setdefault('fired', []).append(
            'user-delete@first-refused')
        self._user_delete.set()
        if not self._delete_accepted.wait(self.SETTLE_TIMEOUT):
            raise AssertionError('the user delete did not come')

    def _api_up(self):
        """End the outage of ``api-down`` (kind ``outage-delete``)."""
        self._acted.setdefault('fired', []).append('api-up@settled')
        self.ironic.api_up()

    def _first_step_polls(self):
        """The poll of the first deploy after which the first step runs
        (the scenario's ``after_polls``)."""
        return self.SCENARIO.after_polls

    def _at_api_back(self, server_id, first_node):
        """The server, its claim and its first node, as the API comes
        back (kind ``outage-delete``)."""
        server = self._server_or_none(server_id) or {}
        node = self.ironic.get(first_node)
        return {
            'status': server.get('status', 'DELETED'),
            'fault': (server.get('fault') or {}).get('message'),
            'host': server.get('OS-EXT-SRV-ATTR:host'),
            'node': server.get('OS-EXT-SRV-ATTR:hypervisor_hostname'),
            'allocations': sorted(
                self._get_allocations_by_server_uuid(server_id)),
            'first_node_state': node and node.provision_state,
            'first_node_instance': node and node.instance_id,
        }

    def _boot_until_acted(self, networks):
        """Boot the server with the scenario's steps armed (``_arm``).

        :returns: ``(server, node)``: the server as created, and the node
            of the deploy the first step acted on, once it has.
        :raises AssertionError: the first step did not run in time.
        """
        done = self._arm()
        server = self._boot_baremetal_server(
            networks=networks, expected_state='BUILD')
        if not done.wait(self.SETTLE_TIMEOUT):
            raise AssertionError('the deploy was not polled %d times'
                                 % self.SCENARIO.after_polls)
        return server, self._acted['node']

    def _arm(self, node=None, server_id=None):
        """Register the scenario's steps with the fake Ironic.

        The first runs after ``after_polls`` polls of the first deploy
        (or of ``node``'s); the steps of ``then`` after their polls of the
        same node. Returns an Event set once the first step ran.
        """
        sc = self.SCENARIO
        acted = self._acted
        acted.setdefault('fired', [])
        first_done = threading.Event()

        def step(action, first):
            def run(node_id):
                if first:
                    acted['node'] = node_id
                    acted['calls'] = len(self.ironic.call_log)
                    acted['at'] = time.monotonic()
                    # the node carries the instance until its tear-down ends
                    acted['server'] = server_id or \
                        self.ironic.get(node_id).instance_id
                    for polls, then, *loop in sc.then:
                        # (a step in destroy()'s wait for the tear-down
                        # names its loop: IronicFixture.after_polls)
                        self.ironic.after_polls(polls, step(then, False),
                                                node=node_id,
                                                **({'loop': loop[0]}
                                                   if loop else {}))
                acted['fired'].append('%s@%d' % (
                    action, self.ironic.polls(node_id)))
                self._act(action, node_id, acted['server'])
                if first:
                    first_done.set()
            return run

        self.ironic.after_polls(self._first_step_polls(),
                                step(sc.action, True), node=node)
        return first_done

    # -- the scenario

    def test_scenario(self):
        sc = self.SCENARIO
        rec = {'scenario': sc.name, 'error': None}
        type(self).RESULT = rec
        try:
            self._run(sc, rec)
        except Exception:
            rec['error'] = traceback.format_exc()
            raise

    def _run(self, sc, rec):
        port_id = self.neutron.port_1['id'] if sc.port else None
        networks = [{'port': port_id}] if port_id else 'none'
        server = None
        if sc.kind == 'rebuild-error':
            server = self._boot_baremetal_server(networks=networks)
            # An admin reset puts the server in ERROR; a rebuild from ERROR
            # must still wait for the deploy (LP 1735009).
            self.api.post_server_action(
                server['id'], {'os-resetState': {'state': 'error'}})
            self._wait_for_server_parameter(
                server, {'status': 'ERROR'}, wait_for_fault_key=False)
            self.ironic.reset_calls()
            start = time.monotonic()
            # NOTE: from microversion 2.93 the API asks every rebuild to
            # re-image a boot volume, which the ironic driver refuses even
            # for image-backed servers; 2.92 is a plain rebuild.
            self.api.microversion = '2.92'
            self.api.post_server_action(server['id'], {'rebuild': {
                'imageRef': server['image']['id']}})
            self.api.microversion = 'latest'
            first_node = server['OS-EXT-SRV-ATTR:hypervisor_hostname']
            action_at = start
            self._acted = {'calls': 0, 'node': first_node}
        elif sc.kind in ('reap', 'reap-log'):
            # LP 2169200: the server is deleted while its nova-compute is
            # down (the API deletes it alone), nova-compute restarts (a new
            # driver, which lists the nodes afresh), then its periodic
            # reaper runs once.
            self.flags(running_deleted_instance_action=(
                'reap' if sc.kind == 'reap' else 'log'))
            server = self._boot_baremetal_server(networks=networks)
            first_node = server['OS-EXT-SRV-ATTR:hypervisor_hostname']
            self.compute.stop()
            service = self.compute.service_ref.uuid
            self.api.put_service_force_down(service, forced_down=True)
            self._delete_server(server)
            self.api.put_service_force_down(service, forced_down=False)
            self.compute = self.restart_compute_service(
                self.compute, keep_hypervisor_state=False)
            self.ironic.reset_calls()
            self._acted = {'calls': 0, 'node': first_node}
            action_at = time.monotonic()
            self.compute.manager._cleanup_running_deleted_instances(
                nova_context.get_admin_context())
        elif sc.kind == 'cleanup-fail-delete':
            # LP 2169779: the deploy fails (the scenario's action), Ironic's
            # API refuses the build clean-up's tear-down request once (503,
            # as while it restarts), then the user deletes the server in
            # ERROR.
            acted = self._acted = {}
            self._refuse_teardown_once(acted)
            server, first_node = self._boot_until_acted(networks)
            self._wait_for_state_change(server, 'ERROR')
            action_at = time.monotonic()
            self.api.delete_server(server['id'])
        elif sc.kind == 'outage-delete':
            # Bug BBBBBBB: the API goes down during the deploy (the
            # scenario's action) and stays down until the build has
            # settled; then it comes back and the user deletes the server.
            # With ``api-down-delete`` the user deletes the server right
            # after the first read the API refused (_delete_at_refusal),
            # from here, then deletes it again once the API is back.
            acted = self._acted = {}
            self._user_delete = threading.Event()
            self._delete_accepted = threading.Event()
            server, first_node = self._boot_until_acted(networks)
            if sc.action == 'api-down-delete':
                if not self._user_delete.wait(self.SETTLE_TIMEOUT):
                    raise AssertionError('the API refused no read of the '
                                         'node')
                try:
                    self.api.delete_server(server['id'])
                finally:
                    self._delete_accepted.set()
            _, settled, _ = self._settle(server['id'])
            if not settled:
                raise AssertionError('the build did not settle during the '
                                     'outage')
            self._api_up()
            rec['at_api_back'] = self._at_api_back(server['id'], first_node)
            action_at = acted['at']
            if rec['at_api_back']['status'] != 'DELETED':
                self.api.delete_server(server['id'])
        elif sc.kind == 'build-delete':
            # A control: the delete of an ACTIVE server tears its node
            # down (destroy() waits for Ironic's own tear-down).
            server, first_node, action_at = self._boot_active(networks)
            self.api.delete_server(server['id'])
        elif sc.kind == 'undeploy-active-delete':
            # Issue 37: an operator undeploys the node of an ACTIVE server
            # and, while Ironic tears it down (``deleting``, locked by its
            # conductor), the user deletes the server.
            server, first_node, action_at = self._boot_active(networks)
            self.ironic.configure_node(
                first_node, deleting_reads=sc.deleting_reads)
            self.ironic.undeploy(first_node)
            self.api.delete_server(server['id'])
        elif sc.kind == 'rebuild-newest':
            # No pinned microversion: from 2.93 on the API asks the driver
            # to re-image the boot volume, which an image-backed server
            # does not have (bug KKKKKKK).
            server, first_node, action_at = self._boot_active(networks)
            rec['rebuild_image'] = self.glance.image2['id']
            self.api.post_server_action(server['id'], {'rebuild': {
                'imageRef': rec['rebuild_image']}})
        elif sc.kind == 'rebuild':
            # Rebuild an ACTIVE server; act during the rebuild's deploy.
            server = self._boot_baremetal_server(networks=networks)
            first_node = server['OS-EXT-SRV-ATTR:hypervisor_hostname']
            self.ironic.reset_calls()
            acted = self._acted = {}
            done = self._arm(node=first_node, server_id=server['id'])
            # NOTE: 2.92, not 2.93+: see rebuild-error above.
            self.api.microversion = '2.92'
            self.api.post_server_action(server['id'], {'rebuild': {
                'imageRef': server['image']['id']}})
            self.api.microversion = 'latest'
            if not done.wait(self.SETTLE_TIMEOUT):
                raise AssertionError('the rebuild was not polled %d times'
                                     % sc.after_polls)
            action_at = acted['at']
        else:
            self._user_delete = threading.Event()
            acted = self._acted = {}
            done = self._arm() if sc.action else None
            server = self._boot_baremetal_server(
                networks=networks, expected_state='BUILD')
            if sc.action == 'user-delete':
                if not self._user_delete.wait(self.SETTLE_TIMEOUT):
                    raise AssertionError('the deploy was not polled %d '
                                         'times' % sc.after_polls)
                # The first deploy stays in wait call-back, so a poll after
                # the delete sees it (the API has set task_state DELETING
                # when it returns). Deploys that start later (a
                # reschedule's) get their callback as usual.
                for node_id in self.node_ids:
                    if node_id != acted['node']:
                        self.ironic.configure_node(
                            node_id,
                            callback_reads=self.ironic.defaults[
                                'callback_reads'])
                self.api.delete_server(server['id'])
            if done is None:
                first_node = self.ironic.wait_for_deploy(server['id'])
            elif done.wait(self.SETTLE_TIMEOUT):
                # (the node may carry another instance by now)
                first_node = acted['node']
            else:
                raise AssertionError('the deploy was not polled %d times'
                                     % sc.after_polls)
            action_at = acted.get('at', time.monotonic())
        final, settled, waited = self._settle(server['id'])
        end = time.monotonic()
        if sc.settle_ironic:
            self.ironic.settle()
        self._record(sc, rec, server, final, settled, first_node,
                     action_at, end, port_id)
        if sc.kind == 'recovery':
            rec['recovery'] = self._recovery_steps(server)

    def _boot_active(self, networks):
        """Boot a server to ACTIVE; what comes next is the action.

        :returns: (server, its node, the action's time (monotonic s)).
        """
        server = self._boot_baremetal_server(networks=networks)
        first_node = server['OS-EXT-SRV-ATTR:hypervisor_hostname']
        self.ironic.reset_calls()
        self._acted = {'calls': 0, 'node': first_node}
        return server, first_node, time.monotonic()

    def _refuse_teardown_once(self, acted):
        """Ironic's API answers the next ``deleted`` request with 503; the
        refusal is recorded in ``acted['fired']``."""
        proxy = self.ironic.proxy.set_node_provision_state
        real = proxy.side_effect

        def unavailable_once(node, target, *args, **kwargs):
            if target == 'deleted' and proxy.side_effect is unavailable_once:
                proxy.side_effect = real
                acted.setdefault('fired', []).append('refuse-teardown@%d' % (
                    self.ironic.polls(getattr(node, 'id', node))))
                raise sdk_exc.HttpException(message='503 Service Unavailable')
            return real(node, target, *args, **kwargs)

        proxy.side_effect = unavailable_once

    def _status(self, server_id):
        server = self._server_or_none(server_id)
        return 'DELETED' if server is None else server['status']

    def _recovery_steps(self, server):
        """Try what doc/operators.rst says about stuck servers, in order.

        :returns: {step: what it showed}
        """
        sid = server['id']
        steps = {}
        # 1. Find them: BUILD servers of all projects, with no host.
        listed = self.api.get_servers(
            detail=True, search_opts={'all_tenants': '1',
                                      'status': 'BUILD'})
        steps['listed_in_build_without_host'] = any(
            s['id'] == sid and not s['OS-EXT-SRV-ATTR:host']
            for s in listed)
        # 2. [DEFAULT] instance_build_timeout: make the server look old and
        #    run the periodic task that enforces it.
        ctx = nova_context.get_admin_context()
        inst = objects.Instance.get_by_uuid(ctx, sid)
        inst.created_at = inst.created_at.replace(year=2000)
        inst.save()
        self.flags(instance_build_timeout=60)
        self.compute.manager._check_instance_build_time(ctx)
        steps['after_instance_build_timeout'] = self._status(sid)
        # 3. Restart nova-compute.
        self.compute = self.restart_compute_service(self.compute)
        steps['after_compute_restart'] = self._status(sid)
        # 4. Admin reset-state to error.
        self.api.post_server_action(
            sid, {'os-resetState': {'state': 'error'}})
        steps['after_reset_state'] = self._status(sid)
        # 5. Delete.
        self.api.delete_server(sid)
        self._wait_until_deleted({'id': sid})
        steps['after_delete'] = self._status(sid)
        steps['allocations_after_delete'] = \
            self._get_allocations_by_server_uuid(sid)
        return steps

    def _record(self, sc, rec, server, final, settled, first_node,
                action_at, end, port_id):
        sid = server['id']
        rec['server_id'] = sid
        rec['settled'] = settled
        # The fault a lost node must give, from this tree's IronicNodeLost
        # (the fix's exception; absent on the reproducer tree).
        lost = getattr(nova_exception, 'IronicNodeLost', None)
        if lost is not None:
            rec['lost_fault'] = lost.msg_fmt % {'node': first_node,
                                                'instance': sid}
            rec['lost_fault_fields'] = sorted(
                set(re.findall(r'%\((\w+)\)', lost.msg_fmt)))
        rec['wall_seconds_after_action'] = round(end - action_at, 3)
        rec['image'] = ((server.get('image') or {}).get('id') or
                        ((final or {}).get('image') or {}).get('id'))
        if final is None:
            rec.update(status='DELETED', vm_state=None, task_state=None,
                       host=None, node=None, fault=None)
        else:
            rec.update(
                status=final['status'],
                vm_state=final['OS-EXT-STS:vm_state'],
                task_state=final['OS-EXT-STS:task_state'],
                host=final['OS-EXT-SRV-ATTR:host'],
                node=final['OS-EXT-SRV-ATTR:hypervisor_hostname'],
                fault=(final.get('fault') or {}).get('message'))
        rec['first_node'] = first_node
        rec['nodes'] = [self._node_view(n) for n in self.node_ids]
        rec['first_node_history'] = [
            list(h) for h in self.ironic.history(first_node)]
        rec['allocations'] = {
            rp: a['resources'] for rp, a in
            self._get_allocations_by_server_uuid(sid).items()}
        rec['usages'] = self._usages()
        rec['build_results'] = list(self.watch.results)
        rec['port_id'] = port_id
        if port_id:
            port = self.neutron.show_port(port_id)['port']
            rec['port_device_id'] = port.get('device_id') or None
        # Ironic calls: every driver call after the action, and the polls
        # of the instance among them.
        log = list(self.ironic.call_log)
        rec['ironic_calls'] = dict(collections.Counter(c.method for c in log))
        rec['ironic_calls_total'] = len(log)
        rec.update(poll_stats(log, first_node))
        # Driver polls (on any node) from the operator's action to the end:
        # times [ironic] api_retry_interval, the time a user waits.
        after = log[self._acted.get('calls', len(log)):]
        rec['polls_after_action'] = sum(
            1 for c in after if c.method == 'nodes' and c.node is not None)
        # ... of which polls of a held deploy, whose number is timing
        start = self._acted.get('calls', len(log))
        rec['held_polls_after_action'] = sum(
            1 for at in getattr(self, 'held_polls', ()) if at >= start)
        # What Nova sent to the first node after the action, reads aside.
        rec['writes_after_action'] = [
            c.method for c in after if c.node == first_node and
            c.method not in ironic_fixture.READ_METHODS]
        rec['hooks_fired'] = list(self._acted.get('fired', []))
        if sc.action == 'reassociate':
            rec['other_instance'] = OTHER_INSTANCE
        rec['error_saves'] = self.error_saves.count(sid)
        rec['faults_created'] = [m for u, m in self.faults_created
                                 if u == sid]
        rec['log'] = log_lines(self.stdlog.logger.output)
        rec['driver_warnings'] = [
            line.split('] ', 1)[1] for line in rec['log']
            if line.startswith('WARNING [nova.virt.ironic.driver]')]
        ctx = nova_context.get_admin_context()
        actions = objects.InstanceActionList.get_by_instance_uuid(ctx, sid)
        rec['instance_actions'] = [a.action for a in actions]


def make_case(scenario, base=ScenarioTest, **attrs):
    return type('Scenario_%s' % scenario.name.replace('-', '_'), (base,),
                dict(attrs, SCENARIO=scenario, NUM_NODES=scenario.nodes))


def run_scenario(scenario, base=ScenarioTest, **attrs):
    """Run one scenario in a fresh Nova test environment.

    :param base: ScenarioTest, or RealScenarioTest (with its ``attrs``).
    :returns: the observation dict (see ScenarioTest._record).
    """
    case = make_case(scenario, base, **attrs)
    result = unittest.TestResult()
    started = time.monotonic()
    case('test_scenario').run(result)
    rec = case.RESULT or {'scenario': scenario.name}
    problems = result.errors + result.failures
    if problems and not rec.get('error'):
        rec['error'] = problems[0][1]
    rec['test_seconds'] = round(time.monotonic() - started, 2)
    rec['definition'] = scenario.describe()
    return rec


# -- benchmark -------------------------------------------------------------
