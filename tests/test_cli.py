"""Command-line errors: one line, non-zero exit; the targets file."""

import io
import unittest

from novaseries import targets
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

    def test_registered_steps_are_counted(self):
        import contextlib
        import io

        from novaseries import ci, runner

        def good(ctx):
            return [runner.Outcome("scenario", passed=2)]

        def broken(ctx):
            raise RuntimeError("boom")

        saved = dict(ci.EXTRA_STEPS)
        self.addCleanup(lambda: (ci.EXTRA_STEPS.clear(), ci.EXTRA_STEPS.update(saved)))
        ci.register_step("good", good)
        ci.register_step("broken", broken)
        out = helpers.capture_log(self, io.StringIO())
        with contextlib.redirect_stdout(out):
            status = ci.ci(self.ctx, ["fake"], self_test=False)
        self.assertEqual(status, 1)
        self.assertEqual(out.getvalue().splitlines()[-1], "2 passed, 2 failed, 0 skipped")
        self.assertIn("RuntimeError: boom", out.getvalue())

    def test_steps_that_cannot_pass_quietly(self):
        import contextlib
        import io

        from novaseries import ci

        saved = dict(ci.EXTRA_STEPS)
        self.addCleanup(lambda: (ci.EXTRA_STEPS.clear(), ci.EXTRA_STEPS.update(saved)))
        ci.EXTRA_STEPS.clear()
        ci.register_step("empty", lambda ctx: [])
        ci.register_step("exits", lambda ctx: exec("raise SystemExit(0)"))
        ci.register_step("needs", lambda ctx: self.fail("must not run"),
                         targets=["fake", "nosuch"])
        from unittest import mock
        for under_ci, needs in (("", "ok   needs: 0 passed, 0 failed, 1 skipped"),
                                ("true", "FAIL needs: 0 passed, 1 failed")):
            out = helpers.capture_log(self, io.StringIO())
            with contextlib.redirect_stdout(out), \
                    mock.patch.dict("os.environ", {"CI": under_ci}):
                status = ci.ci(self.ctx, ["fake"], self_test=False)
            text = out.getvalue()
            self.assertEqual(1, status)
            self.assertIn("FAIL empty: 0 passed, 1 failed  (error: step empty produced no "
                          "result)", text)
            self.assertIn("FAIL exits: 0 passed, 1 failed", text)
            self.assertIn(f"{needs}  (no target nosuch)", text)


class BrokenPluginTest(helpers.ProjectTestCase):
    """A plugin that fails to import fails ``ci`` and names itself; its
    commands say why they are unavailable (a copy of the package whose
    ``mainjob`` raises, run as a user would)."""

    def setUp(self):
        super().setUp()
        import shutil
        copy = self.tmp / "copy"
        shutil.copytree(helpers.REPO / "novaseries", copy / "novaseries",
                        ignore=shutil.ignore_patterns("__pycache__"))
        (copy / "novaseries" / "mainjob.py").write_text(
            'raise RuntimeError("mainjob is broken")\n')
        self.copy = copy

    def _cli(self, *args):
        import os
        import subprocess
        import sys
        # -S: no site-packages, whose editable install of the harness would
        # win over PYTHONPATH (the harness needs only the standard library)
        env = dict(os.environ, PYTHONPATH=str(self.copy),
                   NOVASERIES_SDIST_CACHE=str(self.cache),
                   NOVASERIES_BUILD=str(self.tmp / "build"))
        return subprocess.run([sys.executable, "-S", "-m", "novaseries", "--root",
                               str(self.root), *args], capture_output=True, text=True,
                              env=env, stdin=subprocess.DEVNULL, cwd=str(self.tmp))

    def test_ci_fails(self):
        proc = self._cli("ci", "--no-self-tests", "--target", "fake")
        self.assertEqual(1, proc.returncode, proc.stdout + proc.stderr)
        self.assertIn("novaseries.mainjob failed to load: RuntimeError('mainjob is broken')",
                      proc.stderr)
        summary = proc.stdout.split("=== summary", 1)[1]
        self.assertIn("FAIL plugin novaseries.mainjob", summary)
        self.assertRegex(proc.stdout.strip().splitlines()[-1], r"^\d+ passed, [1-9]\d* failed")

    def test_its_command_says_why(self):
        proc = self._cli("run", "--scenario", "x")
        self.assertEqual(1, proc.returncode)
        self.assertIn("error: command 'run' is unavailable: novaseries.mainjob failed to "
                      "load: RuntimeError('mainjob is broken')", proc.stderr)

    def test_other_commands_still_work(self):
        proc = self._cli("targets")
        self.assertEqual(0, proc.returncode, proc.stderr)
        self.assertIn("fake", proc.stdout)


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
        self.assertIn("ironic sweep does not take --port",
                      self._refused("ironic", "sweep", "--port", "3"))
        self.assertIn("ironic install does not take --tree, --expect",
                      self._refused("ironic", "install", "--tree", "t", "--expect", "bug"))
        self.assertIn("ironic start --pike does not take --fake-delays",
                      self._refused("ironic", "start", "--pike", "--fake-delays", "2"))
        self.assertIn("ironic selftest --pike does not take -k",
                      self._refused("ironic", "selftest", "--pike", "-k", "x"))
        self.assertIn("invalid choice: 'bogus'", self._refused("ironic", "bogus", code=2))
        self.assertIn("invalid choice: 'maybe'",
                      self._refused("ironic", "selftest", "--expect", "maybe", code=2))
        self.assertIn("is not a Nova tree",
                      self._refused("ironic", "selftest", "--tree", str(self.tmp)))

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
        self.assertIn("expected a number >= 1",
                      self._refused("run", "--bench", "cost", "--bench-runs", "0", code=2))
        self.assertIn("--tree judges one tree with the fake Ironic; it does not take "
                      "--bench or --ironic real",
                      self._refused("run", "--tree", str(self.tmp), "--bench", "2:1:1",
                                    "--ironic", "real"))
        self.assertIn("--list lists the scenarios; it does not take --scenario",
                      self._refused("run", "--list", "--scenario", "abort"))
        # before any tree or Ironic is prepared
        refused = self._refused("run", "--ironic", "real", "--scenario",
                                "normal-build", "--scenario", "cleanup-fail-delete")
        self.assertIn("--ironic real cannot play cleanup-fail-delete: a running "
                      "Ironic 39.0.0 does not refuse", refused)
        self.assertNotIn("normal-build", refused)


class LoadPluginsTest(unittest.TestCase):

    def test_each_command_of_a_failed_plugin_says_why(self):
        from novaseries import ci, cli
        saved = dict(cli.COMMANDS), dict(ci.PLUGIN_ERRORS)

        def restore():
            cli.COMMANDS.clear()
            cli.COMMANDS.update(saved[0])
            ci.PLUGIN_ERRORS.clear()
            ci.PLUGIN_ERRORS.update(saved[1])
        self.addCleanup(restore)
        import contextlib
        with contextlib.redirect_stderr(io.StringIO()) as err:
            cli.load_plugins({"tests.no_such_plugin": ["cmd-a", "cmd-b"]})
        self.assertIn("warning: tests.no_such_plugin failed to load", err.getvalue())
        reason = ci.PLUGIN_ERRORS["tests.no_such_plugin"]
        self.assertIn("ModuleNotFoundError", reason)
        for name in ("cmd-a", "cmd-b"):
            help_text, func = cli.COMMANDS[name]
            self.assertIn("unavailable", help_text)
            with self.assertRaises(HarnessError) as caught:
                func(None, None)
            self.assertIn(f"command {name!r} is unavailable: tests.no_such_plugin "
                          "failed to load", str(caught.exception))
