"""One target (:class:`Target`): a Nova release the series is applied to,
its patches folders and the modes its tests run in; and the patch files a
folder's quilt-style ``series`` lists.

A target may stack its series on (part of) another folder's series
(``below``/``below_upto``): a separate change that needs, say, the test
fixture commits of the main series.  Its tree holds both; only its own
patches are exported.  :func:`novaseries.targets.load` makes the targets
of targets.toml.
"""

import dataclasses
import pathlib

from novaseries.modes import Mode
from novaseries.util import HarnessError


@dataclasses.dataclass
class Target:
    """One Nova release the series is applied to and tested on."""

    name: str
    version: str
    sha256: str
    interpreter: str
    venv_tool: str
    pins: pathlib.Path
    patches: pathlib.Path
    unit: list
    check_commits: bool
    enabled: bool
    pip_args: list = dataclasses.field(default_factory=list)
    env: dict = dataclasses.field(default_factory=dict)
    note: str = ""
    #: True: a missing interpreter skips the target in ``ci`` (with a
    #: message), except under CI=true, where it is a failure.
    optional_interpreter: bool = False
    #: Patches folders whose series are applied, in order, before this
    #: target's own series (the first one up to ``below_upto``; None: all
    #: of it); () for a target stacked on nothing.
    below: tuple = ()
    below_upto: str = None
    #: The Nova release the target belongs to (``master``, ``2026.1``,
    #: ``pike``): targets.toml's ``release``; for a target written by hand,
    #: its ``venv`` (the release whose venv it shares) or its own name.
    #: The key of ``[gerrit_branches]``; it names the venv (:attr:`venv_base`).
    release: str = ""
    #: False: a combination only tested, never exported (its patches belong
    #: to the targets of the folders it stacks).
    exportable: bool = True
    #: ``{unit selection: [path prefix, ...]}``: a selection listed here
    #: runs at a commit before the last only when the commit touches one
    #: of its paths; at HEAD (and the last commit) every selection runs
    #: (:func:`novaseries.selecting.unit_filters`).
    unit_paths: dict = dataclasses.field(default_factory=dict)
    #: The concurrency modes the target's tests run in, in order
    #: (``{name: Mode}``); see :meth:`in_mode`.
    modes: dict = dataclasses.field(default_factory=dict)
    #: check-commits: the modes of the commits before the last (the last
    #: one runs in every mode); empty: every mode.
    commit_modes: list = dataclasses.field(default_factory=list)
    #: The mode this Target is in (set by :meth:`in_mode`), or None.
    mode: Mode = None
    #: Functional selections (stestr filters: a module or class under
    #: ``nova.tests.functional``) beyond the functional modules the series
    #: touches, for coverage of the Nova code it changes: run at HEAD
    #: (``test``) and at check-commits' last commit only, in the mode's
    #: functional suite, in the same stestr run as the touched modules
    #: (:func:`novaseries.testrun.test_tree`); each counted on its own, one
    #: that selects no test fails.
    functional: list = dataclasses.field(default_factory=list)
    #: The change of ``[changes]`` whose folder is the target's own
    #: (``change = ...``), or "" (a target written with ``patches``).
    change: str = ""
    #: True: the target's tree is its release's packaged stack (``stack =
    #: true``: every packaged change of ``[changes]``, whole, in order).
    stack: bool = False

    @property
    def venv_base(self):
        """The base name of the venv the targets of the release share: the
        release (the target's own name when it has none)."""
        return self.release or self.name

    @property
    def venv_name(self):
        """The venv's name, ``build/venvs/NAME``: :attr:`venv_base`, with
        the interpreter's version after a dash when a mode has an
        interpreter of its own (``master-py3.13``)."""
        name = self.venv_base
        if self.mode is not None and self.mode.interpreter:
            name += "-py" + self.mode.interpreter.removeprefix("python")
        return name

    @property
    def mode_name(self):
        """The mode's name, or "" for a target not put in a mode."""
        return self.mode.name if self.mode else ""

    def ci_target(self):
        """This target with only the modes ``ci`` runs (``ci = false``
        leaves one out), each with the suites ``ci`` runs in it
        (``ci_suites``).

        :raises HarnessError: ``ci`` runs none of its modes.
        """
        self._ci_mode_names()  # (refuses a target ci runs in no mode)
        if all(mode.ci and mode.ci_suites is None for mode in self.modes.values()):
            return self
        return dataclasses.replace(self, modes={
            n: m if m.ci_suites is None else dataclasses.replace(m, suites=m.ci_suites)
            for n, m in self.modes.items() if m.ci})

    def ci_commit_target(self):
        """This target as ``ci``'s check-commits runs the commits before the
        last: the modes of ``commit_modes`` (every mode when it names none)
        that ``ci`` runs (``ci = false`` leaves one out; when that leaves
        none, every mode ``ci`` runs), each with its own ``suites``.  A
        mode's ``ci_suites`` restrict the last commit only (what it leaves
        out there runs at HEAD of a target that combines the changes); a
        commit before the last runs the tests of what it touches, which no
        other target runs at that commit.  A target without modes is
        returned as it is.

        :raises HarnessError: ``ci`` runs none of its modes.
        """
        if not self.modes:
            return self
        commit = self.commit_target()
        return self.only_modes([n for n, m in commit.modes.items() if m.ci] or
                               self._ci_mode_names())

    def commit_target(self):
        """This target as check-commits runs the commits before the last:
        the modes of ``commit_modes`` it still runs (``--mode`` may have
        left some out), every mode it runs when none of them is left.
        (:func:`novaseries.targets.load` refuses a ``commit_modes`` name that is not one of
        the target's modes.)
        """
        return self.only_modes([n for n in self.commit_modes if n in self.modes])

    def _ci_mode_names(self):
        """The names of the modes ``ci`` runs, in order ([] for a target
        without modes).

        :raises HarnessError: the target has modes and ``ci = false`` on
            every one.
        """
        names = [n for n, m in self.modes.items() if m.ci]
        if self.modes and not names:
            raise HarnessError(f"target {self.name}: ci runs none of its modes "
                               f"({', '.join(self.modes)}: ci = false)")
        return names

    def only_modes(self, names):
        """This target with only the modes ``names`` (all when empty).

        :raises HarnessError: a name is not one of the target's modes.
        """
        if not names:
            return self
        unknown = [n for n in names if n not in self.modes]
        if unknown:
            raise HarnessError(f"target {self.name} does not run in mode "
                               f"{', '.join(unknown)} (its modes: "
                               f"{', '.join(self.modes) or 'none'})")
        return dataclasses.replace(self, modes={n: self.modes[n] for n in names})

    def in_mode(self, name, interpreter=True):
        """This target as its tests run in mode ``name``: the mode's
        environment over the target's and, unless ``interpreter`` is
        false, the mode's interpreter (if it has one) and so its venv.

        :raises HarnessError: the target does not run in that mode.
        """
        if name not in self.modes:
            raise HarnessError(f"target {self.name} does not run in mode {name!r} "
                               f"(its modes: {', '.join(self.modes) or 'none'})")
        mode = self.modes[name]
        if not interpreter:
            mode = dataclasses.replace(mode, interpreter=None)
        return dataclasses.replace(self, mode=mode, env={**self.env, **mode.env},
                                   interpreter=mode.interpreter or self.interpreter,
                                   unit=list(mode.unit) if mode.unit is not None
                                   else self.unit,
                                   functional=list(mode.functional)
                                   if mode.functional is not None else self.functional)

    @property
    def sdist_name(self):
        """File name of the sdist on PyPI."""
        return f"nova-{self.version}.tar.gz"

    def series(self):
        """Patch files to apply, in order: ``below_series()`` + ``own_series()``."""
        return self.below_series() + self.own_series()

    def below_series(self):
        """The patches of ``below`` (up to ``below_upto``) this target stacks
        on; [] for a target without ``below``."""
        patches = []
        for i, folder in enumerate(self.below):
            series = read_series(self.name, folder)
            if i == 0 and self.below_upto is not None:
                series = _upto(series, self.below_upto, f"{self.name}'s below_upto")
            patches += series
        return patches

    def below_names(self):
        """The ``below`` folders, for messages: ``folder, folder``."""
        return ", ".join(str(folder) for folder in self.below)

    def own_series(self):
        """Patch files of the target's own folder, in order (list of Paths).

        Raises HarnessError if the folder or its ``series`` file is missing or
        names a file that does not exist.  An empty series is allowed (and
        returns []); callers that need patches say so themselves.
        """
        return read_series(self.name, self.patches)

    def series_status(self):
        """``(patches, problem)``: the series, or [] and a one-line reason."""
        try:
            own = self.own_series()
            patches = self.below_series() + own
        except HarnessError as exc:
            return [], str(exc)
        if not own:
            return [], f"target {self.name}: {self.patches / 'series'} lists no patches"
        return patches, ""

    def select(self, upto):
        """The series up to and including the patch named ``upto``.

        ``upto`` is a file name, its number prefix (``0003``) or a unique
        substring of a file name (of the target's own patches).  None means
        the whole series.
        """
        if upto is None:
            return self.series()
        return self.below_series() + _upto(self.own_series(), upto, "--upto")


def _upto(patches, upto, what):
    """``patches`` up to and including the one ``upto`` names."""
    names = [p.name for p in patches]
    matches = [i for i, n in enumerate(names)
               if n == upto or n.split("-", 1)[0] == upto.zfill(4)]
    if not matches:
        matches = [i for i, n in enumerate(names) if upto.lower() in n.lower()]
    if len(matches) != 1:
        what_matches = "no patch" if not matches else f"{len(matches)} patches"
        raise HarnessError(f"{what} {upto!r}: {what_matches} of the series match "
                           f"(series: {', '.join(names) or 'empty'})")
    return patches[:matches[0] + 1]


def series_names(text):
    """The patch file names a ``series`` file's ``text`` lists, in order
    (a ``#`` starts a comment; a name is a line's first word)."""
    lines = (line.split("#", 1)[0].strip() for line in text.splitlines())
    return [line.split()[0] for line in lines if line]


def read_series(name, folder):
    """The patch files a folder's ``series`` lists, in order (for target
    ``name``'s messages); HarnessError if something is missing."""
    series_file = folder / "series"
    if not folder.is_dir():
        raise HarnessError(f"target {name}: patches folder {folder} is missing")
    if not series_file.is_file():
        raise HarnessError(f"target {name}: {series_file} is missing "
                           "(one patch file name per line)")
    patches = []
    for listed in series_names(series_file.read_text()):
        path = folder / listed
        if not path.is_file():
            raise HarnessError(f"target {name}: {series_file} names {listed}, "
                               "which does not exist")
        patches.append(path)
    return patches
