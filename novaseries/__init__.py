"""novaseries: materialise, test and export a patch series against pinned Nova.

The package is a thin layer over the real tools: ``pip`` downloads the Nova
sdist, ``git`` applies and exports the patches, ``stestr`` and ``flake8`` run
Nova's own tests and style checks inside a per-target virtualenv.  Targets
are data (``targets/targets.toml``), not code.  See ``doc/harness.rst``.
"""

__version__ = "0.1.0"
