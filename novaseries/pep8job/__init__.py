"""The checks of each Nova release's pep8 job that need no network.

Nova's ``tox -e pep8`` runs ``pre-commit run --all-files`` (the hooks its
``.pre-commit-config.yaml`` lists, each at the revision it pins) and, from
33.x on, ``mypy`` (``[testenv:mypy]``: 31.x and 32.x run mypy as one of
the hooks); pike's runs flake8 and two checks of the JSON files under
``doc/``.  pre-commit clones each hook's repository, which this machine
cannot do (only PyPI is reachable), so the harness runs the same tools
itself (:func:`run`, at every commit ``check-commits`` tests and at HEAD,
on the files the commit or the series touches):

* the config is the tree's own, read when the check runs (in the tool
  venv, which has PyYAML: :mod:`novaseries.nova_side.pep8probe`), as are each
  hook's ``args``, ``files``, ``exclude`` and ``types`` filters; what each
  hook runs (its repository's ``.pre-commit-hooks.yaml``: entry, default
  args and filters) is declared per repository and revision
  (:data:`.plan.REPOS`), with the PyPI package that holds it.  A
  repository, revision, hook or config key not declared there, a tool
  pins file that does not pin the package at the hook's revision, or a
  pep8 or mypy tox command that is not the one the harness runs, fails
  the check with what differs (:func:`.plan.plan`): the checks cannot
  drift from the tree's config unseen;
* the tools come from PyPI at the revisions the config pins, in one venv
  per release, ``build/venvs/pep8-<release>`` (``pins/pep8-<release>.txt``,
  with the release's mypy), and hacking (flake8) in one per hacking
  version, ``build/venvs/hacking-<version>`` (``pins/hacking-<version>.txt``;
  in pre-commit each hook has an environment of its own, and hacking pins
  flake8 and pycodestyle lower than autopep8 gets).  Where the target's
  own venv has the same hacking, flake8, pycodestyle, pyflakes and mccabe
  (nova 34.0.0), the hacking hook is the flake8 run beside this one
  (``flake8_run.run_flake8``) and does not run twice;
* a hook that fixes files (trailing-whitespace, mixed-line-ending,
  fix-byte-order-marker, autopep8) runs on a scratch copy of the files
  (with the tree's root config files, where autopep8 reads its
  ``[tool.autopep8]`` and ``[flake8]`` settings): any change it makes is a
  failure, shown line by line and as a diff, as in the job, where a
  changed file fails the hook; the tree is never written;
* ``remove-tabs`` (Lucas-C/pre-commit-hooks, not on PyPI: its package name
  is pre-commit-hooks', which PyPI holds) is checked by the harness
  (:func:`.hooks.tabs`): a tab in a text file it selects fails;
* ``check-added-large-files`` checks the files the commit (or the series)
  adds, as when they were committed (``--enforce-all``: the job's
  ``--all-files`` run stages nothing and so checks nothing);
  ``check-merge-conflict`` runs as in the job, where it checks nothing
  outside a merge;
* mypy runs once per release on its ``-all`` tree (:func:`.mypy_run.run_mypy`,
  a ci step), the command of ``[testenv:mypy]`` (33.x, 34.0.0) or the hook's
  (31.x, 32.x: the hook's default args on the tracked files its ``files``
  selects);
* pike (no pre-commit): its ``tox -e pep8`` is flake8 (``flake8_run.run_flake8``,
  with pike's hacking, in its Python 2.7 venv) and the JSON checks of
  ``doc/`` (no carriage return; ``python -m json.tool`` reads it), on the
  touched JSON files under ``doc/`` (:func:`.legacy.run_legacy`).

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
from novaseries.tree import changed_files
from novaseries.util import HarnessError, say


def touched_files(tree, rev, touched):
    """The files to check: ``touched`` (a commit's own) or those the
    series adds or modifies up to ``rev``; only those that exist there."""
    files = changed_files(tree, rev) if touched is None else touched
    return [f for f in files if f and os.path.lexists(os.path.join(tree, f))]


def added_files(tree, rev, touched):
    """The files the commit (``touched`` given) or the series adds."""
    return set(changed_files(tree, rev, since=f"{rev}~1" if touched is not None else "base",
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
