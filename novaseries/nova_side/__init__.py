"""Code that runs inside a venv of Nova's, never in the harness's own
Python: the only part of ``novaseries`` that imports Nova or its libraries.

* ``player/``: the scenario player, ``python -m
  novaseries.nova_side.player.play`` in a Nova tree with Nova's test venv
  (``novaseries run``, :mod:`novaseries.mainjob.trees`; its modules: its
  ``__init__``);
* ``driver_tests/``: the contract and end-to-end tests of Nova's ironic
  driver against a real Ironic (pins/ironic.txt), run by path in Nova's test venv
  (``novaseries ironic driver-tests``, :mod:`novaseries.ironic.driver_runs`);
* ``pike_driver_tests/``: stable/pike's, Python 2.7 code, run by path in
  pike's venv (``driver-tests --pike``);
* ``subunit_status.py``: run as a script by the Nova venv's Python, 2.7 or
  3 (:mod:`novaseries.stestr_run`);
* ``pep8probe.py``: ``python -m novaseries.nova_side.pep8probe`` in a pep8
  tool venv (:mod:`novaseries.pep8job`).

The boundary, held by ``tests/test_boundary.py``: no module outside this
package imports Nova, its libraries or this package; the modules here
import, of the harness, only :data:`HARNESS_MODULES` (standard library
only, and importing nothing else of the harness); :data:`PYTHON27` is
Python 2.7 code that imports nothing of the harness.
"""

#: The harness modules the code here may import (each standard library
#: only, importing only modules of this list).
HARNESS_MODULES = (
    'novaseries.scenarios.scenario_table',
    'novaseries.scenarios.scenario',
    'novaseries.scenarios.checks',
    'novaseries.scenarios.invariant',
    'novaseries.scenarios.outage_checks',
    'novaseries.scenarios.bounds',
    'novaseries.scenarios.texts',
    'novaseries.scenarios.bench_table',
    'novaseries.scenarios.explore_space',
    'novaseries.scenarios.universal',
    'novaseries.ironic.api_proxy',
    'novaseries.ironic.real_backend',
    'novaseries.ironic.real_deploy',
    'novaseries.ironic.real_operator',
    'novaseries.ironic.request_log',
    'novaseries.ironic.rest',
    'novaseries.ironic.run_env',
    'novaseries.ironic.service',
    'novaseries.ironic.layout',
    'novaseries.procs',
    'novaseries.util',
)

#: Run by Python 2.7 (pike's venv), relative to this folder.
PYTHON27 = ('pike_driver_tests', 'subunit_status.py')
