"""The scenario matrix, run inside a prepared Nova tree.

This module is not part of the harness's import tree: ``novaseries run``
executes it with the target's virtualenv Python, with the working directory
and ``PYTHONPATH`` set to a Nova tree that has the series applied (up to the
reproducer commit, or whole). It uses that tree's functional-test framework
(``nova.tests.functional.ironic.base.IronicTestBase``: real API, conductor,
scheduler, placement and compute services, the real ``IronicDriver`` and the
``IronicFixture`` fake Ironic that the series adds), runs each scenario once
and writes what it observed as JSON (the keys: ``scenario_table.OBSERVATION``).
It records; it does not judge: the scenarios and the expected outcomes are
defined in ``scenario_table.py`` next to it.

Usage (what ``novaseries run`` does for each tree)::

    cd <tree>; PYTHONPATH=<tree> <venv>/bin/python nova_scenarios.py \\
        --out results.json [--scenario NAME ...]
    cd <tree>; PYTHONPATH=<tree> <venv>/bin/python nova_scenarios.py \\
        --out results.json --bench N:S:K[:option=value,...] RUN [--deadline S]

``--bench`` makes one run (number RUN, its seed) of one benchmark spec
(``bench_table.parse``); the harness starts a process for each run. A run
prints a progress line every PROGRESS_EVERY seconds on stderr; one that has
not ended after ``--deadline`` seconds writes its threads' stacks, who
holds Nova's test database locks and the end of Nova's log there, a record
with an ``error``, and exits 3 (see _Watchdog); SIGUSR1 dumps the stacks
(faulthandler) at any time.
"""

import argparse
import collections
import contextlib
import faulthandler
import gc
import json
import os
import random
import re
import signal
import sys
import threading
import time
import traceback
import unittest

# The test package applies Nova's monkey patching; it must come first.
import nova.tests.functional  # noqa: F401  isort:skip
from nova.compute import manager as compute_manager  # noqa: E402
from nova.compute import vm_states  # noqa: E402
from nova import context as nova_context  # noqa: E402
from nova import exception as nova_exception  # noqa: E402
from nova import objects  # noqa: E402
from nova.scheduler.client import report  # noqa: E402
from nova.tests.fixtures import ironic as ironic_fixture  # noqa: E402
from nova.tests.functional.ironic import base as ironic_base  # noqa: E402
from nova.virt.ironic import driver as ironic_driver  # noqa: E402
from nova.virt.ironic import ironic_states as states  # noqa: E402
from nova.virt.ironic import patcher as ironic_patcher  # noqa: E402
import fixtures  # noqa: E402
from openstack import exceptions as sdk_exc  # noqa: E402
import openstack.proxy  # noqa: E402

# The scenario table lives next to this file (sys.path[0] when it runs as a
# script); standard library only.
import bench_table  # noqa: E402

#: ``real_backend`` (this folder), imported by main() for ``--ironic
#: real`` only: it needs ``novaseries`` (the harness's checkout) on the
#: path, which the fake run does not have.
real_backend = None
from scenario_table import BY_NAME, OTHER_INSTANCE, SCENARIOS  # noqa: E402

#: How long a scenario may take to settle, in seconds (wall clock).
SETTLE_TIMEOUT = 30.0
#: A server is settled when nothing changed for this long (seconds) and no
#: build is running.
SETTLE_QUIET = 0.6


class _BuildWatch:
    """Wraps ComputeManager._do_build_and_run_instance, rebuild_instance and
    terminate_instance to see builds, rebuilds and deletes.

    Records each build attempt's result (``active``, ``rescheduled``,
    ``failed``), each rebuild's (``rebuilt``, ``rebuild-exception``) and
    each delete's (``terminated``, ``terminate-exception``), and how many
    are running, so the runner knows when the compute service is idle.
    """

    #: Build results after which the compute manager neither removes the
    #: build's allocation nor calls _build_failed()/_build_succeeded().
    NO_BUILD_END = ('failed_by_policy', 'rescheduled_by_policy')

    def __init__(self):
        self.lock = threading.Lock()
        self.running = 0
        self.results = []
        self.last_change = time.monotonic()
        # builds whose _do_build_and_run_instance returned, and those whose
        # end the compute manager has recorded since (_build_failed() or
        # _build_succeeded(): after a failed build it first removes the
        # build's allocation, outside _do_build_and_run_instance)
        self.builds_returned = 0
        self.builds_ended = 0

    def install(self, test):
        self._wrap(test, '_do_build_and_run_instance', None, 'exception')
        self._wrap(test, 'rebuild_instance', 'rebuilt', 'rebuild-exception')
        self._wrap(test, 'terminate_instance', 'terminated',
                   'terminate-exception')
        for method in ('_build_failed', '_build_succeeded'):
            self._wrap_end(test, method)

    def _wrap_end(self, test, method):
        real = getattr(compute_manager.ComputeManager, method)
        watch = self

        def wrapper(mgr, *args, **kwargs):
            try:
                return real(mgr, *args, **kwargs)
            finally:
                with watch.lock:
                    watch.builds_ended += 1
                    watch.last_change = time.monotonic()

        test.stub_out('nova.compute.manager.ComputeManager.' + method,
                      wrapper)

    def builds_pending(self):
        """Builds that returned but whose end the compute manager has not
        recorded yet (call with the lock held)."""
        return self.builds_returned - self.builds_ended

    def _wrap(self, test, method, returned, raised):
        real = getattr(compute_manager.ComputeManager, method)
        watch = self

        def wrapper(mgr, *args, **kwargs):
            result = raised
            with watch.busy():
                try:
                    value = real(mgr, *args, **kwargs)
                    result = value if returned is None else returned
                    return value
                finally:
                    with watch.lock:
                        watch.results.append(str(result))
                        if (method == '_do_build_and_run_instance' and
                                str(result) not in watch.NO_BUILD_END):
                            watch.builds_returned += 1

        test.stub_out('nova.compute.manager.ComputeManager.' + method,
                      wrapper)

    @contextlib.contextmanager
    def busy(self):
        """Count the body as running work (for the settle)."""
        with self.lock:
            self.running += 1
            self.last_change = time.monotonic()
        try:
            yield
        finally:
            with self.lock:
                self.running -= 1
                self.last_change = time.monotonic()

    def rebuilds_done(self):
        with self.lock:
            return sum(1 for r in self.results if r.startswith('rebuil'))


class _Observe:
    """Helpers shared by the scenario and benchmark test cases."""

    def _server_or_none(self, server_id):
        """The server from the API, or None once it is deleted (404)."""
        try:
            return self.api.get_server(server_id)
        except Exception as e:
            if getattr(e, 'response', None) is not None and getattr(
                    e.response, 'status_code', None) == 404:
                return None
            if '404' in str(e) or 'NotFound' in type(e).__name__:
                return None
            raise


class ScenarioTest(_Observe, ironic_base.IronicTestBase):
    """Runs one Scenario (set as the class attribute SCENARIO)."""

    SCENARIO = None
    CALLBACK_READS = 3
    NUM_NODES = 1
    RESULT = None
    #: Seconds a scenario may take to settle, and a step to come.
    SETTLE_TIMEOUT = SETTLE_TIMEOUT

    def setUp(self):
        self.watch = _BuildWatch()
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
                   if self.SCENARIO.action == 'user-delete' else {}))
        self._watch_errors_and_faults()
        self._count_held_polls()
        if self.SCENARIO.delete_on_reschedule:
            self._delete_on_reschedule()

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
        else:
            raise ValueError('unknown action %r' % action)

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

        self.ironic.after_polls(sc.after_polls, step(sc.action, True),
                                node=node)
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
            done = self._arm()
            server = self._boot_baremetal_server(
                networks=networks, expected_state='BUILD')
            if not done.wait(self.SETTLE_TIMEOUT):
                raise AssertionError('the deploy was not polled %d times'
                                     % sc.after_polls)
            first_node = acted['node']
            self._wait_for_state_change(server, 'ERROR')
            action_at = time.monotonic()
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
        rec.update(_poll_stats(log, first_node))
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
        rec['log'] = _log_lines(self.stdlog.logger.output)
        rec['driver_warnings'] = [
            line.split('] ', 1)[1] for line in rec['log']
            if line.startswith('WARNING [nova.virt.ironic.driver]')]
        ctx = nova_context.get_admin_context()
        actions = objects.InstanceActionList.get_by_instance_uuid(ctx, sid)
        rec['instance_actions'] = [a.action for a in actions]


#: The loggers whose lines an observation keeps (INFO and up).
LOGGERS = ('nova.virt.ironic.driver', 'nova.compute.manager')
_LOG_LINE = re.compile(r'^\S+ \S+ (INFO|WARNING|ERROR|CRITICAL) '
                       r'\[(%s)\] (.*)$' % '|'.join(
                           re.escape(n) for n in LOGGERS))


def _log_lines(output):
    """``LEVEL [logger] message`` of each INFO+ line of LOGGERS (first
    line of each record; tracebacks are left out)."""
    lines = []
    for line in output.splitlines():
        m = _LOG_LINE.match(line)
        if m:
            lines.append('%s [%s] %s' % m.groups())
    return lines


def _poll_stats(log, node_id):
    """Polls and calls per poll of the first deploy, from the call log.

    A poll is a ``nodes`` call about ``node_id`` (the fixture attributes
    ``nodes(instance_id=X)`` to the node deploying X). The wait loop's calls
    are those between the first and the last poll of that deploy.
    """
    polls = [i for i, c in enumerate(log)
             if c.method == 'nodes' and c.node == node_id]
    if not polls:
        return {'polls': 0, 'calls_per_poll': None}
    window = log[polls[0]:polls[-1] + 1]
    return {
        'polls': len(polls),
        'calls_per_poll': round(len(window) / len(polls), 2),
    }


#: The unpatched Proxy.get_endpoint: nova.test mocks it
#: (OpenStackSDKFixture), as no functional test talks to a real service.
_REAL_GET_ENDPOINT = openstack.proxy.Proxy.get_endpoint


class RealScenarioTest(ScenarioTest):
    """ScenarioTest with a real Ironic instead of the fake
    (``--ironic real``; ``real_backend`` says what changes).

    ``INFO`` is the harness's ``--ironic-info``; ``REQUESTS_DIR`` where
    each scenario's requests go (``<scenario>.requests.jsonl``).
    """

    INFO = None
    REQUESTS_DIR = None
    #: A real tear-down and reschedule take seconds, not reads.
    SETTLE_TIMEOUT = 90.0

    def _start_ironic(self):
        sc = self.SCENARIO
        self.flags(compute_driver='ironic.IronicDriver')
        self.flags(auth_type='none', endpoint_override=self.INFO['url'],
                   api_retry_interval=real_backend.POLL_INTERVAL,
                   group='ironic')
        # Nova's baremetal connection reaches the real Ironic; placement
        # and Neutron stay the functional tests' own fakes (placement's
        # proxy needs OpenStackSDKFixture's mock of get_endpoint).
        mocked = openstack.proxy.Proxy.get_endpoint

        def get_endpoint(proxy, *args, **kwargs):
            if getattr(proxy, 'service_type', None) == 'baremetal':
                return _REAL_GET_ENDPOINT(proxy, *args, **kwargs)
            return mocked(*args, **kwargs)

        self.useFixture(fixtures.MonkeyPatch(
            'openstack.proxy.Proxy.get_endpoint', get_endpoint))
        self.ironic = real_backend.RealIronicBackend(
            self.INFO, deploying_reads=1 if sc.deploying_reads is None
            else sc.deploying_reads)
        # the fake fails the deploy when the step comes; a real deploy
        # fails by itself, from the start (its image answers 404)
        self.ironic.fail_next_deploy = sc.action == 'fail'
        self.ironic.install(self, ironic_driver, ironic_patcher)
        # runs after the compute service stopped (cleanups run in reverse)
        self.addCleanup(self._sweep)
        self.node_ids = self.ironic.enrol(
            real_backend.deploy_interfaces(sc, self.NUM_NODES))
        self.compute = self._start_compute(self.HOST)
        self.flavor_id = self._create_flavor(
            name='baremetal', memory_mb=1024, vcpu=1, disk=10, ephemeral=0,
            extra_spec=ironic_base.BAREMETAL_EXTRA_SPECS)
        self.ironic.reset_calls()

    def _boot_baremetal_server(self, networks='none',
                               expected_state='ACTIVE'):
        """As the fake's, with a real deploy's time to reach ACTIVE; a
        server booted for a rebuild (kind ``rebuild``) then has its node
        switched to the ``direct`` deploy interface, so that the rebuild
        waits in ``wait call-back`` for the scenario's step."""
        server = super()._boot_baremetal_server(networks, 'BUILD')
        if expected_state == 'BUILD':
            return server
        server = self._wait_for_status(server['id'], expected_state)
        if self.SCENARIO.kind == 'rebuild':
            self.ironic.set_deploy_interface(
                server['OS-EXT-SRV-ATTR:hypervisor_hostname'], 'direct')
        return server

    def _wait_for_status(self, server_id, status):
        """The server once it has ``status`` (within SETTLE_TIMEOUT s);
        unlike Nova's _wait_for_server_parameter, it fails at once on
        ERROR, with the fault.  :raises AssertionError: ERROR, or not in
        time."""
        deadline = time.monotonic() + self.SETTLE_TIMEOUT
        while True:
            server = self.api.get_server(server_id)
            if server['status'] == status:
                return server
            if server['status'] == 'ERROR' or time.monotonic() > deadline:
                raise AssertionError('server %s is %s, not %s: %s' % (
                    server_id, server['status'], status,
                    server.get('fault')))
            time.sleep(0.1)

    def _act(self, action, node_id, server_id):
        # The first step: the nodes still free deploy to the end from now
        # on (a reschedule ends ACTIVE), as the fake's agent would call
        # back.
        if not getattr(self, '_free_nodes_switched', False):
            self._free_nodes_switched = True
            self.ironic.free_nodes_deploy('fake', but=node_id)
        super()._act(action, node_id, server_id)
        if action == 'undeploy' and self.SCENARIO.deleting_reads == 0:
            # The fake's driver sees only the aftermath: hold its thread
            # until Ironic's tear-down cleared the association (50-170
            # ms without delays, about 4 s with them), as a real
            # tear-down shorter than the poll interval would.
            self.ironic.wait_cleared(node_id)

    def _node_view(self, node_id):
        view = super()._node_view(node_id)
        if 'image_source' in view:
            view['image_source'] = real_backend.glance_id(
                view['image_source'])
        return view

    def _record(self, sc, rec, *args, **kwargs):
        # Ironic goes on by itself (cleaning after a tear-down): what the
        # node is once it settled.
        self.ironic.settle()
        super()._record(sc, rec, *args, **kwargs)
        rec['backend'] = 'real Ironic'
        rec['leftover_nodes_removed'] = list(self.ironic.leftovers_removed)

    def _sweep(self):
        """Remove the scenario's nodes, then keep every request (the
        sweep's too), also when the scenario failed in its setUp."""
        try:
            self.ironic.sweep()
        finally:
            records = self.ironic.requests()
            path = None
            if self.REQUESTS_DIR:
                path = os.path.join(self.REQUESTS_DIR,
                                    '%s.requests.jsonl' % self.SCENARIO.name)
                real_backend.dump(records, path)
            rec = type(self).RESULT
            if rec is not None:
                actors = collections.Counter(r['actor'] for r in records)
                rec['nova_requests'] = actors['nova']
                rec['operator_requests'] = actors['operator']
                rec['requests_file'] = path

    def _arm(self, node=None, server_id=None):
        # a step that raises (in the driver's thread, where the backend
        # keeps its error) must not leave _run waiting for it
        done = super()._arm(node, server_id)
        self.ironic.on_error = done.set
        return done

    def test_scenario(self):
        try:
            super().test_scenario()
        finally:
            errors = list(self.ironic.errors)
            if errors:
                rec = type(self).RESULT
                # the step's error first: what followed is its consequence
                rec['error'] = 'a scenario step or the request recorder ' \
                    'failed (the scenario did not happen as defined):\n' + \
                    '\n'.join(errors) + (
                        '\nthen: ' + rec['error'] if rec.get('error') else '')
        if errors:
            raise AssertionError(rec['error'])


def _make_case(scenario, base=ScenarioTest, **attrs):
    return type('Scenario_%s' % scenario.name.replace('-', '_'), (base,),
                dict(attrs, SCENARIO=scenario, NUM_NODES=scenario.nodes))


def run_scenario(scenario, base=ScenarioTest, **attrs):
    """Run one scenario in a fresh Nova test environment.

    :param base: ScenarioTest, or RealScenarioTest (with its ``attrs``).
    :returns: the observation dict (see ScenarioTest._record).
    """
    case = _make_case(scenario, base, **attrs)
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

#: Polls a healthy deploy is answered ``wait call-back`` before its agent
#: calls back (the bench holds every deploy there: the fixture's
#: ``callback_reads=None``).
HEALTHY_WAIT_POLLS = 3
#: A settled benchmark: no build attempt running, nothing changed for this
#: long (seconds; covers the conductor's hop between a failed attempt and
#: the reschedule's next one).
BENCH_QUIET = 1.0


class BenchTest(_Observe, ironic_base.IronicTestBase):
    """N concurrent builds on N + S nodes; K deploys torn down in their wait.

    Every deploy waits in ``wait call-back`` until the bench acts (nothing
    else moves it on): the first K instances whose deploy reaches it (so,
    with K >= max_concurrent_builds, the first wave of builds) are
    undeployed (``baremetal node undeploy``) after a random poll 1..3 of
    that wait (seeded), every other deploy -- a rescheduled one too -- gets
    its agent's callback after HEALTHY_WAIT_POLLS polls. So exactly K
    builds are affected, each before its deploy completed.
    """

    SPEC = None     # bench_table.BenchSpec
    RUN = 1
    CALLBACK_READS = None
    RESULT = None
    WATCHDOG = None

    def setUp(self):
        self.NUM_NODES = self.SPEC.n + self.SPEC.s
        self.watch = _BuildWatch()
        if self.WATCHDOG:
            self.WATCHDOG.test = self
        super().setUp()
        self.watch.install(self)
        # The benchmark measures the control plane at api_retry_interval =
        # 0, the polls of deploys held in wait call-back included: they do
        # not wait for a change of the fake Ironic.
        self.ironic.held_poll_wait = 0
        # The default quota is 10 instances per project.
        self.flags(instances=-1, cores=-1, ram=-1, group='quota')
        # Count instances in the API database (and cores and RAM in
        # placement), not across the cells: the legacy count targets cell0
        # in every create and every conductor recheck, which takes Nova's
        # CellDatabases write lock, and in threading mode (34.0.0's
        # DatabaseWriteLock) that deadlocks the run against any write
        # transaction that reads with an untargeted context (the service
        # report every 10 s) while the conductor writes inside target_cell.
        self.flags(count_usage_from_placement=True, group='quota')
        for node_id in self.node_ids:
            # deploying_reads=0: the first poll of a deploy sees wait
            # call-back whatever other builds read meanwhile, so that every
            # healthy build makes the same Ironic calls
            self.ironic.configure_node(node_id, deploying_reads=0,
                                       deleting_reads=2)
        self._record_attempts()

    def _start_ironic(self):
        # max_concurrent_builds is read when the compute service starts
        random.seed(self.RUN)
        for name, value, group in self.SPEC.flags():
            self.flags(**{name: value, 'group': group})
        super()._start_ironic()

    def _record_attempts(self):
        """Per instance: each build attempt (node, time, call log index,
        result), the node's poll count after each spawn() and destroy(), and
        when it reached ACTIVE or ERROR."""
        self.attempts = collections.defaultdict(list)
        self.spawns = collections.defaultdict(list)
        self.destroys = collections.defaultdict(list)
        self.final_at = {}
        self.final_cpu = {}
        test = self
        real_build = compute_manager.ComputeManager._do_build_and_run_instance

        def build(mgr, context, instance, *args, **kwargs):
            att = {'start': time.monotonic(), 'result': 'exception',
                   'first_call': len(test.ironic.call_log)}
            test.attempts[instance.uuid].append(att)
            try:
                att['result'] = str(real_build(mgr, context, instance,
                                               *args, **kwargs))
                return att['result']
            finally:
                att.update(end=time.monotonic(), cpu=time.process_time(),
                           node=instance.node,
                           last_call=len(test.ironic.call_log))

        # around _BuildWatch's wrapper (installed first)
        self.stub_out('nova.compute.manager.ComputeManager.'
                      '_do_build_and_run_instance', build)

        def polls_after(method, store):
            # spawn(), and destroy() (the clean-up of a failed deploy waits
            # for the node's tear-down): the node's polls when it returned,
            # of the deploy and of destroy()'s waits
            real = getattr(ironic_driver.IronicDriver, method)

            def wrapper(driver, context, instance, *args, **kwargs):
                try:
                    return real(driver, context, instance, *args, **kwargs)
                finally:
                    try:
                        polls = test.ironic.polls(instance.node) + (
                            test.ironic.polls(instance.node, 'teardown'))
                    except Exception:
                        polls = None    # (never hide the call's own error)
                    store[instance.uuid].append(
                        {'node': instance.node, 'polls': polls,
                         'end': time.monotonic()})

            self.stub_out('nova.virt.ironic.driver.IronicDriver.' + method,
                          wrapper)

        polls_after('spawn', self.spawns)
        polls_after('destroy', self.destroys)
        real_save = objects.Instance.save

        def save(instance, *args, **kwargs):
            final = ('vm_state' in instance.obj_what_changed() and
                     instance.vm_state in (vm_states.ACTIVE,
                                           vm_states.ERROR))
            real_save(instance, *args, **kwargs)
            if final:
                test.final_at[instance.uuid] = time.monotonic()
                test.final_cpu[instance.uuid] = time.process_time()

        self.stub_out('nova.objects.Instance.save', save)

    def _hold_deploys(self, victims):
        """Decide at each entry into wait call-back: undeploy or callback."""
        rng = random.Random(self.RUN)
        seen = set()

        def teardown(instance):
            def run(node_id):
                victims[instance].update(
                    at=time.monotonic(), state=self.ironic.state(node_id)[0],
                    polls_at=self.ironic.polls(node_id))
                self.ironic.undeploy(node_id)
            return run

        def at_poll(count, action, node_id):
            # on_wait runs right after the read that moved the node into
            # wait call-back: the deploy's first poll (counted already) or
            # another build's read. With deploying_reads=0 every poll of
            # the deploy sees wait call-back, so poll N of the deploy is
            # poll N of its wait.
            if self.ironic.polls(node_id) >= count:
                action(node_id)
            else:
                self.ironic.after_polls(count, action, node=node_id)

        def on_wait(node_id):
            instance = self.ironic.get(node_id).instance_id
            if instance not in seen and len(victims) < self.SPEC.k:
                poll = rng.randint(1, HEALTHY_WAIT_POLLS)
                victims[instance] = {'server': instance, 'node': node_id,
                                     'poll': poll}
                at_poll(poll, teardown(instance), node_id)
            else:
                at_poll(HEALTHY_WAIT_POLLS, self.ironic.finish_deploy,
                        node_id)
            seen.add(instance)

        self.ironic.on_state(states.DEPLOYWAIT, on_wait, once=False)

    def _ended(self):
        """{server id: [result of each ended build attempt]}."""
        return {sid: [a['result'] for a in atts if 'end' in a]
                for sid, atts in self.attempts.items()}

    def _views(self, ids):
        """{server id: None (not in the API) or {'status', 'node',
        'fault'}}."""
        listed = {s['id']: s for s in self.api.get_servers(detail=True)}
        views = {}
        for sid in ids:
            server = listed.get(sid)
            if server is None:
                views[sid] = None
                continue
            fault = None
            if server['status'] == 'ERROR':
                fault = (self.api.get_server(sid).get('fault') or {}).get(
                    'message')
            views[sid] = {'status': server['status'], 'fault': fault,
                          'node': server['OS-EXT-SRV-ATTR:hypervisor_hostname']}
        return views

    def _wait_settled(self, ids, stall=SETTLE_TIMEOUT):
        """Until no attempt runs, nothing changed for BENCH_QUIET and every
        server has reached its end (bench_table.settled).

        Watches the runner's own bookkeeping while builds run (API requests
        would cost CPU in the measured process), then asks the API. Gives
        up once nothing moved for ``stall`` seconds -- no build attempt
        started or ended, no server became ACTIVE or ERROR --, not after a
        fixed time: a slow run (threading mode, a loaded machine) is not a
        stuck one.

        :returns: (views as _views() gives them, settled: bool).
        """
        begin = time.monotonic()
        while True:
            with self.watch.lock:
                moved = max(begin, self.watch.last_change)
                idle = (self.watch.running == 0 and time.monotonic() -
                        self.watch.last_change > BENCH_QUIET)
            moved = max(moved, max(self.final_at.values(), default=0))
            if idle and all(sid in self.final_at or self.attempts.get(sid)
                            for sid in ids):
                views = self._views(ids)
                if bench_table.settled(views, self._ended()):
                    return views, True
            if time.monotonic() - moved > stall:
                return self._views(ids), False
            time.sleep(0.1)

    def test_bench(self):
        spec = self.SPEC
        rec = {'spec': spec.text, 'run': self.RUN, 'n': spec.n, 's': spec.s,
               'k': spec.k, 'options': dict(spec.options), 'error': None}
        type(self).RESULT = rec
        victims = {}
        self._hold_deploys(victims)
        self.ironic.reset_calls()
        start, cpu = time.monotonic(), time.process_time()
        ids = [self._boot_baremetal_server(expected_state='BUILD')['id']
               for _ in range(spec.n)]
        views, rec['settled'] = self._wait_settled(ids)
        # until the last attempt ended or server got final (not the settle)
        ends = [(a['end'], a['cpu']) for atts in self.attempts.values()
                for a in atts if 'end' in a] + [
            (self.final_at[u], self.final_cpu[u]) for u in self.final_at]
        last = max(ends or [(start, cpu)])
        rec['wall_seconds'] = round(last[0] - start, 2)
        rec['cpu_seconds'] = round(last[1] - cpu, 2)
        log = list(self.ironic.call_log)
        rec['ironic_calls_total'] = len(log)
        rec['outcome'] = dict(collections.Counter(
            'missing' if v is None else v['status'] for v in views.values()))
        rec['build_results'] = dict(collections.Counter(self.watch.results))
        ended = self._ended()
        rec['torn_down'] = [self._torn_down(v, views)
                            for v in victims.values()]
        rec['healthy'] = [
            self._healthy(sid, log) for sid in ids
            if sid not in victims and ended.get(sid) == ['active']]
        rec['rescheduled'] = bench_table.rescheduled(views, ended)
        rec['stuck_in_build'] = sorted(
            sid for sid, v in views.items() if v and v['status'] == 'BUILD')
        # let Ironic finish its tear-downs (its clock is the driver's reads)
        self.ironic.settle()
        nodes = {}
        for node_id in self.node_ids:
            node = self.ironic.get(node_id)
            nodes[node_id] = None if node is None else {
                'provision_state': node.provision_state,
                'instance_id': node.instance_id}
        rec['inconsistencies'] = bench_table.inconsistencies(
            spec.k, victims, views, nodes,
            {sid: {rp: a['resources'] for rp, a in
                   self._get_allocations_by_server_uuid(sid).items()}
             for sid in ids}, ended)

    def _torn_down(self, victim, views):
        """A torn-down build's entry (bench_table.torn_down)."""
        sid = victim['server']
        return bench_table.torn_down(
            victim, views.get(sid), self.spawns.get(sid, []),
            self.destroys.get(sid, []), self.final_at.get(sid),
            [a['result'] for a in self.attempts.get(sid, ())])

    def _healthy(self, sid, log):
        """A healthy build's entry (bench_table.HEALTHY_FIELDS)."""
        att = self.attempts[sid][0]
        entry = bench_table.healthy_build(
            [(c.method, c.node) for c in
             log[att['first_call']:att['last_call']]], att['node'])
        entry['wall_seconds'] = round(att['end'] - att['start'], 4)
        return entry


#: Seconds between two progress lines of a benchmark run on stderr.
PROGRESS_EVERY = 10.0


def _lock_state():
    """Who holds and who waits for the locks a stuck run waits on: Nova's
    CellDatabases reader-writer lock, its DatabaseWriteLock per database
    (threading mode) and the fake Ironic's lock (lines of text)."""
    names = {t.ident: t.name for t in threading.enumerate()}

    def owner(text):
        return re.sub(r'owner=(\d+)', lambda m: 'owner=%s' % names.get(
            int(m.group(1)), m.group(1)), text)

    lines = []
    for obj in gc.get_objects():
        kind = type(obj).__name__
        try:
            if kind == 'CellDatabases' and hasattr(obj, '_cell_lock'):
                lock = obj._cell_lock
                lines.append(
                    'CellDatabases._cell_lock: writer %s; readers %s; '
                    'pending writers %s' % (
                        getattr(lock._writer, 'name', None),
                        {t.name: n for t, n in dict(lock._readers).items()},
                        [t.name for t in list(lock._pending_writers)]))
            elif kind == 'DatabaseWriteLock' and hasattr(obj, '_locks'):
                for url, rlock in dict(obj._locks).items():
                    lines.append('DatabaseWriteLock[%s]: %s' % (
                        url, owner(repr(rlock))))
            elif kind == 'IronicFixture' and hasattr(obj, '_lock'):
                lines.append('IronicFixture._lock: %s' % owner(repr(
                    obj._lock)))
        except Exception as e:     # a diagnostic must not fail the dump
            lines.append('%s: %r' % (kind, e))
    return lines


class _Watchdog:
    """A benchmark run's progress and, if it does not end in time, its
    thread dump.

    Every PROGRESS_EVERY seconds a line on stderr (the harness's log): the
    build attempts started and ended, servers final. After ``deadline``
    seconds: every thread's stack, the lock state (_lock_state), the last
    lines of Nova's log, a record with an ``error`` written to ``out``, and
    the process exits 3 -- before the harness's kill, which leaves nothing.
    SIGUSR1 (faulthandler) dumps the C-level stacks at any time.
    """

    def __init__(self, out, rec, deadline):
        self.out, self.rec, self.deadline = out, rec, deadline
        self.test = None
        self.start = time.monotonic()
        # Nova's fixtures replace sys.stderr while a test runs; fd 2 is the
        # harness's log.
        self.err = os.fdopen(os.dup(2), 'w', buffering=1)
        faulthandler.register(signal.SIGUSR1, file=self.err,
                              all_threads=True)
        threading.Thread(target=self._run, name='bench-watchdog',
                         daemon=True).start()

    def progress(self):
        test = self.test
        if test is None or not hasattr(test, 'attempts'):
            return 'setting up'
        atts = [a for v in list(test.attempts.values()) for a in list(v)]
        return ('%d attempts started, %d ended, %d running, %d servers '
                'final' % (len(atts), sum('end' in a for a in atts),
                           test.watch.running, len(test.final_at)))

    def _run(self):
        end = self.start + self.deadline if self.deadline > 0 else None
        while True:
            wait = PROGRESS_EVERY if end is None else min(
                PROGRESS_EVERY, end - time.monotonic())
            if wait > 0:
                time.sleep(wait)
            now = time.monotonic() - self.start
            self.err.write('bench progress at %.0f s: %s\n' % (
                now, self.progress()))
            if end is not None and time.monotonic() >= end:
                self.dump()
                os._exit(3)

    def dump(self):
        w = self.err.write
        w('=== bench run did not end in %.0f s: %s\n' % (
            self.deadline, self.progress()))
        names = {t.ident: t.name for t in threading.enumerate()}
        for ident, frame in sys._current_frames().items():
            w('\n--- thread %s (%s)\n' % (names.get(ident, '?'), ident))
            w(''.join(traceback.format_stack(frame)))
        w('\n=== locks\n' + '\n'.join(_lock_state()) + '\n')
        log = getattr(getattr(getattr(self.test, 'stdlog', None), 'logger',
                              None), 'output', '')
        w('\n=== the last 60 lines of Nova\'s log\n%s\n' % '\n'.join(
            log.splitlines()[-60:]))
        self.err.flush()
        base = getattr(type(self.test), 'RESULT', None) or self.rec
        error = ('no end after %.0f s (%s); thread dump and lock holders '
                 'in the log' % (self.deadline, self.progress()))
        rec = dict(base, error=error)
        with open(self.out, 'w') as f:
            json.dump({'scenarios': [], 'bench': [rec]}, f, indent=1,
                      sort_keys=True, default=str)


def run_bench(spec, run=1, watchdog=None):
    """Run one benchmark spec once in a fresh Nova test environment.

    :param spec: bench_table.BenchSpec.
    :param run: 1..R; seeds the scheduler's and the bench's choices.
    :param watchdog: a _Watchdog to report on the run, or None.
    :returns: the record (keys: bench_table.RECORD).
    """
    case = type('Bench_%d_%d_%d' % (spec.n, spec.s, spec.k), (BenchTest,),
                {'SPEC': spec, 'RUN': run, 'WATCHDOG': watchdog})
    result = unittest.TestResult()
    case('test_bench').run(result)
    rec = case.RESULT or {'spec': spec.text, 'run': run, 'n': spec.n,
                          's': spec.s, 'k': spec.k}
    problems = result.errors + result.failures
    if problems and not rec.get('error'):
        rec['error'] = problems[0][1]
    return rec


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--out', required=True)
    parser.add_argument('--scenario', action='append', default=[])
    parser.add_argument('--bench', nargs=2, metavar=('N:S:K[:opt=val,...]',
                                                     'RUN'))
    parser.add_argument('--list', action='store_true')
    parser.add_argument('--ironic', choices=('fake', 'real'), default='fake')
    parser.add_argument('--ironic-info', metavar='JSON',
                        help='--ironic real: the real Ironic (a JSON file: '
                        'url, image_url, missing_image_url, image_sha256)')
    parser.add_argument('--requests-dir', metavar='DIR',
                        help='--ironic real: where each scenario\'s '
                        'requests go (<scenario>.requests.jsonl)')
    parser.add_argument('--deadline', type=float, default=0, metavar='S',
                        help='a benchmark run that has not ended after S '
                        'seconds (if S > 0) dumps its threads and locks to '
                        'stderr, writes a record with an error and exits 3')
    args = parser.parse_args(argv)
    if args.list:
        json.dump([s.describe() for s in SCENARIOS], sys.stdout, indent=1)
        return 0
    names = args.scenario or ([] if args.bench else list(BY_NAME))
    if not args.bench:
        # (a benchmark run's watchdog registers its own)
        faulthandler.register(signal.SIGUSR1, file=os.fdopen(
            os.dup(2), 'w', buffering=1), all_threads=True)
    out = {'nova_file': nova.__file__, 'scenarios': [], 'bench': []}
    base, attrs = ScenarioTest, {}
    if args.ironic == 'real':
        if not args.ironic_info or args.bench:
            parser.error('--ironic real needs --ironic-info and runs '
                         'scenarios only')
        with open(args.ironic_info) as f:
            attrs = {'INFO': json.load(f),
                     'REQUESTS_DIR': args.requests_dir}
        global real_backend
        import real_backend
        base = RealScenarioTest
        out['ironic'] = 'real'
    for i, name in enumerate(names, 1):
        rec = run_scenario(BY_NAME[name], base, **attrs)
        out['scenarios'].append(rec)
        print('  [%d/%d] %-32s %s%s (%.1fs)' % (
            i, len(names), name, rec.get('status'),
            ' ERROR IN RUNNER' if rec.get('error') else '',
            rec.get('test_seconds', 0)), file=sys.stdout, flush=True)
    if args.bench:
        # One run of one spec per process. In one process for all, the
        # 15th run (after two 100-build runs) failed in Nova's database
        # fixture ("'_TestTransactionFactory' object has no attribute
        # '_url_cfg'"), and every run after it.
        spec, run = args.bench
        parsed = bench_table.parse(spec)
        watchdog = _Watchdog(args.out, {
            'spec': parsed.text, 'run': int(run), 'n': parsed.n,
            's': parsed.s, 'k': parsed.k}, args.deadline)
        rec = run_bench(parsed, int(run), watchdog)
        out['bench'].append(rec)
    with open(args.out, 'w') as f:
        json.dump(out, f, indent=1, sort_keys=True, default=str)
    return 0


import nova  # noqa: E402  (for nova.__file__ in the output)

if __name__ == '__main__':
    os.environ.setdefault('OS_DEBUG', '0')
    sys.exit(main())
