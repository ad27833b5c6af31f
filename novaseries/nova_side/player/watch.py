"""Watching what Nova does while the scenario player plays (in Nova's venv):
the compute manager's builds, rebuilds and deletes (:class:`BuildWatch`),
the server through the API (:class:`Observe`), the lines of Nova's log an
observation keeps (:func:`log_lines`) and the driver's polls of a deploy
(:func:`poll_stats`).  Used by the scenario cases (fake and real Ironic)
and the benchmark.
"""

import contextlib
import re
import threading
import time

# The test package applies Nova's monkey patching; it must come first.
import nova.tests.functional  # noqa: F401  isort:skip
from nova.compute import manager as compute_manager  # noqa: E402


class BuildWatch:
    """Wraps ComputeManager._do_build_and_run_instance, rebuild_instance and
    terminate_instance to see builds, rebuilds and deletes.

    Records each build attempt's result (``active``, ``rescheduled``,
    ``failed``), each rebuild's (``rebuilt``, ``rebuild-exception``) and
    each delete's (``terminated``, ``terminate-exception``), and how many
    are running, so the player knows when the compute service is idle.
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


class Observe:
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


#: The loggers whose lines an observation keeps (INFO and up).
LOGGERS = ('nova.virt.ironic.driver', 'nova.compute.manager')
_LOG_LINE = re.compile(r'^\S+ \S+ (INFO|WARNING|ERROR|CRITICAL) '
                       r'\[(%s)\] (.*)$' % '|'.join(
                           re.escape(n) for n in LOGGERS))


def log_lines(output):
    """``LEVEL [logger] message`` of each INFO+ line of LOGGERS (first
    line of each record; tracebacks are left out)."""
    lines = []
    for line in output.splitlines():
        m = _LOG_LINE.match(line)
        if m:
            lines.append('%s [%s] %s' % m.groups())
    return lines


def poll_stats(log, node_id):
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
