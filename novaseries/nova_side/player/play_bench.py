"""The benchmark, one run of one spec (``bench_table.parse``) in Nova's
functional-test environment against the fake Ironic: :class:`BenchTest`
(N concurrent builds, K deploys torn down in their wait), the run's
:class:`Watchdog` (progress lines; a thread dump and a record with an
``error`` when it does not end in time) and :func:`run_bench`.
"""

import collections
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
from nova import objects  # noqa: E402
from nova.tests.functional.ironic import base as ironic_base  # noqa: E402
from nova.virt.ironic import driver as ironic_driver  # noqa: E402
from nova.virt.ironic import ironic_states as states  # noqa: E402

from novaseries.scenarios import bench_table  # noqa: E402
from novaseries.scenarios.scenario import (  # noqa: E402
    BENCH_KEY, SCENARIOS_KEY, TEARDOWN_LOOP)
from novaseries.nova_side.player import counting_ironic  # noqa: E402
from novaseries.nova_side.player.watch import BuildWatch, Observe  # noqa: E402

#: A settled benchmark: no build attempt running, nothing changed for this
#: long (seconds; covers the conductor's hop between a failed attempt and
#: the reschedule's next one).
BENCH_QUIET = 1.0
#: A stuck benchmark: nothing moved (no build attempt started or ended, no
#: server reached ACTIVE or ERROR) for this long (seconds); the run then
#: records what it has, not settled.
BENCH_STALL = 30.0


class BenchTest(Observe, ironic_base.IronicTestBase):
    """N concurrent builds on N + S nodes; K deploys torn down in their wait.

    Every deploy waits in ``wait call-back`` until the bench acts (nothing
    else moves it on): the first K instances whose deploy reaches it (so,
    with K >= max_concurrent_builds, the first wave of builds) are
    undeployed (``baremetal node undeploy``) after a random poll 1..N of
    that wait (seeded; N is ``bench_table.HEALTHY_WAIT_POLLS``), every
    other deploy -- a rescheduled one too -- gets its agent's callback
    after N polls. So exactly K builds are affected, each before its
    deploy completed.
    """

    SPEC = None     # bench_table.BenchSpec
    RUN = 1
    CALLBACK_READS = None
    RESULT = None
    WATCHDOG = None

    def setUp(self):
        self.NUM_NODES = self.SPEC.n + self.SPEC.s
        self.watch = BuildWatch()
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
        # the bench is timed by reads (counting_ironic)
        counting_ironic.install(self)
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

        # around BuildWatch's wrapper (installed first)
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
                            test.ironic.polls(instance.node, TEARDOWN_LOOP))
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
                poll = rng.randint(1, bench_table.HEALTHY_WAIT_POLLS)
                victims[instance] = {'server': instance, 'node': node_id,
                                     'poll': poll}
                at_poll(poll, teardown(instance), node_id)
            else:
                at_poll(bench_table.HEALTHY_WAIT_POLLS,
                        self.ironic.finish_deploy, node_id)
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

    def _wait_settled(self, ids, stall=BENCH_STALL):
        """Until no attempt runs, nothing changed for BENCH_QUIET and every
        server has reached its end (bench_table.settled).

        Watches the player's own bookkeeping while builds run (API requests
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
        rec = dict(bench_table.record_head(spec, self.RUN),
                   options=dict(spec.options), error=None)
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
BENCH_PROGRESS_EVERY = 10.0


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


class Watchdog:
    """A benchmark run's progress and, if it does not end in time, its
    thread dump.

    Every BENCH_PROGRESS_EVERY seconds a line on stderr (the harness's log): the
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
            wait = BENCH_PROGRESS_EVERY if end is None else min(
                BENCH_PROGRESS_EVERY, end - time.monotonic())
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
            json.dump({SCENARIOS_KEY: [], BENCH_KEY: [rec]}, f, indent=1,
                      sort_keys=True, default=str)


def run_bench(spec, run=1, watchdog=None):
    """Run one benchmark spec once in a fresh Nova test environment.

    :param spec: bench_table.BenchSpec.
    :param run: 1..R; seeds the scheduler's and the bench's choices.
    :param watchdog: a Watchdog to report on the run, or None.
    :returns: the record (keys: bench_table.RECORD).
    """
    case = type('Bench_%d_%d_%d' % (spec.n, spec.s, spec.k), (BenchTest,),
                {'SPEC': spec, 'RUN': run, 'WATCHDOG': watchdog})
    result = unittest.TestResult()
    case('test_bench').run(result)
    rec = case.RESULT or bench_table.record_head(spec, run)
    problems = result.errors + result.failures
    if problems and not rec.get('error'):
        rec['error'] = problems[0][1]
    return rec
