"""flake8 on the Python files a series (or one commit) touches, in the
target's venv: the flake8 of the release's pep8 job
(:mod:`novaseries.pep8job` runs the rest).
"""

import pathlib

from novaseries.outcomes import Outcome
from novaseries.tree import changed_files
from novaseries.util import run, say
from novaseries.venvs import test_env


def run_flake8(venv, target, tree, rev, label, touched=None):
    """``flake8 <python files touched by base..rev>`` from the tree root;
    ``touched``: the files to check instead (check-commits passes a
    commit's own files for the commits before the last: the files the
    earlier commits touched were checked at those commits, and the last
    commit checks every file of the series).  Hacking's checks cost a few
    CPU seconds per large module (the compute manager, its tests)."""
    files = [f for f in (changed_files(tree, rev) if touched is None else touched)
             if f and f.endswith(".py") and pathlib.Path(tree, f).is_file()]
    if not files:
        return Outcome(f"{label} flake8", passed=1, note="no Python files touched")
    proc = run([venv / "bin" / "flake8", *files], cwd=tree, env=test_env(target, venv, tree),
               check=False)
    name = f"{label} flake8 ({len(files)} files)"
    if proc.returncode:
        say("\n".join("    " + line for line in (proc.stdout + proc.stderr).splitlines()[:40]))
        return Outcome(name, failed=1)
    return Outcome(name, passed=1)
