"""The checks of each Nova release's pep8 job that need no network.

Nova's ``tox -e pep8`` runs pre-commit's hooks (and, from 33.x on,
mypy); pre-commit cannot clone its hook repositories here, so the harness
runs the same tools itself, on the files a commit or the series touches.
What is checked, with which tools and why: ``doc/harness.rst``, *The pep8
job*.

The modules, from the top down: this one (:func:`run`, a commit's or
the series' checks), ``hooks`` (the planned hooks on the files),
``legacy`` (pike's JSON checks), ``mypy_run`` (the mypy step), ``plan``
(the declared hook repositories, and a config's hooks against them),
``tools`` (the tool venvs, the config and tox.ini as read, a tool's run).
"""

import os
import pathlib
import time

from novaseries.outcomes import Outcome
from novaseries.pep8job import hooks, legacy, tools
from novaseries.tree import BASE_TAG, changed_files
from novaseries.util import HarnessError, say


def touched_files(tree, rev, touched):
    """The files to check: ``touched`` (a commit's own) or those the
    series adds or modifies up to ``rev``; only those that exist there."""
    files = changed_files(tree, rev) if touched is None else touched
    return [f for f in files if f and os.path.lexists(os.path.join(tree, f))]


def added_files(tree, rev, touched):
    """The files the commit (``touched`` given) or the series adds."""
    return set(changed_files(tree, rev, since=f"{rev}~1" if touched is not None else BASE_TAG,
                             diff_filter="A"))


def run(ctx, target, tree, venv, rev="HEAD", label=None, touched=None):
    """The pep8 job's checks on the files touched by ``base..rev`` (or
    ``touched``: a commit's own), for ``testrun.test_tree``: the hooks of
    the tree's ``.pre-commit-config.yaml`` (:func:`.hooks.run_hooks`), or
    pike's JSON checks (:func:`.legacy.run_legacy`; its flake8 is
    ``flake8_run.run_flake8``).
    ``venv``: the target's own venv.  Returns a list of Outcomes; a
    failure to set up (a venv that does not install, a config that cannot
    be read) is a failed Outcome, not an exception."""
    label = label or f"{target.name}@{rev}"
    start = time.monotonic()
    try:
        files = touched_files(tree, rev, touched)
        if pathlib.Path(tree, tools.CONFIG).is_file():
            outcomes = hooks.run_hooks(ctx, target, tree, files, label,
                                       added=lambda: added_files(tree, rev, touched))
        else:
            outcomes = legacy.run_legacy(tree, venv, files, label)
    except HarnessError as exc:
        say(f"  [{label}] pep8 job: {exc}\n{exc.details}".rstrip())
        outcomes = [Outcome(f"{label} pep8 job", failed=1, note=str(exc))]
    say(f"[{label}] pep8 job checks: {time.monotonic() - start:.1f} s")
    return outcomes
