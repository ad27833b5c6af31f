"""``run --release pike``: pike's scenario table, the shared judge on its
observations, the known leak's verdict, the run's own verdict problems,
the command's refusals and the Python 2.7 player's contract with the
harness (its environment, the keys it writes, that it compiles)."""

import ast
import contextlib
import io
import json
import pathlib
import re
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

from novaseries import cli, venv_build
from novaseries.mainjob import judge, pike_job
from novaseries.scenarios import invariant, pike_table, scenario_table
from novaseries.scenarios.scenario import FIXED, REPRODUCER, SCENARIOS_KEY
from novaseries.util import HarnessError

PLAYER = (pathlib.Path(__file__).resolve().parent.parent / "novaseries" /
          "nova_side" / "pike_driver_tests" / "play_pike_stack.py")

SID = "11111111-2222-4333-8444-555555555555"
NODE1 = "aaaaaaaa-0000-4000-8000-000000000001"
NODE2 = "aaaaaaaa-0000-4000-8000-000000000002"
LOST = "The bare metal node was torn down or deleted outside of Nova during the deploy."


def node(node_id, name, state="available", instance=None):
    return {"id": node_id, "name": name, "provision_state": state,
            "target_provision_state": None, "instance_id": instance,
            "instance_info": bool(instance), "image_source": None, "vifs": [],
            "maintenance": False, "history": []}


def observation(name, **over):
    """An observation as the player writes it, of scenario ``name``: the
    fixed tree's outcome unless ``over`` says otherwise."""
    sc = pike_table.BY_NAME[name]
    obs = {
        "scenario": name, "definition": sc.describe(), "error": None,
        "settled": True, "backend": "real Ironic", "server_id": SID,
        "status": "ERROR", "vm_state": "error", "task_state": None,
        "host": None, "node": None, "fault": LOST, "faults_created": [LOST],
        "error_saves": 1, "lost_fault": LOST, "lost_fault_fields": [],
        "first_node": NODE1, "first_node_history": [],
        "nodes": [node(NODE1, f"{name}-1")], "allocations": {},
        "allocations_after_periodic": {}, "usages": {NODE1: 0},
        "build_results": ["failed"], "deployed_nodes": [NODE1],
        "port_id": None, "port_device_id": None, "vifs_attached": True,
        "hooks_fired": [f"{sc.action}@wait call-back"],
        "wall_seconds_after_action": 0.5, "image": "img", "log": [],
    }
    obs.update(over)
    return obs


DELETED = dict(status="DELETED", vm_state=None, fault=None,
               faults_created=[], error_saves=0)


def run_data(fixed, reproducer):
    return {REPRODUCER: {SCENARIOS_KEY: reproducer},
            FIXED: {SCENARIOS_KEY: fixed}}


class TableTest(unittest.TestCase):

    def test_the_reported_scenario_is_the_undeploy_in_wait_callback(self):
        sc = pike_table.BY_NAME[pike_table.REPORTED]
        self.assertEqual(("build", "undeploy", 1, 1),
                         (sc.kind, sc.action, sc.nodes, sc.max_attempts))

    def test_what_the_issue_asks_is_played(self):
        actions = {(sc.kind, sc.action, sc.delete_on_reschedule)
                   for sc in pike_table.SCENARIOS}
        self.assertLessEqual({("build", "undeploy", False),
                              ("build", "maintenance-delete", False),
                              ("build", "user-delete", False),
                              ("build-delete", None, False),
                              ("build", "fail", True)}, actions)

    def test_known_leaks_waive_what_they_name(self):
        for name, what in pike_table.KNOWN_LEAKS.items():
            self.assertEqual(what, pike_table.BY_NAME[name].waive["allocation"])

    def test_names_do_not_shadow_the_main_table_with_other_meanings(self):
        # a name both tables have plays the same kind and action
        for name in set(pike_table.BY_NAME) & set(scenario_table.BY_NAME):
            ours, main = pike_table.BY_NAME[name], scenario_table.BY_NAME[name]
            self.assertEqual((main.kind, main.action), (ours.kind, ours.action))


class ChecksTest(unittest.TestCase):

    def test_claim_leaked(self):
        one = {"CUSTOM_BAREMETAL": 1}
        leaked = observation("delete-at-reschedule", **DELETED,
                             allocations={NODE2: one}, usages={NODE1: 0, NODE2: 1})
        self.assertIsNone(pike_table.claim_leaked(leaked))
        for wrong in (dict(leaked, allocations={}),
                      dict(leaked, allocations={NODE1: one}),
                      # the failed build's own allocation kept too: the
                      # compute half, which patches/pike fixes
                      dict(leaked, allocations={NODE1: one, NODE2: one}),
                      dict(leaked, usages={NODE1: 1, NODE2: 1}),
                      dict(leaked, status="ERROR")):
            with self.subTest(wrong=wrong["allocations"]):
                self.assertIn("not the leak", pike_table.claim_leaked(wrong))
        del leaked["allocations"]
        self.assertIn("allocations", pike_table.claim_leaked(leaked))

    def test_healed_by_periodic(self):
        obs = observation("delete-at-reschedule")
        self.assertIsNone(pike_table.healed_by_periodic(obs))
        obs["allocations_after_periodic"] = {NODE2: {"CUSTOM_BAREMETAL": 1}}
        self.assertIn("after the periodic task", pike_table.healed_by_periodic(obs))

    def test_one_deploy(self):
        obs = observation("user-delete")
        self.assertIsNone(pike_table.one_deploy(obs))
        obs["deployed_nodes"] = [NODE1, NODE2]
        self.assertEqual("deployed 2 times", pike_table.one_deploy(obs))


class JudgeTest(unittest.TestCase):

    def evaluate(self, fixed, reproducer):
        data = run_data(fixed, reproducer)
        judge.evaluate(data, released=pike_table.RELEASED, table=pike_table.BY_NAME)
        pike_job.known_leaks(data)
        return data

    def test_the_report_bug_and_fix(self):
        stuck = observation(pike_table.REPORTED, status="BUILD", vm_state="building",
                            task_state="spawning", fault=None, faults_created=[],
                            error_saves=0)
        data = self.evaluate([observation(pike_table.REPORTED)], [stuck])
        self.assertEqual("ok", data[FIXED][SCENARIOS_KEY][0]["verdict"])
        self.assertEqual("bug reproduced: status BUILD, expected ERROR",
                         data[REPRODUCER][SCENARIOS_KEY][0]["verdict"])
        self.assertEqual([], pike_job.verdict_problems(data))

    def test_a_fixed_tree_that_keeps_the_allocation_is_wrong(self):
        held = observation(pike_table.REPORTED,
                           allocations={NODE1: {"CUSTOM_BAREMETAL": 1}},
                           usages={NODE1: 1})
        data = self.evaluate([held], [observation(pike_table.REPORTED,
                                                  status="BUILD")])
        verdict = data[FIXED][SCENARIOS_KEY][0]["verdict"]
        self.assertTrue(verdict.startswith("WRONG: "), verdict)
        self.assertIn("allocation on", verdict)
        self.assertEqual(1, len(pike_job.verdict_problems(data)))

    def test_a_pristine_tree_without_the_bug_fails_the_run(self):
        data = self.evaluate([observation(pike_table.REPORTED)],
                             [observation(pike_table.REPORTED)])
        problems = pike_job.verdict_problems(data)
        self.assertEqual(2, len(problems))
        self.assertIn("unexpected: status ERROR", problems[0])
        self.assertIn("does not show the bug", problems[1])

    def test_a_player_that_failed_fails_the_run(self):
        stuck = observation(pike_table.REPORTED, status="BUILD")
        data = self.evaluate([observation(pike_table.REPORTED)], [stuck])
        self.assertEqual([], pike_job.verdict_problems(data))
        data[FIXED][pike_job.PLAYER_EXIT] = [1, "fixed.log"]
        problems = pike_job.verdict_problems(data)
        self.assertEqual(1, len(problems))
        self.assertIn("the player exited 1", problems[0])

    def test_the_known_leak_is_named_on_both_trees(self):
        leaked = observation("delete-at-reschedule", **DELETED,
                             allocations={NODE2: {"CUSTOM_BAREMETAL": 1}},
                             usages={NODE1: 0, NODE2: 1},
                             nodes=[node(NODE1, "n1"), node(NODE2, "n2")],
                             hooks_fired=["fail@0", "delete@reschedule"],
                             build_results=["rescheduled"])
        data = self.evaluate([leaked], [dict(leaked)])
        for label in (FIXED, REPRODUCER):
            verdict = data[label][SCENARIOS_KEY][0]["verdict"]
            self.assertTrue(verdict.startswith(pike_job.KNOWN_LEAK), verdict)
            self.assertIn("DDDDDDD's conductor half", verdict)
        self.assertEqual([], pike_job.verdict_problems(data))

    def test_the_known_leak_gone_is_not_hidden(self):
        clean = observation("delete-at-reschedule", **DELETED,
                            usages={NODE1: 0, NODE2: 0},
                            nodes=[node(NODE1, "n1"), node(NODE2, "n2")],
                            hooks_fired=["fail@0", "delete@reschedule"],
                            build_results=["rescheduled"])
        data = self.evaluate([clean], [dict(clean)])
        fixed = data[FIXED][SCENARIOS_KEY][0]["verdict"]
        self.assertTrue(fixed.startswith("WRONG: "), fixed)
        self.assertTrue(data[REPRODUCER][SCENARIOS_KEY][0]["verdict"].startswith(
            "unexpected: "))
        self.assertEqual(2, len(pike_job.verdict_problems(data)))

    def test_vifs_are_checked_against_ironic_917(self):
        stuck = observation(pike_table.REPORTED, status="BUILD")
        data = self.evaluate([observation(pike_table.REPORTED)], [stuck])
        self.assertNotIn(invariant.NOOP_VIFS,
                         data[FIXED][SCENARIOS_KEY][0].get("unchecked", []))
        # the main job's real Ironic (noop network interface) attaches none
        data = self.evaluate([observation(pike_table.REPORTED, vifs_attached=False)],
                             [dict(stuck, vifs_attached=False)])
        self.assertIn(invariant.NOOP_VIFS, data[FIXED][SCENARIOS_KEY][0]["unchecked"])

    def test_an_active_servers_node_without_its_vif(self):
        active = observation(
            "normal-build-delete", status="ACTIVE", host="pike-compute", node=NODE1,
            definition=dict(pike_table.BY_NAME["normal-build-delete"].describe(),
                            port=True),
            port_id="port-1", port_device_id=SID, allocations={NODE1: {"x": 1}},
            usages={NODE1: 1}, nodes=[node(NODE1, "n1", "active", SID)])
        self.assertEqual(["its node n1 lacks the port's VIF"], invariant.leftovers(active))
        self.assertEqual([], invariant.leftovers(dict(active, vifs_attached=False)))


class PlayerOutputTest(unittest.TestCase):

    def test_a_scenario_that_wrote_nothing_is_an_error(self):
        with tempfile.TemporaryDirectory() as tmp:
            obs = pike_job._observation(pathlib.Path(tmp), "user-delete",
                                        pathlib.Path(tmp, "fixed.log"))
            self.assertIn("wrote no observation", obs["error"])
            self.assertTrue(judge.scenario_error(obs))
            pathlib.Path(tmp, "user-delete.json").write_text(json.dumps({"a": 1}))
            self.assertEqual({"a": 1}, pike_job._observation(
                pathlib.Path(tmp), "user-delete", None))


class PlayerContractTest(unittest.TestCase):
    """The Python 2.7 player imports nothing of the harness: what they
    share is spelled in both, and checked here."""

    source = PLAYER.read_text()

    def test_the_environment(self):
        for name in (pike_job.SCENARIOS_ENV, pike_job.OUT_ENV):
            self.assertIn(f"os.environ.get('{name}')", self.source)
        self.assertEqual(pike_job.PLAYER + ".py", PLAYER.name)
        self.assertIn(f"POLL_INTERVAL = {pike_job.POLL_INTERVAL}\n", self.source)

    def test_it_writes_only_observation_keys(self):
        written = set(re.findall(r"rec\['(\w+)'\]", self.source))
        written |= set(re.findall(r"^\s+'(\w+)': ", self.source[
            self.source.index("rec = {"):self.source.index("t0 = time.time()")],
            re.M))
        written |= {"status", "vm_state", "task_state", "host", "node", "fault"}
        self.assertLessEqual(written, set(scenario_table.OBSERVATION))
        for key in ("allocations", "usages", "nodes", "hooks_fired",
                    "deployed_nodes", "allocations_after_periodic"):
            self.assertIn(key, written)

    def test_it_names_the_real_backend_as_the_checks_do(self):
        from novaseries.scenarios.checks import REAL_IRONIC
        self.assertIn(f"REAL_IRONIC = '{REAL_IRONIC}'", self.source)

    def test_it_is_python_27_code(self):
        try:
            python = venv_build.find_interpreter("python2.7")
        except HarnessError:
            self.skipTest("no Python 2.7 here")
        for path in PLAYER.parent.glob("*.py"):
            proc = subprocess.run([python, "-c", "import sys; compile(open(sys.argv[1]).read(), "
                                   "sys.argv[1], 'exec')", str(path)],
                                  capture_output=True, text=True)
            self.assertEqual(0, proc.returncode, f"{path.name}: {proc.stderr}")
        ast.parse(self.source)  # and Python 3 can read it (flake8 does)


class CommandTest(unittest.TestCase):

    def test_pike_refuses_the_main_jobs_options(self):
        for extra in (["--ironic", "real"], ["--mode", "threading"],
                      ["--bench", "1:0:1"], ["--tree", "/tmp/x"]):
            with self.subTest(extra=extra):
                with self.assertRaisesRegex(HarnessError, "--release pike"):
                    cli_main(["run", "--release", "pike", *extra])

    def test_a_pike_scenario_is_refused_on_master(self):
        with self.assertRaisesRegex(HarnessError, "--release pike"):
            cli_main(["run", "--scenario", "undeploy-wait-callback"])

    def test_pike_lists_its_scenarios(self):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            self.assertEqual(0, cli_main(["run", "--release", "pike", "--list"]))
        for sc in pike_table.SCENARIOS:
            self.assertIn(f"{sc.name}: {sc.title}", out.getvalue())
        self.assertNotIn("run --ironic real", out.getvalue())


def cli_main(argv):
    """The CLI's run of ``argv``, its HarnessError raised (not printed)."""
    ctx = cli.context(argv)
    args = cli.build_parser(ctx).parse_args(argv)
    return args.func(ctx, args)


class CompiledTest(unittest.TestCase):
    """What ci keeps of the run: the player compiles (here with this
    Python: the check's code, not Python 2.7's grammar)."""

    def outcome(self, text):
        with tempfile.TemporaryDirectory() as tmp:
            folder = pathlib.Path(tmp)
            (folder / f"{pike_job.PLAYER}.py").write_text("x = 1\n")
            (folder / "pike_hooks.py").write_text(text)
            venv = pathlib.Path(tmp, "venv", "bin")
            venv.mkdir(parents=True)
            (venv / "python").symlink_to(sys.executable)
            with mock.patch.object(pike_job.driver_runs, "PIKE_DRIVER_TESTS", folder), \
                    mock.patch.object(pike_job.outcomes_mod, "missing_interpreter",
                                      return_value=None), \
                    mock.patch.object(pike_job.venvs, "ensure_venv",
                                      return_value=(venv.parent, 0)), \
                    mock.patch.object(pike_job.targets_mod, "get"):
                return pike_job.compiled(None)

    def test_compiles(self):
        outcome = self.outcome("y = 2\n")
        self.assertEqual((1, 0), (outcome.passed, outcome.failed))
        self.assertIn("(py27, 2 modules)", outcome.name)

    def test_a_failure_without_a_message_fails(self):
        # (killed, say): the exit status is the note
        with mock.patch.object(pike_job.subprocess, "run",
                               return_value=subprocess.CompletedProcess([], -9, "", "")):
            outcome = self.outcome("y = 2\n")
        self.assertEqual((0, 1), (outcome.passed, outcome.failed))
        self.assertEqual("exit -9", outcome.note)

    def test_a_module_that_does_not_compile(self):
        outcome = self.outcome("def broken(:\n")
        self.assertEqual((0, 1), (outcome.passed, outcome.failed))
        self.assertIn("SyntaxError", outcome.note)


if __name__ == "__main__":
    unittest.main()
