"""Every piece of the harness about a real Ironic.

* :mod:`~novaseries.ironic.service`: the Ironic of ``pins/ironic.txt`` on 127.0.0.1
  (:class:`~novaseries.ironic.service.RealIronic`, ``shared()``,
  ``sweep()``, ``RealIronicError``, where its venv is);
* :mod:`~novaseries.ironic.pike`: the pike-era Ironic (Python 2.7,
  RabbitMQ) and its fake Neutron, for stable/pike;
* :mod:`~novaseries.ironic.layout`: where their files live and which
  release their pins give (the lowest module here but
  :mod:`~novaseries.ironic.run_env`, the names of the environment
  variables the driver tests are run with, which imports nothing);
  :mod:`~novaseries.ironic.venv_setup`: builds their pinned venvs (in the
  harness's Python only);
* :mod:`~novaseries.ironic.rest`: the operator's REST client;
* :mod:`~novaseries.ironic.request_log`, :mod:`~novaseries.ironic.real_deploy`,
  :mod:`~novaseries.ironic.real_operator`,
  :mod:`~novaseries.ironic.real_backend`: the real Ironic behind the main
  job's scenarios (``run --ironic real``), its request recording, how
  its nodes deploy and the operator's controls;
  :mod:`~novaseries.ironic.api_proxy`: the
  switchable proxy in front of its API (outage scenarios, hang-probe);
* :mod:`~novaseries.ironic.driver_runs`: runs the driver tests
  (``novaseries/nova_side/driver_tests``) in Nova's test venv
  (``novaseries ironic driver-tests``); :mod:`~novaseries.ironic.hang_probe_run`:
  ``novaseries ironic hang-probe``.

Imports point down (their order: ``ORDER`` of tests/test_ironic_layout.py,
which checks it and the next rule); of the rest of the harness, only
:mod:`novaseries.procs`, :mod:`novaseries.util`,
:mod:`novaseries.scenarios.scenario` and, in the modules that Nova's venv
does not import (``venv_setup``, ``pike``, ...), :mod:`novaseries.venv_build`
(the targets, trees and venvs the driver tests run in are given by the callers:
:mod:`novaseries.commands.ironic`, :mod:`novaseries.cisteps`,
:func:`novaseries.testrun.pike_driver_outcomes`).  Everything here is
standard library only: the code in Nova's venv
(:mod:`novaseries.nova_side`) imports some of it
(``nova_side.HARNESS_MODULES``).  See ``doc/real-ironic.rst``.
"""
