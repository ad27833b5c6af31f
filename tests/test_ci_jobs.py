"""``ci`` runs its targets and steps as jobs, two at a time (run_jobs)."""

import threading
import unittest
from unittest import mock

from novaseries import ci, runner
from novaseries.outcomes import Outcome
from novaseries.util import HarnessError

#: Bound of every wait below (a wait for a state, never a sleep).
WAIT = 30


def _job(name, func, deps=()):
    return ci.Job(name, lambda: (func(), [(name, 0.0)]), deps)


class RunJobsTest(unittest.TestCase):

    def test_a_job_waits_for_its_deps(self):
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

        results = ci.run_jobs([_job("target", target), _job("step", step, {"target"}),
                               _job("other", other)], parallel=2)
        self.assertLess(events.index("target ended"), events.index("step started"))
        self.assertEqual({"target", "step", "other"}, set(results))
        self.assertEqual([("step", 0.0)], results["step"][1])

    def test_jobs_run_at_once_and_share_the_cores(self):
        both = threading.Barrier(2, timeout=WAIT)
        seen = []

        def job():
            both.wait()  # BrokenBarrierError unless both run at once
            seen.append(runner.mode_concurrency(1))
            both.wait()
            return [Outcome("job", passed=1)]

        with mock.patch("os.cpu_count", return_value=4):
            results = ci.run_jobs([_job("a", job), _job("b", job)], parallel=2)
            self.assertEqual([2, 2], seen)
            # alone again: stestr's own default, one worker per core
            self.assertIsNone(runner.mode_concurrency(1))
            self.assertEqual(2, runner.mode_concurrency(2))
        self.assertEqual({"a": 1, "b": 1},
                         {name: sum(o.passed for o in out) for name, (out, _) in
                          results.items()})

    def test_one_at_a_time_keeps_the_order(self):
        order = []

        def job(name):
            return lambda: order.append(name) or [Outcome(name, passed=1)]

        ci.run_jobs([_job(n, job(n)) for n in "abcd"], parallel=1)
        self.assertEqual(list("abcd"), order)

    def test_a_job_that_raises_fails_alone(self):
        def broken():
            raise RuntimeError("boom")

        results = ci.run_jobs([_job("broken", broken),
                               _job("after", lambda: [Outcome("after", passed=1)],
                                    {"broken"})], parallel=2)
        failed, = results["broken"][0]
        self.assertEqual(1, failed.failed)
        self.assertIn("boom", failed.note)
        self.assertEqual(1, results["after"][0][0].passed)
        self.assertIsNone(runner.mode_concurrency(1))

    def test_steps_start_right_after_their_targets(self):
        jobs = [ci.Job("master", list), ci.Job("2026.1", list), ci.Job("pike", list),
                ci.Job("real Ironic", list, {"master"}),
                ci.Job("pike Ironic", list, {"pike"}),
                ci.Job("main job", list, {"master"}),
                ci.Job("both", list, {"master", "2026.1"})]
        self.assertEqual(["master", "real Ironic", "main job", "2026.1", "both", "pike",
                          "pike Ironic"], [job.name for job in ci.start_order(jobs)])

    def test_a_dep_that_is_not_run_is_refused(self):
        with self.assertRaisesRegex(HarnessError, "waits for nosuch"):
            ci.run_jobs([_job("step", list, {"nosuch"})], parallel=2)


if __name__ == "__main__":
    unittest.main()


class LightJobTest(unittest.TestCase):
    """A light job (a step that mostly waits) runs beside the others."""

    def test_light_job_runs_beside_a_full_slot(self):
        # one slot, held by "heavy" until the light job has run: the light
        # job must not wait for a slot (else this waits until WAIT fails)
        light_ran, seen = threading.Event(), []

        def heavy():
            self.assertTrue(light_ran.wait(WAIT), "the light job waited for a slot")
            return [Outcome("heavy", passed=1)]

        def light():
            seen.append(runner.mode_concurrency(1))
            light_ran.set()
            return [Outcome("light", passed=1)]

        with mock.patch("os.cpu_count", return_value=4):
            results = ci.run_jobs([_job("heavy", heavy),
                                   ci.Job("light", lambda: (light(), []), light=True)],
                                  parallel=1)
        self.assertEqual({"heavy", "light"}, set(results))
        # the light job did not count as a job sharing the cores: the heavy
        # one's stestr runs keep theirs
        self.assertEqual([None], seen)

    def test_light_job_waits_for_its_deps(self):
        events = []

        def target():
            events.append("target")
            return [Outcome("target", passed=1)]

        def light():
            events.append("light")
            return [Outcome("light", passed=1)]

        ci.run_jobs([ci.Job("light", lambda: (light(), []), {"target"}, light=True),
                     _job("target", target)], parallel=2)
        self.assertEqual(["target", "light"], events)

    def test_only_light_jobs(self):
        results = ci.run_jobs([ci.Job("light", lambda: ([Outcome("l", passed=1)], []),
                                      light=True)], parallel=2)
        self.assertEqual(["l"], [o.name for o in results["light"][0]])


class ScenarioCountsTest(unittest.TestCase):
    """The main job steps count a fixed-tree scenario as right only when
    its verdict is ``ok``: a scenario with no verdict (its step never
    happened, the runner failed) is no pass."""

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
