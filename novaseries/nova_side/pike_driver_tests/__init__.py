"""stable/pike's end-to-end tests of Nova's ironic driver against the
pike-era Ironic (``pins/ironic-pike.txt``); run under Python 2.7 inside pike's Nova test venv by
``novaseries ironic driver-tests --pike`` (:func:`novaseries.ironic.driver_runs.run_pike`),
never by the harness's own tests.

The run is ``python -m unittest discover -s <this folder> -t <this
folder>`` with only the pike tree on ``PYTHONPATH``: the tests import
nothing of the harness (the Ironic's URLs come in ``REALIRONIC_*``
variables), and this folder is the top-level directory of the run.  It is a
separate folder, not a sub-package of ``driver_tests``, so that the Python 3
run of ``driver_tests`` never collects it.  Keep it Python 2.7 code.  (It is
a package only so that the harness's wheel ships it.)

See ``doc/real-ironic.rst``.
"""
