"""novaseries.ironic.pike: the fake Neutron, refusals before anything starts,
and how the end-to-end runs are counted (testrun.pike_driver_outcomes, ci's
real-Ironic step).

Starting a real Ironic 9.1.7 takes RabbitMQ and a Python 2.7 venv: the ci
step ``pike against Ironic 9.1.7`` does that; these tests do not.
"""

import json
import os
import pathlib
import re
import tempfile
import unittest
import urllib.error
import urllib.request
from unittest import mock

from novaseries import cisteps, targets, testrun, util
from novaseries.ironic import driver_runs, layout, pike, run_env
from novaseries.ironic.service import RealIronicError
from novaseries.outcomes import Outcome
from novaseries.util import HarnessError
from tests import helpers


def _call(method, url, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


class FakeNeutronTest(unittest.TestCase):

    def setUp(self):
        self.neutron = pike.FakeNeutron().start()
        self.addCleanup(self.neutron.stop)

    def test_cleaning_network_lookup(self):
        status, body = _call("GET", self.neutron.url + "/v2.0/networks?id=%s&fields=id"
                             % pike.CLEANING_NETWORK)
        self.assertEqual((200, [{"id": pike.CLEANING_NETWORK}]),
                         (status, body["networks"]))
        # another network does not exist
        status, body = _call("GET", self.neutron.url + "/v2.0/networks?id=other")
        self.assertEqual((200, []), (status, body["networks"]))

    def test_port_binding_is_kept_and_recorded(self):
        url = self.neutron.url + "/v2.0/ports/vif-1"
        status, body = _call("PUT", url, {"port": {"binding:host_id": "compute"}})
        self.assertEqual(200, status)
        self.assertEqual({"id": "vif-1", "binding:host_id": "compute"}, body["port"])
        self.assertEqual("compute", _call("GET", url + ".json")[1]["port"]["binding:host_id"])
        self.assertEqual([("PUT", "/v2.0/ports/vif-1"), ("GET", "/v2.0/ports/vif-1")],
                         self.neutron.requests)

    def test_anything_else_is_404(self):
        self.assertEqual(404, _call("POST", self.neutron.url + "/v2.0/ports", {})[0])
        self.assertEqual(404, _call("GET", self.neutron.url + "/v2.0/subnets")[0])

    def test_loopback_only(self):
        with self.assertRaises(RealIronicError):
            pike.FakeNeutron("192.0.2.1")


class PinnedVersionTest(unittest.TestCase):
    """The pins files say which Ironic each venv holds."""

    def pins(self, text):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        path = pathlib.Path(tmp.name) / "ironic.txt"
        path.write_text(text)
        return path

    def test_the_ironic_line(self):
        path = self.pins("# ironic==1.0 in a comment\nironic-lib==2.0\n"
                         "python-ironicclient==3.0\nIronic == 9.1.7  # the release\n")
        self.assertEqual("9.1.7", layout.pinned_version(path, "ironic"))
        self.assertEqual(layout.pinned_version(
            util.pins_file(util.project_root(), pike.VENV_NAME), "ironic"),
                         layout.pinned_ironic(pike.VENV_NAME))
        self.assertEqual(pike.IRONIC_VERSION, layout.pinned_ironic(pike.VENV_NAME))

    def test_a_missing_line_or_file_is_named(self):
        path = self.pins("ironic-lib==2.0\n")
        with self.assertRaisesRegex(HarnessError, "ironic.txt must have one ironic==VERSION "
                                                  "line, not 0"):
            layout.pinned_version(path, "ironic")
        with self.assertRaisesRegex(HarnessError, "gone.txt is missing: it pins the ironic "
                                                  "release"):
            layout.pinned_version(path.parent / "gone.txt", "ironic")


class InterpreterTest(unittest.TestCase):

    def test_the_pike_targets_interpreter(self):
        """The pike-era Ironic runs under the interpreter of pike's target."""
        target = targets.get(util.Context.create(helpers.REPO), targets.PIKE_TARGET)
        self.assertEqual(target.interpreter, pike.PYTHON)


class ApiPortTest(unittest.TestCase):
    """pike's ironicclient strips "1" characters off the endpoint's end."""

    def test_ports_that_end_in_1_are_passed_over(self):
        picks = iter([37171, 35261, 40001, 40002])
        self.assertEqual(40002, pike.api_port(free_port=lambda host: next(picks)))

    def test_the_trim_it_avoids(self):
        # python-ironicclient 1.17 common/http.py _trim_endpoint_api_version
        def trim(url):
            return url.rstrip('/').rstrip('/v1')  # API_VERSION = '/v1'
        self.assertEqual('http://127.0.0.1:3717', trim('http://127.0.0.1:37171/v1'))
        self.assertEqual('http://127.0.0.1:37172', trim('http://127.0.0.1:37172/v1'))

    def test_gives_up(self):
        with self.assertRaisesRegex(RealIronicError, "does not end in 1"):
            pike.api_port(free_port=lambda host: 12341)


class RefusalTest(unittest.TestCase):

    def test_missing_rabbitmq_is_named(self):
        with tempfile.TemporaryDirectory() as tmp, \
                mock.patch.object(pike, "_tool_path", return_value=tmp):
            self.assertEqual(["rabbitmq-server", "epmd"], pike.missing_tools())
            ironic = pike.PikeIronic(pathlib.Path(tmp) / "venv",
                                     pathlib.Path(tmp) / "runs")
            with self.assertRaises(RealIronicError) as ctx:
                ironic.start()
        self.assertIn("rabbitmq-server, epmd not found", str(ctx.exception))
        self.assertIn("apt-get install rabbitmq-server", str(ctx.exception))
        self.assertIsNone(ironic.run_dir)  # nothing was started

    def test_missing_venv_is_named(self):
        with tempfile.TemporaryDirectory() as tmp, \
                mock.patch.object(pike, "missing_tools", return_value=[]):
            ironic = pike.PikeIronic(pathlib.Path(tmp) / "venv",
                                     pathlib.Path(tmp) / "runs")
            with self.assertRaises(RealIronicError) as ctx:
                ironic.start()
        self.assertIn("novaseries ironic install --pike", str(ctx.exception))


class PikeOutcomesTest(unittest.TestCase):
    """pike_driver_outcomes' Outcomes (``driver-tests --pike``, ci's step) come
    from each tree's unittest output."""

    def _step(self, logs):
        helpers.capture_log(self)  # the failed runs' tails are logged at ERROR
        with tempfile.TemporaryDirectory() as tmp:
            tmp = pathlib.Path(tmp)
            results = []
            for label, (rc, text) in logs.items():
                path = tmp / f"{label}.log"
                path.write_text(text)
                results.append((label, rc, path))
            ctx = mock.Mock(build=tmp)
            ctx.results.return_value = tmp
            with mock.patch.object(testrun.targets_mod, "get"), \
                    mock.patch.object(testrun, "missing_interpreter", return_value=None), \
                    mock.patch.object(testrun.tree_mod, "prepare", return_value=tmp), \
                    mock.patch.object(testrun.tree_mod, "scratch_worktree"), \
                    mock.patch.object(testrun.venvs, "ensure_venv", return_value=(tmp, 0)), \
                    mock.patch.object(testrun.driver_runs, "run_pike",
                                      return_value=results) as run_pike:
                outcomes = testrun.pike_driver_outcomes(ctx)
        runs = run_pike.call_args[0][0]
        self.assertEqual([("unpatched", "bug"), ("patched", "fixed")],
                         [(label, expect) for label, _tree, expect in runs])
        return outcomes

    def test_both_trees_counted(self):
        outcomes = self._step({
            "unpatched": (0, "Ran 5 tests in 12.5s\n\nOK\n"),
            "patched": (1, "Ran 5 tests in 12.5s\n\nFAILED (failures=2)\n")})
        self.assertEqual([(5, 0), (3, 2)], [(o.passed, o.failed) for o in outcomes])
        self.assertIn("unpatched", outcomes[0].name)
        self.assertIn("patched", outcomes[1].name)

    def test_a_run_that_crashed_is_a_failure(self):
        outcomes = self._step({"unpatched": (1, "ImportError: no nova\n"),
                               "patched": (0, "Ran 5 tests in 1s\n\nOK\n")})
        self.assertEqual(1, outcomes[0].failed)

    def test_a_run_without_tests_is_a_failure(self):
        # Python 2.7's unittest exits 0 when discovery finds nothing
        outcomes = self._step({"unpatched": (0, "Ran 0 tests in 0.000s\n\nOK\n"),
                               "patched": (0, "Ran 5 tests in 1s\n\nOK\n")})
        self.assertEqual([(0, 1), (5, 0)], [(o.passed, o.failed) for o in outcomes])

    def test_missing_python27_is_reported_not_run(self):
        skipped = Outcome("pike: python2.7 missing", skipped=1)
        with mock.patch.object(testrun.targets_mod, "get"), \
                mock.patch.object(testrun, "missing_interpreter", return_value=skipped), \
                mock.patch.object(testrun.driver_runs, "run_pike") as run_pike:
            self.assertEqual([skipped], testrun.pike_driver_outcomes(mock.Mock()))
        self.assertFalse(run_pike.called)


class PikeEnvironmentTest(unittest.TestCase):
    """What run_pike tells pike's tests: the names of run_env.PIKE, which
    test_pike_e2e.py (Python 2.7: it cannot import run_env) spells itself."""

    def test_run_pike_sets_what_pikes_tests_read(self):
        ironic = mock.MagicMock(url="http://127.0.0.1:2", image_url="u", image_md5="m")
        with tempfile.TemporaryDirectory() as tmp, \
                mock.patch.object(driver_runs.pike, "ensure_venv", return_value=tmp), \
                mock.patch.object(driver_runs.pike, "PikeIronic") as pike_ironic, \
                mock.patch.object(driver_runs.subprocess, "run") as run:
            pike_ironic.return_value.__enter__.return_value = ironic
            run.return_value.returncode = 0
            driver_runs.run_pike([("patched", tmp, "fixed")], {}, tmp, build=tmp, log_dir=tmp)
        env = run.call_args.kwargs["env"]
        self.assertEqual(set(run_env.PIKE), {k for k in env if k.startswith("REALIRONIC_")})
        read = re.findall(r"os\.environ\.get\('(REALIRONIC_\w+)'",
                          (driver_runs.PIKE_DRIVER_TESTS / "test_pike_e2e.py").read_text())
        self.assertEqual(set(run_env.PIKE), set(read))

    def test_pikes_tests_spell_the_expectations(self):
        text = (driver_runs.PIKE_DRIVER_TESTS / "test_pike_e2e.py").read_text()
        default = re.findall(r"os\.environ\.get\('REALIRONIC_EXPECT', '(\w+)'\)", text)
        compared = re.findall(r"_EXPECT == '(\w+)'", text)
        self.assertEqual([run_env.EXPECT_AUTO], default)
        self.assertEqual({run_env.EXPECT_AUTO, run_env.EXPECT_FIXED}, set(compared))


class NeedFixtureTest(unittest.TestCase):
    """driver_runs.run's environment: the caller's test environment, and
    need_fixture=True makes a tree without the series' fake Ironic fail
    the contract tests (REALIRONIC_NEED_FIXTURE=1)."""

    def env_of(self, test_env=None, **kw):
        with tempfile.TemporaryDirectory() as tmp:
            venv = pathlib.Path(tmp)
            (venv / "bin").mkdir()
            (venv / "bin" / "python").write_text("")
            with mock.patch.object(driver_runs.venv_setup, "ensure_venv", return_value=venv), \
                    mock.patch.object(driver_runs.subprocess, "run") as run:
                run.return_value.returncode = 0
                driver_runs.run(venv, test_env or {}, venv, build=venv, **kw)
        return run.call_args.kwargs["env"]

    def test_the_callers_test_env(self):
        # Nova's test environment comes from the caller (venvs.test_env),
        # not from the harness's own environment
        env = self.env_of(test_env={"OS_TEST_TIMEOUT": "160"})
        self.assertEqual("160", env["OS_TEST_TIMEOUT"])
        self.assertNotIn("HOME", env)
        self.assertEqual(str(util.PACKAGE_PARENT), env["PYTHONPATH"].split(os.pathsep)[1])

    def test_need_fixture(self):
        self.assertEqual("1", self.env_of(need_fixture=True)[run_env.NEED_FIXTURE])
        self.assertNotEqual("1", self.env_of().get(run_env.NEED_FIXTURE))


class RealIronicStepTest(unittest.TestCase):
    """CI runs the real-Ironic tests in targets.toml's default modes only
    (threading)."""

    def _step(self, output, rc=0, modes=("threading",)):
        """Run real_ironic_step with a driver_runs.run that writes
        ``output`` and returns ``rc``, for a master-all target in
        ``modes``; return the Outcomes and the driver_runs.run mock."""
        helpers.capture_log(self)
        with tempfile.TemporaryDirectory() as tmp:
            tmp = pathlib.Path(tmp)
            ctx = mock.Mock(build=tmp)
            ctx.results.return_value = tmp

            def run_tests(tree, test_env, nova_venv, log, **kw):
                log.write(output)
                return rc
            target = mock.Mock(modes=dict.fromkeys(modes))
            with mock.patch.object(cisteps.targets_mod, "default_stack_in_mode",
                                   return_value=target), \
                    mock.patch.object(cisteps.modes_mod, "default_modes",
                                      return_value=("threading",)), \
                    mock.patch.object(cisteps.tree_mod, "prepare", return_value=tmp), \
                    mock.patch.object(cisteps.venvs, "ensure_venv", return_value=(tmp, 0)), \
                    mock.patch.object(cisteps.targets_mod, "mode_target"), \
                    mock.patch.object(cisteps.venvs, "test_env"), \
                    mock.patch.object(cisteps.driver_runs, "run",
                                      side_effect=run_tests) as run, \
                    mock.patch.object(cisteps, "say"):
                return cisteps.real_ironic_step(ctx), run

    def test_a_run_without_tests_is_a_failure(self):
        # unittest exits 0 when discovery finds nothing (or a pattern
        # matches no test): no pass
        outcomes, _ = self._step("Ran 0 tests in 0.000s\n\nOK\n")
        self.assertEqual([(0, 1)], [(o.passed, o.failed) for o in outcomes])
        outcomes, _ = self._step("Ran 0 tests in 0.000s\n\nNO TESTS RAN\n", rc=5)
        self.assertEqual([(0, 1)], [(o.passed, o.failed) for o in outcomes])
        outcomes, _ = self._step("Ran 4 tests in 1s\n\nOK\n")
        self.assertEqual([(4, 0)], [(o.passed, o.failed) for o in outcomes])

    def test_a_run_whose_tests_all_skip_is_a_failure(self):
        # e.g. the contract tests' fake side skipping without the fake
        outcomes, _ = self._step("Ran 4 tests in 1s\n\nOK (skipped=4)\n")
        self.assertEqual([(0, 1, 4)], [(o.passed, o.failed, o.skipped) for o in outcomes])

    def test_the_contract_tests_require_the_fake(self):
        # without the series' fake Ironic the contract tests' fake side
        # must fail, not skip: ci asks driver_runs.run for REALIRONIC_NEED_FIXTURE
        _, run = self._step("Ran 3 tests in 1s\n\nOK\n")
        self.assertIs(True, run.call_args.kwargs.get("need_fixture"))

    def test_ci_modes_only(self):
        outcomes, run = self._step("Ran 3 tests in 1s\n\nOK\n",
                                   modes=("eventlet", "threading"))
        self.assertEqual(1, run.call_count)
        self.assertNotIn("pattern", run.call_args.kwargs)  # all of them
        self.assertEqual([(3, 0)], [(o.passed, o.failed) for o in outcomes])
        self.assertIn("[threading]", outcomes[0].name)


if __name__ == "__main__":
    unittest.main()
