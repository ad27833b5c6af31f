"""Every piece of the harness about Ironic: the real Ironics of the tests.

* :mod:`~novaseries.ironic.service`: a real Ironic 39.0.0 on 127.0.0.1
  (:class:`~novaseries.ironic.service.RealIronic`, ``shared()``,
  ``sweep()``, ``RealIronicError``, its venv);
* :mod:`~novaseries.ironic.pike`: the pike-era Ironic 9.1.7 (Python 2.7,
  RabbitMQ) and its fake Neutron, for stable/pike;
* :mod:`~novaseries.ironic.venv`: where their files live and how their
  pinned venvs are built (the lowest module here);
* :mod:`~novaseries.ironic.rest`: the operator's REST client;
* :mod:`~novaseries.ironic.selftest`: runs the driver tests below in Nova's
  test venv (``novaseries ironic selftest``);
* ``driver_tests/`` and ``pike_driver_tests/``: not harness tests but code
  that runs INSIDE Nova's test venv (Python 3, and pike's Python 2.7): the
  contract and end-to-end tests of Nova's ironic driver against a real
  Ironic.

Imports point down: selftest -> pike -> service -> venv; rest -> service.
Everything here is standard library only, so that Nova's venv can import
it too.  See ``doc/real-ironic.rst``.
"""
