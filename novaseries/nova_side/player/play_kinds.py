"""How the player starts each kind of scenario (``scenario.KINDS``),
against either Ironic (fake or real): :class:`KindPlayers`, a mixin of
``scenario_case.ScenarioTest``, and :data:`KIND_PLAYERS`, the method for each
kind (:func:`player_method`).  Each method boots, acts and returns
``(server, its first node, the action's time (monotonic s))``;
``ScenarioTest._run`` settles and records, then calls what the method
left in ``_after_record``, if anything.
Runs inside Nova's virtualenv.
"""

import threading
import time

# The test package applies Nova's monkey patching; it must come first.
import nova.tests.functional  # noqa: F401  isort:skip
from nova import context as nova_context  # noqa: E402
from nova import objects  # noqa: E402
from openstack import exceptions as sdk_exc  # noqa: E402

from novaseries.scenarios.checks import fired, REFUSE_TEARDOWN  # noqa: E402
from novaseries.scenarios.scenario import KINDS, MAIN_THREAD_DELETE_ACTIONS  # noqa: E402


def player_method(prefix, name):
    """The player's method for ``name``, a kind or an action: ``prefix``
    then ``name`` with ``_`` for ``-`` (``'_play_'``, ``'rebuild-newest'``:
    ``'_play_rebuild_newest'``)."""
    return prefix + name.replace('-', '_')


#: The player's method for each kind of ``scenario.KINDS``.
KIND_PLAYERS = {kind: player_method('_play_', kind) for kind in KINDS}


class KindPlayers:
    """The kinds' starts and what they share; the rest (``_arm``,
    ``_settle``, ``_record``, the fixtures) is ``ScenarioTest``'s."""

    #: What ``ScenarioTest._run`` calls (no arguments) once the scenario
    #: is recorded: set by a kind whose play goes on after it.
    _after_record = None

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

    def _play_rebuild_error(self, sc, rec, networks):
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
        self._acted = {'calls': 0, 'node': first_node}
        return server, first_node, start

    def _play_reap(self, sc, rec, networks):
        return self._reap_deleted(networks, 'reap')

    def _play_reap_log(self, sc, rec, networks):
        return self._reap_deleted(networks, 'log')

    def _reap_deleted(self, networks, reaper_action):
        """LP 2169200: the server is deleted while its nova-compute is
        down (the API deletes it alone), nova-compute restarts (a new
        driver, which lists the nodes afresh), then its periodic reaper
        runs once with ``running_deleted_instance_action =
        reaper_action``."""
        self.flags(running_deleted_instance_action=reaper_action)
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
        return server, first_node, action_at

    def _play_cleanup_fail_delete(self, sc, rec, networks):
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
        return server, first_node, action_at

    def _play_outage_delete(self, sc, rec, networks):
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
        if sc.action in MAIN_THREAD_DELETE_ACTIONS:
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
        if rec['at_api_back']['status'] != 'DELETED':
            self.api.delete_server(server['id'])
        return server, first_node, acted['at']

    def _play_build_delete(self, sc, rec, networks):
        # A control: the delete of an ACTIVE server tears its node
        # down (destroy() waits for Ironic's own tear-down).
        server, first_node, action_at = self._boot_active(networks)
        self.api.delete_server(server['id'])
        return server, first_node, action_at

    def _play_undeploy_active_delete(self, sc, rec, networks):
        # An operator undeploys the node of an ACTIVE server and, while
        # Ironic tears it down (``deleting``, locked by its conductor),
        # the user deletes the server.
        server, first_node, action_at = self._boot_active(networks)
        self.ironic.configure_node(
            first_node, deleting_reads=sc.deleting_reads)
        self.ironic.undeploy(first_node)
        self.api.delete_server(server['id'])
        return server, first_node, action_at

    def _play_rebuild_newest(self, sc, rec, networks):
        # No pinned microversion: from 2.93 on the API asks the driver
        # to re-image the boot volume, which an image-backed server
        # does not have (bug KKKKKKK).
        server, first_node, action_at = self._boot_active(networks)
        rec['rebuild_image'] = self.glance.image2['id']
        self.api.post_server_action(server['id'], {'rebuild': {
            'imageRef': rec['rebuild_image']}})
        return server, first_node, action_at

    def _play_rebuild(self, sc, rec, networks):
        # Rebuild an ACTIVE server; act during the rebuild's deploy.
        server = self._boot_baremetal_server(networks=networks)
        first_node = server['OS-EXT-SRV-ATTR:hypervisor_hostname']
        self.ironic.reset_calls()
        acted = self._acted = {}
        done = self._arm(node=first_node, server_id=server['id'])
        # NOTE: 2.92, not 2.93+: see _play_rebuild_error.
        self.api.microversion = '2.92'
        self.api.post_server_action(server['id'], {'rebuild': {
            'imageRef': server['image']['id']}})
        self.api.microversion = 'latest'
        if not done.wait(self.SETTLE_TIMEOUT):
            raise AssertionError('the rebuild was not polled %d times'
                                 % sc.after_polls)
        return server, first_node, acted['at']

    def _play_build(self, sc, rec, networks):
        # Boot; the scenario's steps act during the deploy.
        self._user_delete = threading.Event()
        self._delete_accepted = threading.Event()
        acted = self._acted = {}
        done = self._arm() if sc.action else None
        server = self._boot_baremetal_server(
            networks=networks, expected_state='BUILD')
        if sc.action in MAIN_THREAD_DELETE_ACTIONS:
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
            try:
                self.api.delete_server(server['id'])
            finally:
                self._delete_accepted.set()
        if done is None:
            first_node = self.ironic.wait_for_deploy(server['id'])
        elif done.wait(self.SETTLE_TIMEOUT):
            # (the node may carry another instance by now)
            first_node = acted['node']
        else:
            raise AssertionError('the deploy was not polled %d times'
                                 % sc.after_polls)
        return server, first_node, acted.get('at', time.monotonic())

    def _play_recovery(self, sc, rec, networks):
        # A build (as build); once the player has recorded it, the
        # operator recovery steps (_recovery_steps) in rec['recovery'].
        server, first_node, action_at = self._play_build(sc, rec, networks)
        self._after_record = lambda: rec.update(
            recovery=self._recovery_steps(server))
        return server, first_node, action_at

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
                acted.setdefault('fired', []).append(fired(
                    REFUSE_TEARDOWN,
                    self.ironic.polls(getattr(node, 'id', node))))
                raise sdk_exc.HttpException(message='503 Service Unavailable')
            return real(node, target, *args, **kwargs)

        proxy.side_effect = unavailable_once

    def _recovery_steps(self, server):
        """Try what doc/operators.rst says about stuck servers, in order.

        :returns: {recovery step: what it showed}
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
