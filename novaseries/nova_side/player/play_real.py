"""Playing a scenario against a real Ironic (``run --ironic real``):
:class:`RealScenarioTest`, the player's :class:`ScenarioTest` with
Nova's baremetal connection bound to a real Ironic (pins/ironic.txt) on 127.0.0.1
through ``real_backend.RealIronicBackend``, each scenario's requests kept
(``request_log``).
"""

import collections
import os
import time

# The test package applies Nova's monkey patching; it must come first.
import nova.tests.functional  # noqa: F401  isort:skip
from nova.tests.functional.ironic import base as ironic_base  # noqa: E402
from nova import utils as nova_utils  # noqa: E402
from nova.virt.ironic import driver as ironic_driver  # noqa: E402
from nova.virt.ironic import patcher as ironic_patcher  # noqa: E402
import fixtures  # noqa: E402
import openstack.proxy  # noqa: E402

from novaseries.ironic import api_proxy, real_backend, real_deploy, request_log  # noqa: E402
from novaseries.nova_side.player.scenario_case import ScenarioTest  # noqa: E402
from novaseries.scenarios.checks import (  # noqa: E402
    API_UP_AT_REFUSAL, API_UP_SETTLED, REAL_IRONIC)
from novaseries.scenarios.scenario import (  # noqa: E402
    ACT_IN_REBUILD_KINDS, AFTERMATH_ACTIONS, DEPLOY_FAIL_ACTIONS,
    ENDING_DEPLOY_ACTIONS, OUTAGE_ACTIONS)

#: How long a scenario against a real Ironic may take to settle, and a
#: step to come, in seconds: a real tear-down and reschedule take seconds,
#: not reads (the fake's: ``play_fake.FAKE_SETTLE_TIMEOUT``).
REAL_SETTLE_TIMEOUT = 90.0

_REAL_GET_ENDPOINT = openstack.proxy.Proxy.get_endpoint


class RealScenarioTest(ScenarioTest):
    """ScenarioTest against a real Ironic
    (``--ironic real``; ``real_backend`` says what changes).

    ``INFO`` is the harness's ``--ironic-info``; ``REQUESTS_DIR`` where
    each scenario's requests go (``<scenario>.requests.jsonl``).
    """

    INFO = None
    REQUESTS_DIR = None
    SETTLE_TIMEOUT = REAL_SETTLE_TIMEOUT

    api_proxy = None

    def _start_ironic(self):
        sc = self.SCENARIO
        endpoint = self.INFO['url']
        if sc.action in OUTAGE_ACTIONS:
            # Nova's requests (only Nova's: the operator and the observer
            # reach Ironic directly) go through a proxy that can play the
            # outage
            self.api_proxy = api_proxy.ApiProxy(endpoint).start()
            self.addCleanup(self.api_proxy.stop)
            endpoint = self.api_proxy.url
        self.flags(compute_driver='ironic.IronicDriver')
        self.flags(auth_type='none', endpoint_override=endpoint,
                   api_retry_interval=real_backend.API_RETRY_INTERVAL,
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
            self.INFO, deploying_reads=sc.deploying_reads)
        # the fake fails the deploy when the step comes; a real deploy
        # fails by itself, from the start (its image answers 404)
        self.ironic.fail_next_deploy = sc.action in DEPLOY_FAIL_ACTIONS
        self.ironic.install(self, ironic_driver, ironic_patcher, nova_utils)
        # runs after the compute service stopped (cleanups run in reverse)
        self.addCleanup(self._remove_nodes)
        self.node_ids = self.ironic.enrol(
            real_deploy.deploy_interfaces(sc, self.NUM_NODES))
        self.compute = self._start_compute(self.HOST)
        self.flavor_id = self._create_flavor(
            name='baremetal', memory_mb=1024, vcpu=1, disk=10, ephemeral=0,
            extra_spec=ironic_base.BAREMETAL_EXTRA_SPECS)
        self.ironic.reset_calls()

    def _boot_baremetal_server(self, networks='none',
                               expected_state='ACTIVE'):
        """As the fake's, with a real deploy's time to reach ACTIVE; a
        server booted for a rebuild (``ACT_IN_REBUILD_KINDS``) then has its node
        switched to the ``direct`` deploy interface, so that the rebuild
        waits in ``wait call-back`` for the scenario's step."""
        server = super()._boot_baremetal_server(networks, 'BUILD')
        if expected_state == 'BUILD':
            return server
        server = self._wait_for_status(server['id'], expected_state)
        if self.SCENARIO.kind in ACT_IN_REBUILD_KINDS:
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
        if action in AFTERMATH_ACTIONS and self.SCENARIO.deleting_reads == 0:
            # The fake's driver sees only the aftermath: hold its thread
            # until Ironic's tear-down cleared the association, as a real
            # tear-down shorter than the poll interval would.
            self.ironic.wait_cleared(node_id)

    def _first_step_polls(self):
        # A real deploy that ends (the ``fake`` deploy interface:
        # real_deploy.deploy_interfaces) has no wait call-back: the API
        # goes down during its ``deploying`` (``[fake] deploy_delay``:
        # real_backend.FAKE_DELAY), which Ironic's conductor finishes
        # meanwhile.
        if self.SCENARIO.action in ENDING_DEPLOY_ACTIONS:
            return 1
        return super()._first_step_polls()

    def _api_outage(self, node_id, answer, back, user_delete=False):
        """The proxy refuses Nova's requests (``answer``: 503, or
        ``'refused'``: it stops listening); with ``back``, it passes them
        on again from its first refusal on (before that refusal is
        sent); with ``user_delete``, the user deletes the server at that
        first refusal, before it is sent (``_delete_at_refusal``: a
        refused connection fires no callback, so ``answer`` is an HTTP
        status then)."""
        fired = self._acted.setdefault('fired', [])
        proxy = self.api_proxy

        def back_on_first_refusal():
            fired.append(API_UP_AT_REFUSAL)
            proxy.up()

        first = None
        if back:
            first = back_on_first_refusal
        elif user_delete:
            first = self._delete_at_refusal
        proxy.down(answer, on_first_refusal=first)

    def _api_up(self):
        self._acted.setdefault('fired', []).append(API_UP_SETTLED)
        self.api_proxy.up()

    def _node_view(self, node_id):
        view = super()._node_view(node_id)
        if 'image_source' in view:
            view['image_source'] = real_deploy.glance_id(
                view['image_source'])
        return view

    def _record(self, sc, rec, *args, **kwargs):
        # Ironic goes on by itself (cleaning after a tear-down): what the
        # node is once it settled.
        self.ironic.settle()
        super()._record(sc, rec, *args, **kwargs)
        rec['backend'] = REAL_IRONIC
        if self.api_proxy is not None:
            rec['api_proxy'] = dict(self.api_proxy.stats)
        rec['leftover_nodes_removed'] = list(self.ironic.leftovers_removed)

    def _remove_nodes(self):
        """Remove the scenario's nodes, then keep every request (the
        removal's too), also when the scenario failed in its setUp."""
        try:
            self.ironic.remove_nodes()
        finally:
            records = self.ironic.requests()
            path = None
            if self.REQUESTS_DIR:
                path = os.path.join(self.REQUESTS_DIR,
                                    '%s.requests.jsonl' % self.SCENARIO.name)
                request_log.dump(records, path)
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
