"""``novaseries ironic hang-probe``: what a Bare Metal API that accepts a
connection and never answers does to a read of Nova's ironic driver, with
``[ironic] timeout`` set and unset (what to set: ``doc/operators.rst``).

Runs ``nova_side/driver_tests/hang_probe.py`` as a script in Nova's test venv (the
environment of :func:`novaseries.ironic.driver_runs.nova_venv_env`): it
starts its own Ironic (``pins/ironic.txt``) and the harness's API proxy in ``'hang'``
mode, and prints what it measured (``hang-probe: ...`` lines).  See
``doc/real-ironic.rst``.
"""

import logging
import subprocess
import time

from novaseries.ironic import driver_runs

LOG = logging.getLogger(__name__)

#: The probe, run as a script inside Nova's venv (it takes each of the
#: options below; their defaults are these).
PROBE = driver_runs.DRIVER_TESTS / "hang_probe.py"

#: ``[ironic] timeout`` of the timed cases (s).
TIMEOUT = 10.0
#: ``[ironic] connect_retries`` and ``status_code_retries`` of the second
#: timed case (0: no second case).
RETRIES = 1
#: Seconds the read without ``[ironic] timeout`` must stay hung (0: that
#: case is not run).
UNSET_FOR = 0.0


def run(tree, test_env, nova_venv, timeout=TIMEOUT, retries=RETRIES, unset_for=UNSET_FOR,
        build=None, root=None):
    """Run the probe; returns its exit status (0: each case as expected).

    :param tree: a Nova tree (PYTHONPATH; the series' ``_api_unreachable()``
        is reported when it has it).
    :param test_env: Nova's test environment of the caller's target in
        its concurrency mode (:func:`novaseries.venvs.test_env`).
    :param nova_venv: Nova's test venv.
    :param timeout: ``[ironic] timeout`` of the timed cases (s, > 0).
    :param retries: ``[ironic] connect_retries`` and ``status_code_retries``
        of the second timed case (0: no second case).
    :param unset_for: seconds the read without ``[ironic] timeout`` must
        stay hung (0: that case is not run).
    :raises RealIronicError: the Ironic venv could not be built, or there
        is no Nova test venv.
    """
    python, env = driver_runs.nova_venv_env(tree, test_env, nova_venv, build, root)
    cmd = [str(python), str(PROBE), "--timeout", str(timeout), "--retries", str(retries),
           "--unset-for", str(unset_for)]
    LOG.info(f"hang-probe: {' '.join(cmd)}  (PYTHONPATH={env['PYTHONPATH']})")
    t0 = time.monotonic()
    res = subprocess.run(cmd, cwd=str(tree), env=env, stdin=subprocess.DEVNULL)
    LOG.info(f"hang-probe: took {time.monotonic() - t0:.1f} s (rc {res.returncode})")
    return res.returncode
