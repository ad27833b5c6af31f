"""The contract and end-to-end tests of Nova's ironic driver against a real
Ironic (the release of ``pins/ironic.txt``); run inside Nova's test venv by ``novaseries ironic
driver-tests`` (:func:`novaseries.ironic.driver_runs.run`), never by the
harness's own tests.

They need a Nova tree with the series on ``PYTHONPATH`` (and the project
root, for :mod:`novaseries.ironic.service`, which they start through
``service.shared()``), Nova's test venv and the Ironic venv.  The run is
``python -m unittest discover -s <this folder> -t <this folder>``: this
folder is its top-level directory, so the modules here import each other by
bare name (``import _guard``, ``import contract_backends``, ``import contract_scenarios``) and
are never imported as ``novaseries.nova_side.driver_tests.*``.  (It is a
package only so that the harness's wheel ships it.)

* ``test_contract.py``: the fake Ironic of the series against the real one,
  scenario by scenario (``contract_scenarios.py``, ``contract_backends.py``);
* ``test_e2e.py``: Nova's ``IronicDriver`` end to end against the real one
  (the series' fix); ``test_e2e_nodeleak.py``: the node-leak change; what
  they share is in ``e2e.py`` (not a test module);
* ``test_ironic_service.py``: :mod:`novaseries.ironic.service` itself (errors,
  clean stop, no leftovers);
* ``hang_probe.py``: not a test: the probe ``novaseries ironic hang-probe``
  runs (a driver read behind a proxy that never answers);
* ``_guard.py``: skips instead of import errors outside ``driver-tests``.

See ``doc/real-ironic.rst``.
"""
