"""The series' fake Ironic, timed by reads, for the main job's scenarios.

The series' ``nova.tests.fixtures.IronicFixture`` has no notion of time:
Ironic's conductor leaves each of its states (``CONDUCTOR_STEPS``)
before the driver's next read unless the test holds the node in it, and
tests act on events (``on_poll``, ``on_call``), never on a number of
reads.  The main job's scenario table (``scenario.Scenario``:
``after_polls``, ``deleting_reads``, ``deploying_reads``, the
``polls_at_most`` bound) and the contract tests are timed by reads of a
node, and the real-Ironic backend (``real_backend``) mirrors that
interface.  :class:`CountingIronicFixture` adds, in the harness only,
what the series' fixture has not:

* ``configure_node(node, deploying_reads=, callback_reads=,
  deleting_reads=, cleaning_reads=)``: a node in one of those conductor
  states stays there for that many driver reads of it (``None``: until
  the test acts, i.e. the series' fixture holds it; 0: not seen by a
  read); defaults from the constructor, and ``callback_reads`` from the
  test's ``CALLBACK_READS`` if it has one;
* ``after_polls(count, action, node=None, loop=DEPLOY_LOOP)`` and
  ``polls``: the polls the series' fixture notes (``_note_poll``,
  ``_polls_in``), counted per node and wait loop (a deploy's from its
  request on, a tear-down wait's from its start);
* ``held_poll_wait``: a poll of a deploy held in the state the previous
  poll saw already first waits, at most that many seconds, until the
  fixture is used again, so that a held deploy does not spin;
* ``api_down(answer)`` / ``api_up()`` on a tree whose fixture lacks them
  (the reproducer tree: the series adds them with "tests: Let the fake
  Ironic's API be down", patches/apiblip/master/0001, before the fix of
  bug BBBBBBB): the same control, mirrored (:data:`API_DOWN_ANSWERS`);
  on a tree that has them, the series' own.  A read the API did not
  serve is no read of the node: it does not count down its reads.

Everything else (the proxy, the state table, Ironic's refusals, the
operator controls, ``settle``, ``release``, which wait loop a poll is
of, ``on_state``) is the series' fixture's.  The scenario players
install it in place of ``nova.tests.fixtures.IronicFixture``
(:func:`install`).
"""

import collections
import contextlib
import functools

import fixtures
from keystoneauth1 import exceptions as ks_exc
from nova.tests.fixtures import ironic as ironic_fixture
from nova.tests.fixtures import ironic_api
from openstack import exceptions as sdk_exc
import requests

from novaseries.scenarios.scenario import (
    CALLBACK_READS, DEPLOY_LOOP, DEPLOYING_READS, TEARDOWN_LOOP,
    UNTIMED_TEARDOWN_READS)

CONDUCTOR_STEPS = ironic_api.CONDUCTOR_STEPS
#: The read-count option of each state the conductor leaves by itself.
DURATION_OF = {'deploying': 'deploying_reads',
               'wait call-back': 'callback_reads',
               'deleting': 'deleting_reads', 'cleaning': 'cleaning_reads'}
assert set(DURATION_OF) == set(CONDUCTOR_STEPS), 'the series changed them'

#: The tree's fixture has ``api_down``/``api_up`` (the fix's series does).
SERIES_API_DOWN = hasattr(ironic_fixture.IronicFixture, 'api_down')


def _http_error(status, reason):
    """What openstacksdk raises for an HTTP answer ``status`` of the API
    (the series' ``_http_error``, for a tree without it)."""
    response = requests.Response()
    response.status_code = status
    response.reason = reason
    try:
        sdk_exc.raise_from_response(response)
    except sdk_exc.HttpException as e:
        return e
    raise AssertionError('openstacksdk accepted HTTP %s' % status)


#: What the driver's calls raise while the API is down: the series'
#: ``API_DOWN_ANSWERS`` where it has them, else the same, mirrored.
API_DOWN_ANSWERS = getattr(ironic_fixture, 'API_DOWN_ANSWERS', None) or {
    502: functools.partial(_http_error, 502, 'Bad Gateway'),
    503: functools.partial(_http_error, 503, 'Service Unavailable'),
    504: functools.partial(_http_error, 504, 'Gateway Timeout'),
    'refused': lambda: ks_exc.ConnectFailure(
        'Unable to establish connection to http://127.0.0.1:6385/v1/nodes: '
        '[Errno 111] Connection refused'),
}


class CountingIronicFixture(ironic_fixture.IronicFixture):
    """The series' fake Ironic, timed by reads (see the module).

    A node is held (the series' ``_holds``, ``_held``) in the conductor
    states whose read count is None; one with a count leaves its state
    at the first read after that many (``_due``).

    :param test: the test case using the fixture.
    :param hold: ignored (the series' ``IronicHelperMixin`` passes its
        ``HOLD``, which the scenario tests do not set); the read counts
        decide.
    :param deploying_reads: reads a node stays in ``deploying``.
    :param callback_reads: reads it stays in ``wait call-back``; None:
        until the test acts (the test's ``CALLBACK_READS`` overrides it).
    :param deleting_reads: reads it stays in ``deleting``.
    :param cleaning_reads: reads it stays in ``cleaning``.
    :param held_poll_wait: seconds a poll of a held deploy that saw its
        state already waits at most.
    """

    def __init__(self, test, hold=(), deploying_reads=DEPLOYING_READS,
                 callback_reads=CALLBACK_READS,
                 deleting_reads=UNTIMED_TEARDOWN_READS,
                 cleaning_reads=UNTIMED_TEARDOWN_READS, held_poll_wait=0.05):
        super().__init__(test)
        self.held_poll_wait = held_poll_wait
        self.defaults = {
            'deploying_reads': deploying_reads,
            'callback_reads': getattr(test, 'CALLBACK_READS', callback_reads),
            'deleting_reads': deleting_reads,
            'cleaning_reads': cleaning_reads,
        }
        self._durations = collections.defaultdict(dict)
        # {node id: reads left in its conductor state; None: held}
        self._reads_left = {}
        # {node id: the provision state its latest counted poll saw}
        self._polled_state = {}
        self._count_hooks = []
        # what the driver's calls raise while the API is down (the
        # series' own on a tree that has api_down)
        self._api_down = getattr(self, '_api_down', None)

    # -- read counts

    def _duration(self, node_id, state):
        option = DURATION_OF[state]
        return self._durations[node_id].get(option, self.defaults[option])

    def _holds(self, node_id):
        """The conductor states no read ends (read count None)."""
        return frozenset(state for state in CONDUCTOR_STEPS
                         if self._duration(node_id, state) is None)

    def _due(self, node_id):
        """The series' ``_due``, once the state's reads ran out."""
        return (super()._due(node_id) and
                not self._reads_left.get(node_id))

    def _transition(self, node_id, event, last_error=None):
        super()._transition(node_id, event, last_error)
        state = self._nodes[node_id]['provision_state']
        self._reads_left[node_id] = (self._duration(node_id, state)
                                     if state in CONDUCTOR_STEPS else None)
        if event in ('deploy', 'rebuild'):
            self._meta[node_id]['poll_base'] = self._loop_polls(node_id)
            self._polled_state[node_id] = None

    def _driver_call(self, method, impl, *args, **kwargs):
        with self._locked():
            down = self._api_down
            if down is not None and not SERIES_API_DOWN:
                return self._unserved_call(method, down, args, kwargs)
            first = len(self.call_log)
            try:
                return super()._driver_call(method, impl, *args, **kwargs)
            finally:
                # (the series' _driver_call logs each call, also one that
                # raised; if it raised before that, there is nothing to
                # count; a read the API did not serve is none of the node)
                node_id = (self.call_log[first].node
                           if len(self.call_log) > first else None)
                left = self._reads_left.get(node_id)
                if method in ironic_fixture.READ_METHODS and left and \
                        down is None:
                    self._reads_left[node_id] = left - 1

    def configure_node(self, node, **durations):
        """Override the node's ``*_reads`` durations from now on (from
        its next conductor state on).

        :raises InvalidFixtureUse: an unknown node or option.
        """
        with self._locked():
            node_id = self._node_id(node)
            if set(durations) - set(self.defaults):
                raise ironic_api.InvalidFixtureUse(
                    'Unknown options %s' % durations)
            self._durations[node_id].update(durations)

    # -- the API down, on a tree whose fixture has no api_down

    def _unserved_call(self, method, down, args, kwargs):
        """A driver call while the API is down, on a tree whose fixture
        has no ``api_down`` (lock held): as the series' does, it raises
        ``down()``, changes nothing, is logged and runs its ``on_call``
        hooks."""
        try:
            ref = args[0] if args else kwargs.get('node')
            node_id = self._find(getattr(ref, 'id', ref))
            if 'instance_id' in kwargs:
                node_id = self._deploy_node(kwargs['instance_id'])
        except Exception as e:
            raise self._record(e)  # the fake's own error
        try:
            raise down()
        finally:
            self.call_log.append(ironic_fixture.Call(method, node_id))
            for hook in list(self._call_hooks):
                if hook[:2] == (method, node_id) or hook[:2] == (
                        method, None) and node_id is not None:
                    self._call_hooks.remove(hook)
                    self._queue(hook[2], node_id)

    def api_down(self, answer=503):
        """Make Ironic's API unreachable until :meth:`api_up` (the
        series' ``api_down`` where the tree has it; ``answer``: 502, 503,
        504 or ``'refused'``).

        :raises InvalidFixtureUse: an unknown ``answer``.
        """
        if SERIES_API_DOWN:
            return super().api_down(answer)
        if answer not in API_DOWN_ANSWERS:
            raise ironic_api.InvalidFixtureUse('No API answer %s' % answer)
        with self._lock:
            self._api_down = API_DOWN_ANSWERS[answer]

    def api_up(self):
        """Make Ironic's API reachable again."""
        if SERIES_API_DOWN:
            return super().api_up()
        with self._lock:
            self._api_down = None

    # -- poll counts

    @contextlib.contextmanager
    def _polling(self, loop, instance_id):
        """The series' ``_polling``; entering a ``teardown`` starts its
        count again, and a ``deploy`` poll of a held deploy that the
        previous poll saw already (:meth:`_held_as_polled`) first waits
        up to ``held_poll_wait`` seconds."""
        with self._lock:
            node_id = self._deploy_node(instance_id)
            if node_id is not None and loop == TEARDOWN_LOOP:
                base = self._meta[node_id].setdefault(
                    'poll_base', collections.Counter())
                base[TEARDOWN_LOOP] = self._loop_polls(node_id)[TEARDOWN_LOOP]
            elif node_id is not None and self._held_as_polled(node_id):
                self._cond.wait(self.held_poll_wait)
        with super()._polling(loop, instance_id):
            yield

    def _held_as_polled(self, node_id):
        """Whether the node is held (the series' ``_held``) in the state
        its latest counted poll saw."""
        return (self._held(node_id) and self._polled_state.get(node_id) ==
                self._nodes[node_id]['provision_state'])

    def _loop_polls(self, node_id):
        """``Counter({loop: polls})`` of the node since it was created,
        as the series' fixture counts them (``_polls_in``)."""
        polls = collections.Counter()
        for (loop, _state), count in self._polls_in[node_id].items():
            polls[loop] += count
        return polls

    def _note_poll(self, node_id, instance_id):
        """The series' ``_note_poll``; then the ``after_polls`` hooks of
        the loop whose poll it noted."""
        before = self._loop_polls(node_id)
        super()._note_poll(node_id, instance_id)
        loop = next((loop for loop, count in
                     self._loop_polls(node_id).items()
                     if count > before[loop]), None)
        if loop is None:
            return
        self._polled_state[node_id] = (
            node_id in self._nodes and
            self._nodes[node_id]['provision_state'])
        count = self.polls(node_id, loop)
        for hook in list(self._count_hooks):
            h_count, h_node, h_loop, action = hook
            if (h_loop == loop and h_node in (None, node_id) and
                    count == h_count):
                self._count_hooks.remove(hook)
                self._queue(action, node_id)

    def after_polls(self, count, action, node=None, loop=DEPLOY_LOOP):
        """Call ``action(node_id)`` right after the ``count``-th poll of
        the wait loop ``loop`` (as ``on_poll``'s actions run).

        :raises InvalidFixtureUse: an unknown node or loop.
        """
        if loop not in ironic_fixture.LOOPS:
            raise ironic_api.InvalidFixtureUse('No wait loop %s' % loop)
        with self._lock:
            node_id = None if node is None else self._node_id(node)
            self._count_hooks.append((count, node_id, loop, action))

    def polls(self, node, loop=DEPLOY_LOOP):
        """Polls of the node by one wait loop since its latest deploy or
        rebuild request (a ``teardown``'s: since its latest tear-down wait
        began), also once the node was deleted."""
        with self._lock:
            node_id = self._any_id(node)
            base = self._meta[node_id].get('poll_base', {})
            return self._loop_polls(node_id)[loop] - base.get(loop, 0)


def install(test):
    """Make ``nova.tests.fixtures.IronicFixture`` the counting one for the
    test (the series' ``IronicHelperMixin`` builds it from there)."""
    test.useFixture(fixtures.MonkeyPatch(
        'nova.tests.fixtures.IronicFixture', CountingIronicFixture))
