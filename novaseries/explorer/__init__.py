"""The explorer (``novaseries explore``): cases generated from a seed
(``generate``, Hypothesis strategies over ``scenarios/explore_space.py``),
played through Nova's whole stack with the fake Ironic by the scenario
player in ``--serve`` mode (``player``), judged by the rules every case
must keep (``scenarios/universal.py``), failures shrunk and printed so
that they replay (``search``).  Harness side: Hypothesis is the
``explore`` extra of pyproject.toml, not a package of Nova's venv.
"""
