"""Run the driver tests against a real Ironic, inside Nova's test venv.

``novaseries ironic driver-tests`` and the ``ci`` steps of the real Ironics
come here:

* :func:`run`: :data:`DRIVER_TESTS` (the contract tests, the end-to-end
  tests of Nova's ironic driver and the tests of the service itself) in a
  Nova tree's Python 3 test venv, against the Ironic of ``pins/ironic.txt``
  (:mod:`novaseries.ironic.service`, which the tests start themselves
  through ``service.shared()``);
* :func:`run_pike`: :data:`PIKE_DRIVER_TESTS` (stable/pike's driver end to
  end) in pike's Python 2.7 test venv, once per tree, against one
  pike-era Ironic (:mod:`novaseries.ironic.pike`) started here
  (:func:`novaseries.testrun.pike_driver_outcomes` prepares pike's trees
  and venv for it and counts its runs: ``driver-tests --pike`` and ci's
  step).

Each is one ``python -m unittest discover -s <folder> -t <folder>``: the
folder is the top-level directory of the run, so its modules import each
other by bare name.  See ``doc/real-ironic.rst``.
"""

import logging
import os
import pathlib
import subprocess
import time

from novaseries import util
from novaseries.ironic import pike, run_env, service, venv_setup
from novaseries.ironic.layout import PIKE_RESULTS, default_build, workdir

LOG = logging.getLogger(__name__)

#: The driver tests against the Ironic of ``pins/ironic.txt`` (Python 3, Nova's test venv).
DRIVER_TESTS = util.NOVA_SIDE / "driver_tests"
#: stable/pike's driver tests against the pike-era Ironic (Python 2.7, pike's venv).
PIKE_DRIVER_TESTS = util.NOVA_SIDE / "pike_driver_tests"


def run(tree, test_env, nova_venv, build=None, pattern=None, expect=None,
        log=None, root=None, need_fixture=False):
    """Install if needed, then run :data:`DRIVER_TESTS` in Nova's venv.

    :param tree: a Nova tree with the series applied (PYTHONPATH).
    :param test_env: Nova's test environment of the caller's target in
        its concurrency mode (:func:`novaseries.venvs.test_env`, e.g.
        ``OS_NOVA_DISABLE_EVENTLET_PATCHING`` ``True`` for native
        threads): the caller chooses target and mode, this module neither.
    :param nova_venv: Nova's test venv (the caller's target's).
    :param pattern: optional test id filter (``-k`` of unittest).
    :param expect: ``fixed`` or ``bug``: what spawn() must raise in the
        end-to-end tests (default: detected from the tree).
    :param log: optional open file for the test run's output (default:
        inherited stdout/stderr).
    :param root: the project checkout (``pins/``); default
        :func:`novaseries.util.project_root`.
    :param need_fixture: the tree must carry the series' fake Ironic: the
        contract tests' fake side fails instead of skipping without it
        (:data:`~novaseries.ironic.run_env.NEED_FIXTURE`; ci's step sets it).
    :returns: the test run's exit code.
    :raises RealIronicError: the Ironic venv could not be built, or there
        is no Nova test venv.
    """
    build = pathlib.Path(build or default_build())
    t0 = time.monotonic()
    python, env = nova_venv_env(tree, test_env, nova_venv, build, root)
    env.update({run_env.REQUIRED: "1", run_env.EXPECT: expect or env.get(
        run_env.EXPECT, run_env.EXPECT_AUTO)})
    if need_fixture:
        env[run_env.NEED_FIXTURE] = "1"
    tests = str(DRIVER_TESTS)
    cmd = [str(python), "-m", "unittest", "discover", "-v", "-s", tests, "-t", tests]
    if pattern:
        cmd += ["-k", pattern]
    LOG.info(f"realironic: {' '.join(cmd)}  (PYTHONPATH={env['PYTHONPATH']})")
    res = subprocess.run(cmd, cwd=str(tree), env=env, stdout=log,
                         stderr=subprocess.STDOUT if log else None)
    LOG.info(f"realironic: driver tests took {time.monotonic() - t0:.1f} s (rc {res.returncode})")
    return res.returncode


def nova_venv_env(tree, test_env, nova_venv, build=None, root=None):
    """Install the Ironic venv if needed; Nova's venv's python, and the
    environment of a run of :data:`DRIVER_TESTS`' code in it: ``test_env``
    with the Ironic venv and the build folder (:data:`~novaseries.ironic.run_env.VENV`,
    ``NOVASERIES_BUILD``) and ``PYTHONPATH`` the tree, then the harness's
    code (:func:`novaseries.util.nova_side_pythonpath`).

    :param tree: the Nova tree.
    :param test_env: Nova's test environment (:func:`run`'s).
    :param nova_venv: Nova's test venv.
    :returns: ``(python path, env dict)``.
    :raises RealIronicError: the Ironic venv could not be built, or there
        is no Nova test venv.
    """
    build = pathlib.Path(build or default_build())
    venv = venv_setup.ensure_venv(build, root)
    nova_venv = pathlib.Path(os.path.abspath(nova_venv))
    python = nova_venv / "bin" / "python"
    if not python.exists():
        raise service.RealIronicError(f"no Nova test venv at {nova_venv}")
    env = dict(test_env)
    env.update({
        "PYTHONPATH": util.nova_side_pythonpath(tree),
        run_env.VENV: str(venv), util.BUILD_ENV: str(build),
    })
    return python, env


def run_logged(cmd, tree, env, log_path, what):
    """Run ``cmd`` in ``tree`` with ``env``, its output to ``log_path``;
    say ``what`` it runs and how it ended.  :returns: its exit status."""
    LOG.info(f"{what}: {' '.join(cmd)}")
    t0 = time.monotonic()
    with open(log_path, "w") as log:
        rc = subprocess.run(cmd, cwd=str(tree), env=env, stdout=log,
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL).returncode
    LOG.info(f"{what}: rc {rc} in {time.monotonic() - t0:.0f} s (log: {log_path})")
    return rc


def run_pike(runs, test_env, nova_venv, build=None, log_dir=None, root=None):
    """Start one PikeIronic; run :data:`PIKE_DRIVER_TESTS` once per tree.

    :param runs: ``[(label, tree, expect)]``: a pike Nova tree and what the
        tests must see there (``fixed`` or ``bug``).
    :param test_env: Nova's test environment of pike's target
        (:func:`novaseries.venvs.test_env`); ``PYTHONPATH`` is set here,
        the tree of each run.
    :param nova_venv: pike's Nova test venv (Python 2.7).
    :param log_dir: where ``<label>.log`` (each run's output) goes
        (default ``build/results/``:data:`~novaseries.ironic.layout.PIKE_RESULTS`).
    :param root: the project checkout (``pins/``); default
        :func:`novaseries.util.project_root`.
    :returns: ``[(label, returncode, log path)]``.
    :raises RealIronicError: the Ironic venv, RabbitMQ or Ironic itself
        could not be set up or started.
    """
    build = pathlib.Path(build or default_build())
    log_dir = pathlib.Path(log_dir or util.results_dir(build, PIKE_RESULTS))
    log_dir.mkdir(parents=True, exist_ok=True)
    venv = pike.ensure_venv(build, root)
    python = pathlib.Path(nova_venv) / "bin" / "python"
    tests = str(PIKE_DRIVER_TESTS)
    results = []
    with pike.PikeIronic(venv, workdir(build)) as ironic:
        for label, tree, expect in runs:
            env = dict(test_env)
            env.update({
                "PYTHONPATH": str(tree), run_env.REQUIRED: "1",
                run_env.EXPECT: expect, run_env.URL: ironic.url,
                run_env.IMAGE_URL: ironic.image_url,
                run_env.IMAGE_MD5: ironic.image_md5,
                run_env.IRONIC_VERSION: pike.IRONIC_VERSION})
            cmd = [str(python), "-m", "unittest", "discover", "-v", "-s", tests, "-t", tests]
            log_path = log_dir / f"{label}.log"
            rc = run_logged(cmd, tree, env, log_path,
                            f"pikeironic: {label} tree {tree} (expect {expect})")
            results.append((label, rc, log_path))
    return results
