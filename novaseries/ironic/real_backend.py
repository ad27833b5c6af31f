"""A real Ironic behind the main job's scenarios (``run --ironic real``).

The scenario player (``play_real.RealScenarioTest``, in Nova's
venv) binds ``ScenarioTest.ironic`` to a :class:`RealIronicBackend`
instead of the fake Ironic fixture: Nova's whole stack (API, conductor, scheduler, placement,
the compute manager and the real ``IronicDriver``) then talks to a real
Ironic (``pins/ironic.txt``) on 127.0.0.1 (started by the harness,
``novaseries.ironic.service``) through its own openstacksdk connection, built
by ``nova.utils.get_sdk_adapter`` from ``[ironic] auth_type = none`` and
``endpoint_override``.

The backend gives the members of the fixture that the scenarios use, with
what the real service shows:

* **requests** -- every request of Nova's baremetal connection (each
  keystoneauth retry is one) is recorded in the driver's own thread, with
  its status, Ironic's faultstring, the driver and compute manager frames
  that sent it and the node it is about (:meth:`requests`); ``call_log``
  gives them as the fixture's ``Call(method, node)`` (openstacksdk proxy
  names, ``request_log.classify``).  The operator's requests (this
  module's REST client) and the observer's (``request_log.Watcher``) are
  recorded with their ``actor`` and ``why`` (the recording:
  ``request_log.py``).
* **polls** -- the driver's reads of a node by instance
  (``GET /v1/nodes?instance_uuid=X``) inside ``_wait_for_active`` (one call
  per poll of a deploy) are ``deploy`` polls; those made while
  ``_wait_for_teardown`` (``_unprovision`` on a tree without it) waits for
  a tear-down are ``teardown`` polls, as in the fixture.  ``after_polls``
  hooks run in the polling thread, after the response and before the
  driver sees it, so the driver's next read sees their effect.
* **time** -- real (:data:`API_RETRY_INTERVAL`, :data:`FAKE_DELAY`; see doc/real-ironic.rst).
  A deploy step of the fake at its poll N (the fake's deploy is ``deploying`` for
  ``deploying_reads`` polls, then ``wait call-back``) runs here at the poll that sees
  ``wait call-back`` for the (N - deploying_reads)th time: a real ``deploying`` lasts
  several polls and holds the node's lock.
* **deploys and the image** -- the nodes' deploy interfaces, and the
  harness's local HTTP image in place of Nova's Glance image
  (:meth:`RealIronicBackend.install` wraps the driver's deploy patch):
  ``real_deploy``.

Standard library only: the player, in Nova's venv, imports it and hands it
Nova's modules.
"""

import collections
import threading
import time
import types

from novaseries.ironic import real_deploy, real_operator, request_log, rest
from novaseries.scenarios.scenario import DEPLOY_LOOP, TEARDOWN_LOOP

#: Provision states the conductor leaves by itself (with the node locked
#: or about to be): a node in one of them has not settled.
TRANSITIONAL = frozenset(['deploying', 'deleting', 'cleaning', 'clean wait',
                          'rebuilding', 'inspecting', 'adopting', 'verifying'])

#: ``[ironic] api_retry_interval`` of a real run (s): the option's smallest
#: non-zero value (an IntOpt).
API_RETRY_INTERVAL = 1
#: Seconds of each ``[fake]`` delay (power, boot, ``fake`` deploy
#: interface) of a run's real Ironic: ``deploying`` and ``deleting`` last
#: several polls, for an operator's step or a second request to hit them,
#: and ``deleting`` outlasts ``deleting-outlasts-retries``' two retries.
FAKE_DELAY = 2
#: The keys of the harness's ``--ironic-info`` (the player's JSON file),
#: each an attribute of the ``service.RealIronic`` the harness started.
INFO_KEYS = ('url', 'image_url', 'missing_image_url', 'image_sha256')
#: Seconds settle() and remove_nodes() wait for a node to settle.
NODE_SETTLE_TIMEOUT = 60.0


class RealIronicBackend(real_operator.OperatorControls,
                        request_log.RequestRecorder):
    """The fixture's test-facing members, backed by a real Ironic.

    :param info: the harness's ``--ironic-info`` (:data:`INFO_KEYS`).
    :param deploying_reads: the fake's polls of ``deploying`` that the
        scenario's step counts are given with (``after_polls``).
    """

    def __init__(self, info, deploying_reads):
        self.info = info
        self.url = info['url']
        self.deploying_reads = deploying_reads
        self._start = time.monotonic()
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._records = []
        #: Nova's driver calls in order, as ``Call(method, node)``.
        self.call_log = []
        self._why = threading.local()
        self._loop = threading.local()
        self._teardowns = collections.Counter()
        self._polls = collections.Counter()     # (node, loop) -> polls
        self._waiting = collections.Counter()   # node -> polls of the wait
        self._hooks = []                        # [count, node, loop, fn]
        self._history = {}                      # node -> [(state, target)]
        self._history_t0 = {}                   # node -> t0 of last entry
        self._instance_node = {}                # instance -> node
        #: Tracebacks of scenario steps that raised in the driver's
        #: thread, and of the recorder's own failures: never passed on to
        #: Nova's request (it would judge a harness error as Nova's), the
        #: player reports them as the scenario's error.
        self.errors = []
        #: Called (no arguments) after a step raised.
        self.on_error = None
        #: Nodes a previous scenario left in this Ironic, removed by
        #: enrol() (uuids).
        self.leftovers_removed = []
        self.node_ids = []
        self._watcher = None
        #: The operator's client (recorded, ``actor: operator``).
        self.client = rest.Client(self.url, record=self._operator_record)
        # the observer's own client (recorded, ``actor: observer``)
        self._observer = rest.Client(
            self.url, record=lambda r: self._add(dict(r, actor='observer')))
        #: The fixture's defaults, for the scenarios that read them.
        self.defaults = {'callback_reads': None}
        #: The next deploy's image answers 404: Ironic fails the deploy
        #: in ``prepare`` (``deploy failed``, with its last_error).
        self.fail_next_deploy = False

    # -- installation into a Nova test case

    def install(self, test, driver_module, patcher_module, utils_module):
        """Bind Nova's baremetal connection to the real Ironic.

        Stubs ``nova.utils.get_sdk_adapter`` (records every request of a
        baremetal connection), the driver's wait loops (marks their polls)
        and ``GenericDriverFields.get_deploy_patch`` (the image,
        :meth:`image_patch`).  ``[ironic]`` flags are the caller's.  The
        caller, in Nova's venv, passes Nova's modules: ``nova.virt.ironic.
        driver``, ``nova.virt.ironic.patcher`` and ``nova.utils`` (this
        module imports no Nova).
        """
        real_adapter = utils_module.get_sdk_adapter
        backend = self

        def get_sdk_adapter(service_type, *args, **kwargs):
            proxy = real_adapter(service_type, *args, **kwargs)
            if service_type == 'baremetal':
                backend._record_session(proxy.session.session)
            return proxy

        test.stub_out('nova.utils.get_sdk_adapter', get_sdk_adapter)
        driver = driver_module.IronicDriver
        real_wait = driver._wait_for_active
        # The driver's wait for a tear-down: _wait_for_teardown() on a tree
        # that has it (destroy()'s _unprovision() and spawn() before a
        # reschedule both wait with it), else _unprovision().
        teardown_wait = ('_wait_for_teardown'
                         if hasattr(driver, '_wait_for_teardown')
                         else '_unprovision')
        real_teardown_wait = getattr(driver, teardown_wait)

        def _wait_for_active(drv, instance, *args, **kwargs):
            self._loop.deploy_instance = instance.uuid
            try:
                return real_wait(drv, instance, *args, **kwargs)
            finally:
                self._loop.deploy_instance = None

        def _teardown_wait(drv, instance, *args, **kwargs):
            with self._lock:
                self._teardowns[instance.uuid] += 1
                node = self._instance_node.get(instance.uuid)
                if node:
                    self._polls[(node, TEARDOWN_LOOP)] = 0
            try:
                return real_teardown_wait(drv, instance, *args, **kwargs)
            finally:
                with self._lock:
                    self._teardowns[instance.uuid] -= 1

        test.stub_out('nova.virt.ironic.driver.IronicDriver._wait_for_active',
                      _wait_for_active)
        test.stub_out('nova.virt.ironic.driver.IronicDriver.' + teardown_wait,
                      _teardown_wait)
        real_patch = patcher_module.GenericDriverFields.get_deploy_patch

        def get_deploy_patch(fields, instance, image_meta, *args, **kwargs):
            patch = real_patch(fields, instance, image_meta, *args, **kwargs)
            return self.image_patch(patch)

        test.stub_out('nova.virt.ironic.patcher.GenericDriverFields.'
                      'get_deploy_patch', get_deploy_patch)

    def image_patch(self, patch):
        """``real_deploy.image_patch`` with this backend's image; the 404
        image once, if :attr:`fail_next_deploy` is set (then cleared)."""
        missing = self.fail_next_deploy and real_deploy.has_image(patch)
        if missing:
            self.fail_next_deploy = False
        return real_deploy.image_patch(patch, self.info, missing)

    # -- nodes

    def enrol(self, interfaces):
        """Enrol ``node-1..N`` (``available``, power off, resource class
        ``baremetal``), one per deploy interface given; start the observer.

        Nodes a previous scenario left (its remove_nodes() failed) are
        removed first (nova-compute's hash ring would take them) and listed in
        :attr:`leftovers_removed`.

        :param interfaces: one ``deploy_interface`` per node.
        :returns: the node uuids, in order.
        :raises AssertionError: a leftover node could not be removed.
        :raises RealIronicError: Ironic refused the enrolment.
        """
        existing = [n['uuid'] for n in
                    self._observer.ok('GET', '/nodes')['nodes']]
        if existing:
            self.leftovers_removed = existing
            self._remove(existing, 'remove-leftovers')
        self._why.text = 'enrol'
        try:
            for i, iface in enumerate(interfaces):
                node = self.client.create_available_node(
                    name='node-%d' % (i + 1), resource_class='baremetal',
                    deploy_interface=iface)
                self.node_ids.append(node)
                self._history[node] = [('available', None)]
                self._history_t0[node] = time.monotonic()
        finally:
            self._why.text = None
        self._watcher = request_log.Watcher(self)
        self._watcher.start()
        return list(self.node_ids)

    def free_nodes_deploy(self, interface='fake', but=None):
        """Switch the nodes that are still free (``available``, no
        instance) but ``but`` to ``interface`` (an operator's PATCH; Ironic
        allows it on an available node).

        :raises AssertionError: Ironic refused a request.
        """
        patch = [{'op': 'replace', 'path': '/deploy_interface',
                  'value': interface}]
        for node in self.node_ids:
            if node == but:
                continue
            n = self._get_json(node, observer=True)
            if n and n['provision_state'] == 'available' and \
                    not n['instance_uuid']:
                self._operator('set-interface', 'PATCH', '/nodes/%s' % node,
                               patch)

    def set_deploy_interface(self, node, interface):
        """Switch a deployed node's ``deploy_interface`` (an operator's
        maintenance on, PATCH, maintenance off: Ironic refuses the PATCH
        on an ``active`` node outside maintenance).

        :raises AssertionError: Ironic refused a request.
        """
        self._operator('set-interface', 'PUT', '/nodes/%s/maintenance' % node,
                       {'reason': 'switch the deploy interface'})
        self._operator('set-interface', 'PATCH', '/nodes/%s' % node, [
            {'op': 'replace', 'path': '/deploy_interface', 'value': interface}])
        self._operator('set-interface', 'DELETE',
                       '/nodes/%s/maintenance' % node)

    def remove_nodes(self):
        """Remove this scenario's nodes: let each settle, maintenance on,
        DELETE (204 even with an instance).  Stops the observer first.

        :raises AssertionError: a node could not be removed.
        """
        if self._watcher:
            self._watcher.stop()
        self._remove(self.node_ids, 'remove-nodes')

    def _remove(self, nodes, why):
        """Let each node settle, maintenance on, DELETE; every node is
        tried.  :raises AssertionError: naming each node that failed."""
        self._why.text = why
        problems = []
        try:
            for node in nodes:
                try:
                    if self._wait_settled(node) is None:
                        continue
                    self.client.ok('PUT', '/nodes/%s/maintenance' % node,
                                   {'reason': why})
                    self.client.ok('DELETE', '/nodes/%s' % node)
                except Exception as e:      # the others are still removed
                    problems.append('%s: %s' % (node, e))
        finally:
            self._why.text = None
        if problems:
            raise AssertionError('could not remove (%s): %s' % (
                why, '; '.join(problems)))

    def _get_json(self, node, observer=False):
        """The node as Ironic's API gives it (a dict), None on 404; its
        state goes into the history.  :raises AssertionError: another
        error status."""
        t0 = time.monotonic()
        status, body = (self._observer if observer else self.client).request(
            'GET', '/nodes/%s' % node)
        if status == 404:
            return None
        if status >= 300:
            raise AssertionError('GET node %s: %s %s' % (node, status, body))
        self._observe(node, body, t0)
        return body

    def _wait_node(self, node, done, timeout, interval, failure):
        """Read the node every ``interval`` s until ``done(node dict)``
        or it is gone.

        :returns: the last read (None: deleted).
        :raises AssertionError: ``failure(node dict)`` after ``timeout``
            seconds.
        """
        deadline = time.monotonic() + timeout
        while True:
            n = self._get_json(node, observer=True)
            if n is None or done(n):
                return n
            if time.monotonic() > deadline:
                raise AssertionError(failure(n))
            time.sleep(interval)

    def _wait_settled(self, node, timeout=NODE_SETTLE_TIMEOUT):
        return self._wait_node(
            node, lambda n: (not n['reservation'] and
                             n['provision_state'] not in TRANSITIONAL),
            timeout, 0.1,
            lambda n: 'node %s did not settle in %ss: %s/%s reservation %s' % (
                node, timeout, n['provision_state'],
                n['target_provision_state'], n['reservation']))

    # -- the fixture's test-facing members

    def configure_node(self, node, **durations):
        """The fake's read counts: only ``deploying_reads`` is kept (the
        step counts of ``after_polls`` are given with it); the real
        durations are Ironic's."""
        if 'deploying_reads' in durations and \
                durations['deploying_reads'] is not None:
            self.deploying_reads = durations['deploying_reads']

    def get(self, node):
        """The node (attributes as openstacksdk names them), or None if
        deleted."""
        n = self._get_json(getattr(node, 'id', node), observer=True)
        if n is None:
            return None
        return types.SimpleNamespace(
            id=n['uuid'], name=n['name'], provision_state=n['provision_state'],
            target_provision_state=n['target_provision_state'],
            instance_id=n['instance_uuid'], instance_info=n['instance_info'],
            is_maintenance=n['maintenance'], last_error=n['last_error'],
            reservation=n['reservation'])

    def state(self, node):
        """``(provision_state, target_provision_state)`` of the node."""
        n = self.get(node)
        return n.provision_state, n.target_provision_state

    def history(self, node):
        """Every ``(provision_state, target)`` seen of the node, in order
        (by Nova's reads, the observer's and the operator's), from
        ``available`` at its enrolment; ``(request_log.DELETED, None)``
        marks its deletion.  Sampled: a state shorter than the observer's interval
        (WATCH_INTERVAL) may be missing."""
        with self._lock:
            return list(self._history.get(node, []))

    def vifs(self, node):
        """VIF ids attached to the node (``GET /v1/nodes/<id>/vifs``)."""
        status, body = self._observer.request('GET', '/nodes/%s/vifs' % node)
        if status == 404:
            return []
        return [v['id'] for v in (body or {}).get('vifs', [])]

    def reset_calls(self):
        """Forget Nova's calls logged so far (the records stay)."""
        with self._lock:
            del self.call_log[:]

    def settle(self, node=None):
        """Wait until the node (every node) is unlocked and in no state
        the conductor leaves by itself (TRANSITIONAL).

        :raises AssertionError: a node not settled in NODE_SETTLE_TIMEOUT s.
        """
        for n in [node] if node else self.node_ids:
            self._wait_settled(n)

    def polls(self, node, loop=DEPLOY_LOOP):
        """Nova's polls of the node in a wait loop so far."""
        with self._lock:
            return self._polls[(node, loop)]

    def after_polls(self, count, action, node=None, loop=DEPLOY_LOOP):
        """Call ``action(node_id)`` right after a poll, in the polling
        thread, before the driver sees the response.

        ``deploy``: with ``count <= deploying_reads`` (the fake's polls
        of ``deploying``), after the ``count``-th poll, which sees the
        real ``deploying`` if it lasts that long; otherwise after the
        poll that sees ``wait call-back`` (or what followed it) for the
        ``count - deploying_reads``-th time.  ``teardown``: after the
        driver's ``count``-th poll of its wait for a tear-down.
        """
        with self._lock:
            self._hooks.append([count, node, loop, action])

    def wait_for_deploy(self, instance_id, polls=0, timeout=60):
        """The node whose deploy of the instance the driver polled
        ``polls`` times.

        :param timeout: seconds.
        :raises AssertionError: not within ``timeout``.
        """
        with self._lock:
            if not self._cond.wait_for(
                    lambda: self._instance_node.get(instance_id) and
                    self._polls[(self._instance_node[instance_id],
                                 DEPLOY_LOOP)] >= polls, timeout):
                raise AssertionError('no deploy of %s polled in %ss' % (
                    instance_id, timeout))
            return self._instance_node[instance_id]
