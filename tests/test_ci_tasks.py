"""``ci`` runs its targets and steps as tasks, two at a time (run_tasks)."""

import threading
import unittest
from unittest import mock

from novaseries import ci, cores
from novaseries.outcomes import Outcome
from novaseries.util import HarnessError

#: Bound of every wait below (a wait for a state, never a sleep).
WAIT = 30


def _task(name, func, deps=()):
    return ci.Task(name, lambda: (func(), [(name, 0.0)]), deps)


class RunTasksTest(unittest.TestCase):

    def test_a_task_waits_for_its_deps(self):
        # "step" needs "target"; "other" needs nothing.  "target" holds
        # its slot until "other" runs, so the second slot must pass "step"
        # over (its dep has not ended) and take "other".
        release, events = threading.Event(), []

        def target():
            events.append("target started")
            self.assertTrue(release.wait(WAIT), "the other slot never ran 'other'")
            events.append("target ended")
            return [Outcome("target", passed=1)]

        def step():
            events.append("step started")
            return [Outcome("step", passed=1)]

        def other():
            events.append("other started")
            release.set()
            return [Outcome("other", passed=1)]

        results = ci.run_tasks([_task("target", target), _task("step", step, {"target"}),
                               _task("other", other)], parallel=2)
        self.assertLess(events.index("target ended"), events.index("step started"))
        self.assertEqual({"target", "step", "other"}, set(results))
        self.assertEqual([("step", 0.0)], results["step"][1])

    def test_tasks_run_at_once_and_share_the_cores(self):
        both = threading.Barrier(2, timeout=WAIT)
        seen = []

        def task():
            both.wait()  # BrokenBarrierError unless both run at once
            seen.append(cores.mode_concurrency(1))
            both.wait()
            return [Outcome("task", passed=1)]

        with mock.patch("os.cpu_count", return_value=4):
            results = ci.run_tasks([_task("a", task), _task("b", task)], parallel=2)
            self.assertEqual([2, 2], seen)
            # alone again: stestr's own default, one worker per core
            self.assertIsNone(cores.mode_concurrency(1))
            self.assertEqual(2, cores.mode_concurrency(2))
        self.assertEqual({"a": 1, "b": 1},
                         {name: sum(o.passed for o in out) for name, (out, _) in
                          results.items()})

    def test_one_at_a_time_keeps_the_order(self):
        order = []

        def task(name):
            return lambda: order.append(name) or [Outcome(name, passed=1)]

        ci.run_tasks([_task(n, task(n)) for n in "abcd"], parallel=1)
        self.assertEqual(list("abcd"), order)

    def test_a_task_that_raises_fails_alone(self):
        def broken():
            raise RuntimeError("boom")

        results = ci.run_tasks([_task("broken", broken),
                               _task("after", lambda: [Outcome("after", passed=1)],
                                     {"broken"})], parallel=2)
        failed, = results["broken"][0]
        self.assertEqual(1, failed.failed)
        self.assertIn("boom", failed.note)
        self.assertEqual(1, results["after"][0][0].passed)
        self.assertIsNone(cores.mode_concurrency(1))

    def test_steps_start_right_after_their_targets(self):
        tasks = [ci.Task("master", list), ci.Task("2026.1", list), ci.Task("pike", list),
                 ci.Task("real Ironic", list, {"master"}),
                 ci.Task("pike Ironic", list, {"pike"}),
                 ci.Task("main job", list, {"master"}),
                 ci.Task("both", list, {"master", "2026.1"})]
        self.assertEqual(["master", "real Ironic", "main job", "2026.1", "both", "pike",
                          "pike Ironic"], [task.name for task in ci.start_order(tasks)])

    def test_a_dep_that_is_not_run_is_refused(self):
        with self.assertRaisesRegex(HarnessError, "waits for nosuch"):
            ci.run_tasks([_task("step", list, {"nosuch"})], parallel=2)


if __name__ == "__main__":
    unittest.main()


class LightTaskTest(unittest.TestCase):
    """A light task (a step that mostly waits) runs beside the others."""

    def test_light_task_runs_beside_a_full_slot(self):
        # one slot, held by "heavy" until the light task has run: the light
        # task must not wait for a slot (else this waits until WAIT fails)
        light_ran, seen = threading.Event(), []

        def heavy():
            self.assertTrue(light_ran.wait(WAIT), "the light task waited for a slot")
            return [Outcome("heavy", passed=1)]

        def light():
            seen.append(cores.mode_concurrency(1))
            light_ran.set()
            return [Outcome("light", passed=1)]

        with mock.patch("os.cpu_count", return_value=4):
            results = ci.run_tasks([_task("heavy", heavy),
                                   ci.Task("light", lambda: (light(), []), light=True)],
                                   parallel=1)
        self.assertEqual({"heavy", "light"}, set(results))
        # the light task did not count as a task sharing the cores: the heavy
        # one's stestr runs keep theirs
        self.assertEqual([None], seen)

    def test_light_task_waits_for_its_deps(self):
        events = []

        def target():
            events.append("target")
            return [Outcome("target", passed=1)]

        def light():
            events.append("light")
            return [Outcome("light", passed=1)]

        ci.run_tasks([ci.Task("light", lambda: (light(), []), {"target"}, light=True),
                     _task("target", target)], parallel=2)
        self.assertEqual(["target", "light"], events)

    def test_only_light_tasks(self):
        results = ci.run_tasks([ci.Task("light", lambda: ([Outcome("l", passed=1)], []),
                                        light=True)], parallel=2)
        self.assertEqual(["l"], [o.name for o in results["light"][0]])


class ScenarioCountsTest(unittest.TestCase):
    """The main job steps count a fixed-tree scenario as right only when
    its verdict is ``ok``: a scenario with no verdict (its step never
    happened, the player failed) is no pass."""

    def test_no_verdict_is_wrong(self):
        from novaseries import cisteps
        per_mode = {
            "fixed": {"scenarios": [
                {"verdict": "ok", "problems": []},
                {"verdict": "error: only 1 of 2 steps happened",
                 "problems": []},
                {"verdict": "WRONG: status BUILD", "problems": ["x"]},
                {"problems": []}]},
            "reproducer": {"scenarios": [
                {"verdict": "bug reproduced: status BUILD"},
                {"verdict": "error: only 1 of 2 steps happened"}]}}
        fixed, wrong, shown = cisteps._scenario_counts(per_mode)
        self.assertEqual((4, 3, 1), (len(fixed), wrong, shown))
        # CI's summary names what was wrong
        per_mode["fixed"]["scenarios"][2]["scenario"] = "abort"
        self.assertEqual(
            "? (error: only 1 of 2 steps happened); "
            "abort (WRONG: status BUILD); ? (no verdict)",
            cisteps._wrong_text(fixed))


class MainJobStepTest(unittest.TestCase):
    """The main job steps fail when the fixed tree ran fewer scenarios
    than asked (none at all too), when the reproducer tree did something
    else than its column says (``unexpected: ...``) or showed the bug in
    no scenario; fabricated run.json data."""

    NAMES = ("a", "b", "c")

    def _per_mode(self, fixed=NAMES, reproducer=None, bench=True):
        reproducer = reproducer if reproducer is not None else {
            name: "bug reproduced: status BUILD, expected ERROR" for name in self.NAMES}
        return {
            "fixed": {"scenarios": [{"scenario": n, "verdict": "ok"} for n in fixed],
                      "bench": [{}] if bench else []},
            "reproducer": {"scenarios": [{"scenario": n, "verdict": v}
                                         for n, v in reproducer.items()],
                           "bench": [{}] if bench else []},
            "bench_problems": []}

    def _main_job(self, per_mode):
        import json
        import pathlib
        import tempfile
        from novaseries import cisteps
        with tempfile.TemporaryDirectory() as tmp:
            ctx = mock.Mock()
            ctx.results.return_value = pathlib.Path(tmp)
            data = {"modes": ["threading"], "runid": "r1",
                    "by_mode": {"threading": per_mode}}

            def run(ctx, scenarios, json_out, **kw):
                self.assertEqual(list(self.NAMES), scenarios)  # asked: the table
                json_out.write_text(json.dumps(data))
            with mock.patch.object(cisteps.scenario_table, "SCENARIOS",
                                   [mock.Mock(name=n) for n in self.NAMES]) as table, \
                    mock.patch.object(cisteps.mainjob_job, "run", run), \
                    mock.patch.object(cisteps.modes_mod, "default_modes",
                                      return_value=("threading",)):
                for sc, name in zip(table, self.NAMES):
                    sc.name = name
                scenarios = cisteps.main_job_step(ctx)
            out = pathlib.Path(tmp) / "real.json"
            out.write_text(json.dumps(data))
            with mock.patch.object(cisteps.scenario_table, "REAL_CI", self.NAMES), \
                    mock.patch.object(cisteps.mainjob_job, "run_real",
                                      return_value=(0, out)), \
                    mock.patch.object(cisteps.modes_mod, "default_modes",
                                      return_value=("threading",)):
                real = cisteps.main_job_real_step(ctx)
        return scenarios, real[0]

    def test_all_ran_and_bug_shown_passes(self):
        (scenarios, bench), real = self._main_job(self._per_mode())
        for outcome in (scenarios, real):
            self.assertEqual((3, 0), (outcome.passed, outcome.failed), outcome)
            self.assertTrue(outcome.note.startswith("bug shown in 3 scenarios"))
        self.assertEqual((1, 0), (bench.passed, bench.failed))
        # a control ("as on") and a scenario declared not playable on the
        # reproducer tree are no failure
        (scenarios, _), real = self._main_job(self._per_mode(reproducer={
            "a": "bug reproduced: x", "b": "as on nova 34.0.0: the fixed tree's "
            "checks hold too", "c": "not playable on nova 34.0.0: its step never "
            "comes"}))
        self.assertEqual(0, scenarios.failed + real.failed, (scenarios, real))
        for outcome in (scenarios, real):
            self.assertIn("not playable on the reproducer tree (declared): c",
                          outcome.note)

    def test_reproducer_error_counts(self):
        # no verdict on the reproducer tree (a step that never came, the
        # player failed) is a failure, in both main job steps
        (scenarios, _), real = self._main_job(self._per_mode(reproducer={
            "a": "bug reproduced: x", "b": "bug reproduced: y",
            "c": "error: the scenario did not happen as defined: only 1 of 2 "
                 "steps happened"}))
        for outcome in (scenarios, real):
            self.assertEqual((3, 1), (outcome.passed, outcome.failed), outcome)
            self.assertIn("no verdict on the reproducer tree: c (error: the "
                          "scenario did not happen", outcome.note)

    def test_fewer_scenarios_than_asked(self):
        (scenarios, _), real = self._main_job(self._per_mode(fixed=("a", "c")))
        for outcome in (scenarios, real):
            self.assertEqual((2, 1), (outcome.passed, outcome.failed), outcome)
            self.assertIn("2 of 3 scenarios ran on the fixed tree (missing: b)",
                          outcome.note)

    def test_none_ran(self):
        (scenarios, _), real = self._main_job(self._per_mode(fixed=(), reproducer={}))
        for outcome in (scenarios, real):
            self.assertEqual(0, outcome.passed)
            self.assertGreaterEqual(outcome.failed, 1)
            self.assertIn("no scenario ran on the fixed tree", outcome.note)

    def test_reproducer_unexpected_or_no_bug(self):
        (scenarios, _), real = self._main_job(self._per_mode(reproducer={
            "a": "bug reproduced: x", "b": "unexpected: status ACTIVE, expected BUILD",
            "c": "bug reproduced: y"}))
        for outcome in (scenarios, real):
            self.assertEqual((3, 1), (outcome.passed, outcome.failed), outcome)
            self.assertIn("b (unexpected: status ACTIVE", outcome.note)
        (scenarios, _), real = self._main_job(self._per_mode(reproducer={
            name: "as on nova 34.0.0: the fixed tree's checks hold too"
            for name in self.NAMES}))
        for outcome in (scenarios, real):
            self.assertEqual((3, 1), (outcome.passed, outcome.failed), outcome)
            self.assertIn("showed the bug in no scenario", outcome.note)

    def test_benchmark_that_did_not_run(self):
        (_, bench), _ = self._main_job(self._per_mode(bench=False))
        self.assertEqual((0, 1), (bench.passed, bench.failed))
        self.assertIn("no benchmark run on the reproducer tree", bench.note)


class SelfTestsTest(unittest.TestCase):
    """ci's own tests step: unittest in a child process; a discovery that
    finds no test is a failure, a failing test counts."""

    def _run(self, files):
        import contextlib
        import io
        import pathlib
        import tempfile
        from novaseries import util
        with tempfile.TemporaryDirectory() as tmp:
            root = pathlib.Path(tmp)
            (root / "tests").mkdir()
            (root / "tests" / "__init__.py").write_text("")
            for name, text in files.items():
                (root / "tests" / name).write_text(text)
            with contextlib.redirect_stdout(io.StringIO()), \
                    contextlib.redirect_stderr(io.StringIO()):
                return ci.self_tests(util.Context.create(root, root / "build", root / "cache"))

    def test_no_tests_is_a_failure(self):
        outcome = self._run({})
        self.assertEqual((0, 1), (outcome.passed, outcome.failed))
        self.assertIn("ran no tests", outcome.note)

    def test_counts(self):
        outcome = self._run({"test_x.py": (
            "import unittest\n"
            "class T(unittest.TestCase):\n"
            "    def test_ok(self): pass\n"
            "    def test_also_ok(self): pass\n"
            "    def test_bad(self): self.fail('no')\n"
            "    @unittest.skip('x')\n"
            "    def test_skip(self): pass\n")})
        self.assertEqual((2, 1, 1), (outcome.passed, outcome.failed, outcome.skipped))
