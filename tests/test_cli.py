"""Command-line errors: one line, non-zero exit; the targets file; the
CLI's wiring (cli.COMMANDS, the command modules, ci's step table) and the
import rules."""

import argparse
import ast
import contextlib
import io
import os
import re
import subprocess
import sys
import unittest
from unittest import mock

from novaseries import ci, cisteps, cli, targets, util
from novaseries.commands import run as run_command
from novaseries.ironic import hang_probe_run
from novaseries.outcomes import Outcome
from novaseries.util import HarnessError
from tests import helpers


class CliTest(helpers.ProjectTestCase):

    def test_unknown_target_one_line_error(self):
        for command in ("prepare", "test", "export", "check-commits"):
            proc = self.cli(command, "nosuch")
            self.assertEqual(proc.returncode, 1, command)
            self.assertEqual(proc.stderr.count("\n"), 1, proc.stderr)
            self.assertIn("unknown target 'nosuch' (known: fake, other)", proc.stderr)

    def test_missing_interpreter_one_line_error(self):
        self.write_targets(interpreter="python9.9")
        tree = self.tmp / "tree"
        self.assertEqual(self.cli("prepare", "fake", "--dest", str(tree)).returncode, 0)
        proc = self.cli("test", "fake", "--tree", str(tree))
        self.assertEqual(proc.returncode, 1)
        self.assertEqual(proc.stderr.count("\n"), 1, proc.stderr)
        self.assertIn("interpreter python9.9 not found", proc.stderr)

    def test_targets_lists_missing_patches_clearly(self):
        proc = self.cli("targets")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("fake", proc.stdout)
        self.assertIn("patches folder", proc.stdout)
        self.assertIn("is missing", proc.stdout)

    def test_ci_reports_target_without_patches(self):
        proc = self.cli("ci", "--no-self-tests", "--target", "other")
        self.assertEqual(proc.returncode, 1)
        lines = proc.stdout.strip().splitlines()
        self.assertEqual(lines[-1], "0 passed, 1 failed, 0 skipped")
        self.assertIn("patches folder", proc.stdout)

    def test_prepare_of_target_without_patches_makes_base_only(self):
        (self.patches / "series").unlink()
        proc = self.cli("prepare", "fake", "--dest", str(self.tmp / "t"))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("pristine base only", proc.stdout)

    def test_prepare_refuses_a_series_naming_a_missing_patch(self):
        with open(self.patches / "series", "a") as series:
            series.write("0009-missing.patch\n")
        proc = self.cli("prepare", "fake", "--dest", str(self.tmp / "t"))
        self.assertEqual(proc.returncode, 1)
        self.assertIn("0009-missing.patch", proc.stderr)
        self.assertFalse((self.tmp / "t").exists())

    def test_prepare_dest_that_is_a_file(self):
        (self.tmp / "f").write_text("x")
        proc = self.cli("prepare", "fake", "--dest", str(self.tmp / "f"))
        self.assertEqual(proc.returncode, 1)
        self.assertIn("is not a folder", proc.stderr)

    def test_bad_targets_file(self):
        (self.root / "targets" / "targets.toml").write_text("[targets.x]\nversion = '1'\n")
        with self.assertRaises(HarnessError) as caught:
            targets.load(self.ctx)
        self.assertIn("lacks sha256", str(caught.exception))

    def test_upto_selection(self):
        for name in ("0001-a.patch", "0002-b-thing.patch", "0003-c.patch"):
            (self.patches / name).write_text("")
        (self.patches / "series").write_text("# comment\n0001-a.patch\n0002-b-thing.patch\n"
                                             "\n0003-c.patch -p1\n")
        self.assertEqual(len(self.target.select(None)), 3)
        self.assertEqual([p.name for p in self.target.select("0002")],
                         ["0001-a.patch", "0002-b-thing.patch"])
        self.assertEqual(len(self.target.select("2")), 2)
        self.assertEqual(len(self.target.select("b-thing")), 2)
        self.assertEqual(len(self.target.select("0003-c.patch")), 3)
        with self.assertRaises(HarnessError):
            self.target.select("nosuch")
        with self.assertRaises(HarnessError):
            self.target.select("patch")  # ambiguous

    def test_series_naming_missing_file(self):
        (self.patches / "series").write_text("0001-gone.patch\n")
        with self.assertRaises(HarnessError) as caught:
            self.target.series()
        self.assertIn("0001-gone.patch", str(caught.exception))


class LoggingTest(helpers.ProjectTestCase):

    def test_quiet_keeps_results_and_errors(self):
        loud = self.cli("ci", "--no-self-tests", "--target", "other")
        quiet = self.cli("-q", "ci", "--no-self-tests", "--target", "other")
        self.assertIn("=== other: nova 9.9.9", loud.stdout)  # a progress line
        self.assertNotIn("=== other", quiet.stdout)
        for proc in (loud, quiet):
            self.assertEqual(1, proc.returncode)
            self.assertIn("=== summary", proc.stdout)
            self.assertEqual("0 passed, 1 failed, 0 skipped",
                             proc.stdout.strip().splitlines()[-1])
        self.assertIn("fake", self.cli("-q", "targets").stdout)

    def test_verbose_is_accepted(self):
        self.assertEqual(0, self.cli("-v", "targets").returncode)


class CiStepsTest(helpers.ProjectTestCase):
    """ci's steps after the targets: cisteps.steps(ctx), or ``steps=``."""

    def test_steps_are_counted(self):
        def good(ctx):
            return [Outcome("scenario", passed=2)]

        def broken(ctx):
            raise RuntimeError("boom")

        out = helpers.capture_log(self, io.StringIO())
        with contextlib.redirect_stdout(out):
            status = ci.ci(self.ctx, ["fake"], self_test=False,
                           steps=(cisteps.Step("good", good), cisteps.Step("broken", broken)))
        self.assertEqual(status, 1)
        self.assertEqual(out.getvalue().splitlines()[-1], "2 passed, 2 failed, 0 skipped")
        self.assertIn("RuntimeError: boom", out.getvalue())

    def test_a_test_may_patch_the_step_table(self):
        ran = []
        steps = (cisteps.Step("patched", lambda ctx: ran.append(ctx) or
                              [Outcome("patched", passed=1)], targets=("fake",)),)
        out = helpers.capture_log(self, io.StringIO())
        with contextlib.redirect_stdout(out), \
                mock.patch.object(cisteps, "standing_steps", lambda ctx: steps):
            status = ci.ci(self.ctx, ["fake"], self_test=False)
        self.assertEqual([self.ctx], ran)
        self.assertIn("ok   patched: 1 passed, 0 failed", out.getvalue())
        # the target fake has no patches: one failure; then the step
        self.assertEqual(1, status)
        self.assertEqual("1 passed, 1 failed, 0 skipped", out.getvalue().splitlines()[-1])

    def test_harness_tests_are_a_task(self):
        # the harness's own tests run as a task beside the targets (and
        # their steps), first in the summary; a failure there counts
        started = []
        with mock.patch.object(ci, "self_tests",
                               lambda ctx: started.append("harness") or
                               Outcome("harness tests (tests/)", failed=1)), \
                mock.patch.object(ci, "run_tasks", wraps=ci.run_tasks) as run_tasks:
            out = helpers.capture_log(self, io.StringIO())
            with contextlib.redirect_stdout(out):
                status = ci.ci(self.ctx, ["fake"], steps=(), parallel=2)
                ci.ci(self.ctx, ["fake"], steps=(), parallel=1)
        self.assertEqual(["harness", "harness"], started)
        first, second = (call[0][0] for call in run_tasks.call_args_list)
        self.assertEqual(["harness tests", "fake"], [t.name for t in first])
        # the harness tests run beside the targets' tasks, not in one of
        # their places; with one place, in it
        self.assertEqual([True, False], [t.light for t in first])
        self.assertEqual([False, False], [t.light for t in second])
        self.assertEqual(1, status)
        summary = out.getvalue().split("=== summary\n", 1)[1].splitlines()
        self.assertTrue(summary[0].startswith("FAIL harness tests (tests/)"), summary[0])
        self.assertIn("time: harness tests:", out.getvalue())

    def test_the_step_table(self):
        steps = cisteps.steps(util.Context.create(helpers.REPO))
        self.assertEqual(["real Ironic", "pike against Ironic 9.1.7",
                          "pike whole-stack player compiles (py27)", "main job",
                          "main job vs real Ironic", "explorer", "mypy master-all",
                          "mypy 2026.1-all",
                          "mypy 2025.2-all", "mypy 2025.1-all"],
                         [step.name for step in steps])
        for step in steps:
            self.assertTrue(callable(step.func), step)
            self.assertIsInstance(step.targets, tuple)
        self.assertEqual({"real Ironic", "pike against Ironic 9.1.7",
                          "pike whole-stack player compiles (py27)", "main job vs real Ironic"},
                         {step.name for step in steps if step.light})
        self.assertEqual([("master",), ("master-all",), ("2026.1-all",), ("2025.2-all",),
                          ("2025.1-all",)], [step.targets for step in steps[5:]])

    def test_a_disabled_target_is_counted_and_nothing_run_fails(self):
        # every target disabled (``other`` is, in the helpers' project):
        # each one a skipped line, and a run that ran nothing fails
        toml = self.root / "targets" / "targets.toml"
        toml.write_text(toml.read_text().replace("[targets.fake]\n",
                                                 "[targets.fake]\nenabled = false\n"))
        out = helpers.capture_log(self, io.StringIO())
        with contextlib.redirect_stdout(out):
            status = ci.ci(self.ctx, None, self_test=False, steps=())
        text = out.getvalue()
        self.assertEqual(1, status)
        self.assertIn("ok   other: not enabled: 0 passed, 0 failed, 1 skipped", text)
        self.assertIn("FAIL ci: 0 passed, 1 failed  (no test or check ran)", text)
        self.assertEqual("0 passed, 1 failed, 2 skipped", text.splitlines()[-1])

    def test_steps_that_cannot_pass_quietly(self):
        steps = (cisteps.Step("empty", lambda ctx: []),
                 cisteps.Step("exits", lambda ctx: exec("raise SystemExit(0)")),
                 cisteps.Step("needs", lambda ctx: self.fail("must not run"),
                              targets=("fake", "nosuch")))
        for under_ci, needs in (("", "ok   needs: 0 passed, 0 failed, 1 skipped"),
                                ("true", "FAIL needs: 0 passed, 1 failed")):
            out = helpers.capture_log(self, io.StringIO())
            with contextlib.redirect_stdout(out), \
                    mock.patch.dict("os.environ", {"CI": under_ci}):
                status = ci.ci(self.ctx, ["fake"], self_test=False, steps=steps)
            text = out.getvalue()
            self.assertEqual(1, status)
            self.assertIn("FAIL empty: 0 passed, 1 failed  (error: step empty produced no "
                          "result)", text)
            self.assertIn("FAIL exits: 0 passed, 1 failed", text)
            self.assertIn(f"{needs}  (no target nosuch)", text)


class CommandsTest(unittest.TestCase):
    """The CLI is wired explicitly: cli.COMMANDS lists the command modules."""

    #: ``novaseries --help``'s commands before the commands/ package
    COMMANDS = ["targets", "prepare", "export", "backport", "quilt", "test", "check-commits",
                "ci", "run", "explore", "ironic", "mutate"]

    def parser(self):
        return cli.build_parser(util.Context.create(helpers.REPO))

    def test_every_command_module_is_reachable(self):
        self.assertEqual(self.COMMANDS, [cli.command_name(m) for m in cli.COMMANDS])
        subparsers = next(a for a in self.parser()._actions
                          if isinstance(a, argparse._SubParsersAction))
        self.assertEqual(self.COMMANDS, list(subparsers.choices))
        for module in cli.COMMANDS:
            name = cli.command_name(module)
            self.assertTrue(module.__doc__ and module.__doc__.strip(), name)
            self.assertTrue(module.HELP and "\n" not in module.HELP, name)
            self.assertTrue(callable(module.add_arguments) and callable(module.run), name)
            self.assertIs(module.run, subparsers.choices[name].get_default("func"), name)

    def test_help_lists_the_commands(self):
        proc = subprocess.run([sys.executable, "-m", "novaseries", "--help"],
                              capture_output=True, text=True, cwd=helpers.REPO,
                              env=dict(os.environ, PYTHONPATH=str(helpers.REPO)))
        self.assertEqual(0, proc.returncode, proc.stderr)
        listed = re.findall(r"^    ([a-z-]+) +\S", proc.stdout, re.M)
        self.assertEqual(self.COMMANDS, listed)

    def test_ironic_actions_parse(self):
        parser = self.parser()
        args = parser.parse_args(["ironic", "driver-tests", "--pike"])
        self.assertEqual(("driver-tests", True, "threading", "auto"),
                         (args.action, args.pike, args.mode, args.expect))
        args = parser.parse_args(["ironic", "start", "--pike", "--port", "6385"])
        self.assertEqual(("start", True, 6385, 0),
                         (args.action, args.pike, args.port, args.fake_delays))
        args = parser.parse_args(["ironic", "driver-tests", "--mode", "eventlet", "-k", "e2e"])
        self.assertEqual(("eventlet", "e2e", False), (args.mode, args.pattern, args.pike))
        self.assertEqual("install", parser.parse_args(["ironic", "install"]).action)
        self.assertEqual("sweep", parser.parse_args(["ironic", "sweep"]).action)

    def test_ironic_hang_probe_parses(self):
        parser = self.parser()
        args = parser.parse_args(["ironic", "hang-probe"])
        self.assertEqual(("hang-probe", hang_probe_run.TIMEOUT, hang_probe_run.RETRIES,
                          hang_probe_run.UNSET_FOR, "threading", None),
                         (args.action, args.timeout, args.retries, args.unset_for,
                          args.mode, args.tree))
        args = parser.parse_args(["ironic", "hang-probe", "--timeout", "2.5", "--retries",
                                  "0", "--unset-for", "300", "--mode", "eventlet"])
        self.assertEqual((2.5, 0, 300.0, "eventlet"),
                         (args.timeout, args.retries, args.unset_for, args.mode))

    def test_run_modes_come_from_targets_toml(self):
        ctx = util.Context.create(helpers.REPO)
        parser = self.parser()
        for given, modes in ((None, ("threading",)), ("both", ("threading", "eventlet")),
                             ("eventlet", ("eventlet",))):
            argv = ["run"] + (["--mode", given] if given else [])
            args = parser.parse_args(argv)
            self.assertEqual(modes, run_command.chosen_modes(ctx, args.mode), given)
        with contextlib.redirect_stderr(io.StringIO()), self.assertRaises(SystemExit):
            parser.parse_args(["run", "--mode", "greenlet"])


class ModesInTheHelpTest(helpers.ProjectTestCase):
    """A project's own [modes] give the --mode choices, help and default."""

    def test_own_modes(self):
        toml = self.root / "targets" / "targets.toml"
        toml.write_text(toml.read_text() + '\n[modes.alpha]\ndescription = "the first"\n'
                        '[modes.beta]\ndescription = "the second"\ndefault = true\n')
        run_help = self.cli("run", "--help")
        self.assertEqual(0, run_help.returncode, run_help.stderr)
        self.assertIn("--mode {beta,alpha,both}", run_help.stdout)
        text = " ".join(run_help.stdout.split())
        self.assertIn("beta: the second (the default here); alpha: the first; or both "
                      "(beta, then alpha)", text)
        tests_help = self.cli("ironic", "driver-tests", "--help")
        self.assertIn("--mode {beta,alpha}", tests_help.stdout)
        self.assertIn("default beta: the second", " ".join(tests_help.stdout.split()))
        test_help = " ".join(self.cli("test", "--help").stdout.split())
        self.assertIn("(alpha, beta; repeatable", test_help)

    def test_no_default_mode_is_one_clear_error(self):
        toml = self.root / "targets" / "targets.toml"
        toml.write_text(toml.read_text() + '\n[modes.alpha]\n[modes.beta]\n')
        proc = self.cli("targets")
        self.assertEqual(1, proc.returncode)
        self.assertEqual(1, proc.stderr.count("\n"), proc.stderr)
        self.assertIn("[modes] must mark exactly one mode default = true", proc.stderr)


class LayersTest(unittest.TestCase):
    """Imports point down and are all at the top: no importlib, no
    ``__import__``, no import from novaseries inside a function; nothing
    below the CLI imports cli or commands."""

    @staticmethod
    def modules():
        for path in sorted((helpers.REPO / "novaseries").rglob("*.py")):
            yield path.relative_to(helpers.REPO).as_posix(), ast.parse(path.read_text())

    @staticmethod
    def imported(node):
        """The novaseries modules an Import/ImportFrom node names."""
        if isinstance(node, ast.Import):
            return [alias.name for alias in node.names]
        if node.level:
            return ["novaseries (relative import)"]
        base = node.module or ""
        return [base] + [f"{base}.{alias.name}" for alias in node.names]

    def test_no_dynamic_or_function_level_imports(self):
        found = []
        for name, tree in self.modules():
            for node in ast.walk(tree):
                if isinstance(node, ast.Call) and (
                        isinstance(node.func, ast.Name) and node.func.id == "__import__" or
                        isinstance(node.func, ast.Attribute) and
                        isinstance(node.func.value, ast.Name) and
                        node.func.value.id == "importlib"):
                    found.append(f"{name}:{node.lineno}: {ast.unparse(node.func)}")
                if isinstance(node, (ast.Import, ast.ImportFrom)) and any(
                        n.split(".")[0] == "importlib" for n in self.imported(node)):
                    found.append(f"{name}:{node.lineno}: imports importlib")
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    for inner in ast.walk(node):
                        if isinstance(inner, (ast.Import, ast.ImportFrom)) and any(
                                n.startswith("novaseries") for n in self.imported(inner)):
                            found.append(f"{name}:{inner.lineno}: {ast.unparse(inner)} "
                                         f"in {node.name}()")
        self.assertEqual([], found)

    def test_nothing_imports_the_cli(self):
        allowed = ("novaseries/cli.py", "novaseries/__main__.py")
        found = []
        for name, tree in self.modules():
            if name in allowed or name.startswith("novaseries/commands/"):
                continue
            for node in ast.walk(tree):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    for module in self.imported(node):
                        if module in ("novaseries.cli", "novaseries.commands") or \
                                module.startswith("novaseries.commands."):
                            found.append(f"{name}:{node.lineno}: {ast.unparse(node)}")
        self.assertEqual([], found)
        main = ast.parse((helpers.REPO / "novaseries" / "__main__.py").read_text())
        self.assertEqual([["novaseries.cli", "novaseries.cli.main"]],
                         [self.imported(n) for n in ast.walk(main)
                          if isinstance(n, ast.ImportFrom)])


class LogHandlersSurviveTest(helpers.ProjectTestCase):
    """The harness's own tests run inside ``ci``: they must give the CLI's
    log handler back (a test that removed it silenced the rest of ci)."""

    def test_capture_log_restores(self):
        from novaseries import util
        cli_handler = util.setup_logging(0, stream=io.StringIO())
        self.addCleanup(util.LOG.removeHandler, cli_handler)
        inner = unittest.TestCase("run")
        inner.run = lambda *a: None
        helpers.capture_log(inner)
        self.assertNotIn(cli_handler, util.LOG.handlers)
        inner.doCleanups()
        self.assertIn(cli_handler, util.LOG.handlers)

    def test_no_test_sets_up_the_clis_logging(self):
        for path in (helpers.REPO / "tests").rglob("test_*.py"):
            text = path.read_text()
            calls = [line for line in text.splitlines()
                     if "setup_logging(" in line and "cli_handler" not in line]
            self.assertEqual([], calls, path)


class OptionsRefusedTest(helpers.ProjectTestCase):
    """Values from a known set are checked by argparse; options a command
    would ignore are refused (no Ironic, no Nova needed)."""

    def _refused(self, *args, code=1):
        proc = self.cli(*args)
        self.assertEqual(code, proc.returncode, (args, proc.stdout, proc.stderr))
        return proc.stderr

    def test_ironic(self):
        self.assertIn("unrecognized arguments: --port 3",
                      self._refused("ironic", "sweep", "--port", "3", code=2))
        self.assertIn("unrecognized arguments: --tree t --expect bug",
                      self._refused("ironic", "install", "--tree", "t", "--expect", "bug",
                                    code=2))
        self.assertIn("unrecognized arguments: --pike",
                      self._refused("ironic", "sweep", "--pike", code=2))
        self.assertIn("ironic start --pike does not take --fake-delays",
                      self._refused("ironic", "start", "--pike", "--fake-delays", "2"))
        self.assertIn("ironic driver-tests --pike does not take -k",
                      self._refused("ironic", "driver-tests", "--pike", "-k", "x"))
        self.assertIn("ironic driver-tests --pike does not take --tree, --expect",
                      self._refused("ironic", "driver-tests", "--pike", "--tree", "t",
                                    "--expect", "bug"))
        self.assertIn("ironic driver-tests --pike does not take --nova-venv",
                      self._refused("ironic", "driver-tests", "--pike", "--nova-venv", "v"))
        self.assertIn("invalid choice: 'bogus'", self._refused("ironic", "bogus", code=2))
        self.assertIn("invalid choice: 'maybe'",
                      self._refused("ironic", "driver-tests", "--expect", "maybe", code=2))
        self.assertIn("is not a Nova tree",
                      self._refused("ironic", "driver-tests", "--tree", str(self.tmp)))
        self.assertIn("--timeout: 0: not above 0",
                      self._refused("ironic", "hang-probe", "--timeout", "0", code=2))
        self.assertIn("unrecognized arguments: --pike",
                      self._refused("ironic", "hang-probe", "--pike", code=2))
        self.assertIn("is not a Nova tree",
                      self._refused("ironic", "hang-probe", "--tree", str(self.tmp)))

    def test_run(self):
        self.assertIn("invalid choice: 'nosuch'",
                      self._refused("run", "--scenario", "nosuch", code=2))
        self.assertIn("K (4 torn down) > N (3 builds)",
                      self._refused("run", "--bench", "3:1:4", code=2))
        self.assertIn("expected N:S:K", self._refused("run", "--bench", "3:1", code=2))
        self.assertIn("--bench-runs needs --bench",
                      self._refused("run", "--bench-runs", "2"))
        self.assertIn("--bench runs on the fake Ironic",
                      self._refused("run", "--bench", "cost", "--ironic", "real"))
        self.assertIn("must be at least 1",
                      self._refused("run", "--bench", "cost", "--bench-runs", "0", code=2))
        self.assertIn("--tree judges one tree with the fake Ironic; it does not take "
                      "--bench or --ironic real",
                      self._refused("run", "--tree", str(self.tmp), "--bench", "2:1:1",
                                    "--ironic", "real"))
        self.assertIn("--list lists the scenarios; it does not take --scenario",
                      self._refused("run", "--list", "--scenario", "abort"))
        self.assertIn("it does not take --bench-runs, --json, --ironic, --mode",
                      self._refused("run", "--list", "--json", "x", "--bench-runs", "2",
                                    "--ironic", "real", "--mode", "both"))
        self.assertIn("--tree judges one tree with the fake Ironic; it does not take "
                      "--ironic real", self._refused("run", "--tree", str(self.tmp),
                                                     "--ironic", "real"))
        # before any tree or Ironic is prepared
        refused = self._refused("run", "--ironic", "real", "--scenario",
                                "normal-build", "--scenario", "cleanup-fail-delete")
        self.assertIn("--ironic real cannot play cleanup-fail-delete: a running "
                      "Ironic does not refuse", refused)
        self.assertNotIn("normal-build", refused)
