"""The scenario player's test case, whatever the Ironic behind it:
:class:`ScenarioTest` plays one scenario of the table in Nova's
functional-test environment (each backend's subclass: ``play_fake``,
``play_real``), and :func:`run_scenario` runs one in a fresh environment
and returns its observation (keys: ``scenario_table.OBSERVATION``).  It
records; it does not judge.
"""

import threading
import time
import traceback
import unittest

# The test package applies Nova's monkey patching; it must come first.
import nova.tests.functional  # noqa: F401  isort:skip
from nova.compute import vm_states  # noqa: E402
from nova import objects  # noqa: E402
from nova.scheduler.client import report  # noqa: E402
from nova.tests.functional.ironic import base as ironic_base  # noqa: E402

from novaseries.nova_side.player.play_kinds import (  # noqa: E402
    KIND_PLAYERS, KindPlayers, player_method)
from novaseries.nova_side.player.play_record import Recorder  # noqa: E402
from novaseries.scenarios.checks import (  # noqa: E402
    fired, RESCHEDULE_DELETE, USER_DELETE_AT_REFUSAL)
from novaseries.scenarios.scenario import ACTIONS, HELD_ACTIONS  # noqa: E402
from novaseries.scenarios.scenario_table import OTHER_INSTANCE  # noqa: E402
from novaseries.nova_side.player.watch import BuildWatch, Observe  # noqa: E402

#: A server is settled when nothing changed for this long (seconds) and no
#: build is running.
SETTLE_QUIET = 0.6

#: The player's method for each action of ``scenario.ACTIONS``.
ACTION_PLAYERS = {action: player_method('_act_', action) for action in ACTIONS}


class ScenarioTest(KindPlayers, Recorder, Observe, ironic_base.IronicTestBase):
    """Runs one Scenario (set as the class attribute SCENARIO)."""

    SCENARIO = None
    NUM_NODES = 1
    RESULT = None
    #: Seconds a scenario may take to settle, and a step to come (each
    #: backend's).
    SETTLE_TIMEOUT = None

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
            self.ironic.configure_node(
                node_id, deploying_reads=self.SCENARIO.deploying_reads,
                deleting_reads=self.SCENARIO.deleting_reads,
                # a user delete from the main thread: every deploy waits
                # in wait call-back until the delete has been accepted
                # (see _run), whatever the threads' scheduling
                **({'callback_reads': None}
                   if self.SCENARIO.action in HELD_ACTIONS else {}))
        self._watch_errors_and_faults()
        if self.SCENARIO.delete_on_reschedule:
            self._delete_on_reschedule()

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
                acted.setdefault('fired', []).append(RESCHEDULE_DELETE)
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

    def _act(self, action, node_id, server_id):
        """Perform ``action`` (a key of ``scenario.ACTIONS``) on the
        node being deployed, through :data:`ACTION_PLAYERS`.

        Runs in the driver's thread, right after its poll, with the fake
        Ironic's lock held: the driver's next read sees the effect.
        """
        getattr(self, ACTION_PLAYERS[action])(node_id, server_id)

    def _act_undeploy(self, node_id, server_id):
        self.ironic.undeploy(node_id)

    def _act_maintenance_delete(self, node_id, server_id):
        self.ironic.set_maintenance(node_id)
        self.ironic.delete_node(node_id)

    def _act_fail(self, node_id, server_id):
        self.ironic.fail_deploy(node_id)

    def _act_abort(self, node_id, server_id):
        self.ironic.abort(node_id)

    def _act_reassociate(self, node_id, server_id):
        self.ironic.undeploy(node_id)
        self.ironic.settle(node_id)
        self.ironic.associate(node_id, OTHER_INSTANCE)

    def _act_user_delete(self, node_id, server_id):
        # the player's main thread deletes it, whenever it gets to it
        # (the deploy waits in wait call-back meanwhile: see setUp)
        self._user_delete.set()

    def _act_delete(self, node_id, server_id):
        # The API sets task_state DELETING at once and casts the
        # terminate to the compute service, which waits for the build.
        self.api.delete_server(server_id)

    def _act_undeploy_delete(self, node_id, server_id):
        self.ironic.undeploy(node_id)
        self.api.delete_server(server_id)

    def _act_lock_briefly(self, node_id, server_id):
        self.ironic.lock_briefly(node_id)

    def _act_api_blip(self, node_id, server_id):
        self._api_outage(node_id, 503, back=True)

    def _act_api_down(self, node_id, server_id):
        self._api_outage(node_id, 'refused', back=False)

    def _act_api_down_delete(self, node_id, server_id):
        self._api_outage(node_id, 503, back=False, user_delete=True)

    def _api_outage(self, node_id, answer, back, user_delete=False):
        """The Bare Metal API becomes unreachable for nova-compute
        (``answer``: 503, or ``'refused'``); with ``back``, it comes back
        at the driver's first call it refused; else it stays down until
        :meth:`_api_up`, and with ``user_delete`` the user deletes the
        server at that first refusal (:meth:`_delete_at_refusal`).

        :raises NotImplementedError: each backend plays it its own way.
        """
        raise NotImplementedError

    def _delete_at_refusal(self):
        """Action ``api-down-delete``, on the first read the API refused:
        the player's main thread deletes the server (kind
        ``outage-delete``, see _run); this thread (the driver's, before
        its read fails; against a real Ironic the API proxy's, before the
        refusal is sent) waits until the API has accepted the delete, so
        that the driver's next look at the instance sees it, whatever the
        threads' scheduling.

        :raises AssertionError: the delete did not come in time.
        """
        self._acted.setdefault('fired', []).append(USER_DELETE_AT_REFUSAL)
        self._user_delete.set()
        if not self._delete_accepted.wait(self.SETTLE_TIMEOUT):
            raise AssertionError('the user delete did not come')

    def _api_up(self):
        """End the outage of ``api-down`` (kind ``outage-delete``).

        :raises NotImplementedError: each backend plays it its own way.
        """
        raise NotImplementedError

    def _first_step_polls(self):
        """The poll of the first deploy after which the first step runs
        (the scenario's ``after_polls``)."""
        return self.SCENARIO.after_polls

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
                acted['fired'].append(fired(action,
                                            self.ironic.polls(node_id)))
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
        server, first_node, action_at = getattr(self, KIND_PLAYERS[sc.kind])(
            sc, rec, networks)
        final, settled, waited = self._settle(server['id'])
        end = time.monotonic()
        if sc.finish_ironic_work:
            # (the fixture's settle: its conductor finishes its work)
            self.ironic.settle()
        self._record(sc, rec, server, final, settled, first_node,
                     action_at, end, port_id)
        if self._after_record is not None:
            self._after_record()


def check_tables(case=ScenarioTest):
    """Each method of the player's tables (:data:`KIND_PLAYERS`, one per
    kind of ``scenario.KINDS``, :data:`ACTION_PLAYERS`, one per action of
    ``scenario.ACTIONS``) is a method of ``case``.

    :raises RuntimeError: naming the missing methods (the player cannot
        play the table).
    """
    missing = [m for m in (*KIND_PLAYERS.values(), *ACTION_PLAYERS.values())
               if not callable(getattr(case, m, None))]
    if missing:
        raise RuntimeError('the player does not match the scenario table: '
                           'no method %s' % ', '.join(missing))


check_tables()


def make_case(scenario, base, **attrs):
    return type('Scenario_%s' % scenario.name.replace('-', '_'), (base,),
                dict(attrs, SCENARIO=scenario, NUM_NODES=scenario.nodes))


def run_scenario(scenario, base, **attrs):
    """Run one scenario in a fresh Nova test environment.

    :param base: a backend's ScenarioTest (``play_fake.FakeScenarioTest``,
        ``play_real.RealScenarioTest`` with its ``attrs``).
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
