"""Targets are data: ``targets/targets.toml`` describes each Nova release.

A :class:`Target` carries everything the commands need; the series itself is
read from the target's patches folder (quilt-style ``series`` file).  A
target may stack its series on (part of) another folder's series
(``below``/``below_upto``): a separate change that needs, say, the test
fixture commits of the main series.  Its tree holds both; only its own
patches are exported.
"""

import dataclasses
import pathlib
import re
import tomllib

from novaseries.requires import not_stacked_on
from novaseries.util import HarnessError

TARGETS_FILE = pathlib.Path("targets") / "targets.toml"

#: The suites a mode can run: Nova's unit selections and the functional
#: test modules the series touches (with the target's ``functional``
#: selections at HEAD).
SUITES = ("unit", "functional")

#: A ``functional`` selection of targets.toml: a dotted name under
#: ``nova.tests.functional`` (a package, module or test class).
FUNCTIONAL_SELECTION = re.compile(r"nova\.tests\.functional(\.[A-Za-z_][A-Za-z0-9_]*)+")


@dataclasses.dataclass(frozen=True)
class Mode:
    """One of Nova's concurrency modes a target's tests run in.

    Nova 34.0.0 runs nova-compute and nova-conductor with native threads by
    default and keeps eventlet as the other mode; ``nova/monkey_patch.py``
    reads ``OS_NOVA_DISABLE_EVENTLET_PATCHING`` (Nova's tox envs set it:
    ``False`` for ``py3``/``functional``, ``True`` for the ``*-threading``
    envs).

    ``env``: what the mode sets on top of the target's environment;
    ``interpreter``: the mode's own interpreter (None: the target's), as
    upstream's jobs use one (``functional-py313-threading``);
    ``suites``: which of :data:`SUITES` run in this mode (a release whose
    tox.ini has only a unit threading env runs only ``unit`` threaded);
    ``unit_exclude``/``functional_exclude``: the exclude list file in the
    Nova tree that Nova's tox env passes to ``stestr --exclude-list``
    (comment lines dropped, as ``tools/generate-exclude.sh`` does), or "";
    ``ci``: False for a mode that ``ci`` leaves out (for CI's time; the
    commands run it when asked, e.g. ``test --mode``);
    ``unit``: the unit selections in this mode instead of the target's
    (None: the target's), e.g. the test classes of what the series
    changes where the other mode runs the whole module;
    ``functional``: the target's ``functional`` selections in this mode
    instead of the target's (None: the target's; ``[]``: none, only the
    functional modules the series touches), e.g. coverage run in one mode;
    ``ci_suites``: the suites ``ci`` runs in this mode (None: ``suites``),
    e.g. unit only where a combination target runs the functional tests
    of several changes at once in this mode;
    ``functional_workers_per_core``: stestr workers per core its share of
    the cores for the functional suite (1: one per core), for a mode whose
    functional tests mostly wait (see ``[modes.threading]`` in
    targets.toml).
    """

    name: str
    env: dict = dataclasses.field(default_factory=dict)
    interpreter: str = None
    suites: tuple = SUITES
    unit_exclude: str = ""
    functional_exclude: str = ""
    ci: bool = True
    unit: tuple = None
    functional: tuple = None
    ci_suites: tuple = None
    functional_workers_per_core: int = 1
    #: What the mode is (``[modes.<name>] description``), for the commands'
    #: help and output.
    description: str = ""
    #: True for the default mode (``default = true``, exactly one): the
    #: mode nova 34.0.0 runs nova-compute in, the one the main job, the
    #: real-Ironic tests and ``ci``'s steps run in unless told otherwise.
    default: bool = False


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
    #: Name of the venv (``build/venvs/NAME``); targets of one release share.
    venv: str = ""
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
    def venv_name(self):
        """``build/venvs/NAME``: the target's ``venv`` (or its name), with
        the interpreter's version after a dash when a mode has an
        interpreter of its own (``master-py3.13``)."""
        name = self.venv or self.name
        if self.mode is not None and self.mode.interpreter:
            name += "-py" + self.mode.interpreter.removeprefix("python")
        return name

    @property
    def release(self):
        """The Nova release the target belongs to: its venv's name (or its
        own: ``master``, ``2026.1``, ``pike``), shared by the targets of
        one release; the key of ``[gerrit_branches]``."""
        return self.venv or self.name

    @property
    def mode_name(self):
        """The mode's name, or "" for a target not put in a mode."""
        return self.mode.name if self.mode else ""

    def ci_modes(self):
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
        (:func:`load` refuses a ``commit_modes`` name that is not one of
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
    for line in series_file.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        path = folder / line.split()[0]
        if not path.is_file():
            raise HarnessError(f"target {name}: {series_file} names {line.split()[0]}, "
                               "which does not exist")
        patches.append(path)
    return patches


def _modes(path, name, known, wanted):
    """``{mode: Mode}`` of target ``name``: ``wanted`` maps each mode the
    target runs in to its settings (``interpreter``, ``suites``,
    ``unit_exclude``, ``functional_exclude``); ``known`` is the file's
    ``[modes]`` table (each mode's ``env``)."""
    modes = {}
    for mode, settings in wanted.items():
        if mode not in known:
            raise HarnessError(f"targets file {path}: target {name}: unknown mode {mode!r} "
                               f"(known: {', '.join(known) or 'none'})")
        # description and default are the mode's own, not a target's setting
        shared = {k: v for k, v in known[mode].items() if k not in _MODE_ONLY}
        settings = {**shared, **settings}
        extra = set(settings) - {"env", "interpreter", "suites", "unit_exclude",
                                 "functional_exclude", "ci", "unit", "functional",
                                 "ci_suites",
                                 "functional_workers_per_core"}
        suites = tuple(settings.get("suites", SUITES))
        ci_suites = settings.get("ci_suites")
        if ci_suites is not None and not (isinstance(ci_suites, list) and ci_suites and
                                          set(ci_suites) <= set(suites)):
            raise HarnessError(f"targets file {path}: target {name}: mode {mode}: "
                               f"ci_suites must be a non-empty list of its suites "
                               f"({', '.join(suites)}), not {ci_suites!r}")
        unit = settings.get("unit")
        if unit is not None and not (isinstance(unit, list) and unit and
                                     all(isinstance(u, str) and u for u in unit)):
            raise HarnessError(f"targets file {path}: target {name}: mode {mode}: "
                               f"unit must be a non-empty list of test names, not {unit!r}")
        functional = settings.get("functional")
        if functional is not None:
            functional = _functional(path, f"{name} mode {mode}", functional)
        per_core = settings.get("functional_workers_per_core", 1)
        if isinstance(per_core, bool) or not isinstance(per_core, int) or not 1 <= per_core <= 4:
            raise HarnessError(f"targets file {path}: target {name}: mode {mode}: "
                               f"functional_workers_per_core must be an integer from 1 to 4, "
                               f"not {per_core!r}")
        if extra or not set(suites) <= set(SUITES) or not suites:
            raise HarnessError(f"targets file {path}: target {name}: mode {mode}: "
                               f"unknown settings {sorted(extra)} or suites {list(suites)} "
                               f"(suites: {', '.join(SUITES)})")
        modes[mode] = Mode(mode, env={k: str(v) for k, v in settings.get("env", {}).items()},
                           interpreter=settings.get("interpreter"), suites=suites,
                           unit_exclude=settings.get("unit_exclude", ""),
                           functional_exclude=settings.get("functional_exclude", ""),
                           ci=bool(settings.get("ci", True)),
                           unit=tuple(unit) if unit is not None else None,
                           functional=tuple(functional) if functional is not None else None,
                           ci_suites=tuple(ci_suites) if ci_suites is not None else None,
                           functional_workers_per_core=per_core,
                           description=str(known[mode].get("description", "")),
                           default=known[mode].get("default") is True)
    return modes


#: Settings of ``[modes.<name>]`` that a target's own mode table cannot set.
_MODE_ONLY = ("description", "default")


def _read(path):
    """The targets file at ``path`` as a dict; HarnessError (one line) if it
    is missing or not TOML."""
    try:
        return tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise HarnessError(f"targets file {path} not found")
    except tomllib.TOMLDecodeError as exc:
        raise HarnessError(f"targets file {path}: {exc}")


def load_modes(ctx, path=None):
    """Nova's concurrency modes of the targets file's ``[modes]``:
    ``{name: Mode}`` in file order, each with its ``env``, ``description``
    and ``default``, and the settings the file gives every target that
    runs in it; ``{}`` when the file has no ``[modes]``.

    :raises HarnessError: the file is missing or not TOML, a mode has a
        ``description`` that is not text or a ``default`` that is not a
        boolean, or not exactly one mode is the default.
    """
    path = pathlib.Path(path or ctx.root / TARGETS_FILE)
    known = _read(path).get("modes", {})
    for name, table in known.items():
        if not isinstance(table.get("description", ""), str) or \
                not isinstance(table.get("default", False), bool):
            raise HarnessError(f"targets file {path}: [modes.{name}]: description must "
                               "be text and default true or false")
    modes = _modes(path, "[modes]", known, {name: {} for name in known})
    defaults = [name for name, mode in modes.items() if mode.default]
    if modes and len(defaults) != 1:
        raise HarnessError(f"targets file {path}: [modes] must mark exactly one mode "
                           f"default = true (Nova's default mode), not "
                           f"{', '.join(defaults) or 'none'}")
    return modes


def default_modes(ctx, path=None):
    """The names of the default mode(s) of ``[modes]`` (:func:`load_modes`),
    a tuple: what the main job, the real-Ironic tests and ``ci``'s steps
    run in unless told otherwise; ``()`` when the file has no ``[modes]``.

    :raises HarnessError: as :func:`load_modes`.
    """
    return tuple(name for name, mode in load_modes(ctx, path).items() if mode.default)


#: What a ``[releases.<name>]`` table declares: the sdist, its pins and
#: how to make its venv; its targets take these from it (and ``venv``,
#: the release's name) and may not set them themselves.
RELEASE_FIELDS = ("version", "sha256", "pins", "interpreter", "venv_tool", "pip_args",
                  "optional_interpreter")


@dataclasses.dataclass(frozen=True)
class Change:
    """One change of ``[changes]``: a fix (or its tests) with a folder per
    release.

    ``folder``: the folder, ``{release}`` standing for the release's name;
    ``releases``: the releases that have a folder; ``requires``: changes
    that must be applied before it for it to apply and to work (earlier
    in ``[changes]``, in every release it has); ``on``/``on_upto``: the
    change (up to that patch, or whole) its review targets stack on;
    ``packaged``: False for a change's form only upstream reviews, which
    no package applies.
    """

    name: str
    folder: str
    releases: tuple
    requires: tuple = ()
    on: str = None
    on_upto: str = None
    packaged: bool = True

    def folder_for(self, root, release):
        """The change's folder for ``release`` under ``root`` (a Path)."""
        return root / self.folder.format(release=release)


def load_releases(ctx, path=None):
    """``[releases]`` of the targets file: ``{name: table}`` in file order,
    each with ``version``, a 64-hex-digit ``sha256`` and ``pins``.

    :raises HarnessError: a release lacks one of them, the sha256 is not
        64 hex digits, or a key is not one of :data:`RELEASE_FIELDS`,
        ``modes`` (each mode's settings for the release) or ``review``
        (what its per-change targets share).
    """
    path = pathlib.Path(path or ctx.root / TARGETS_FILE)
    return _releases(path, _read(path))


def _releases(path, data):
    """:func:`load_releases` of the parsed targets file ``data``."""
    table = data.get("releases", {})
    for name, release in table.items():
        where = f"targets file {path}: [releases.{name}]"
        missing = [k for k in ("version", "sha256", "pins") if k not in release]
        if missing:
            raise HarnessError(f"{where} lacks {', '.join(missing)}")
        if not re.fullmatch(r"[0-9a-f]{64}", str(release["sha256"])):
            raise HarnessError(f"{where}: sha256 is not 64 hex digits")
        extra = set(release) - set(RELEASE_FIELDS) - {"modes", "review"}
        if extra:
            raise HarnessError(f"{where}: unknown keys {sorted(extra)} (a release declares "
                               f"{', '.join(RELEASE_FIELDS)}, modes and review)")
    return dict(table)


def load_changes(ctx, path=None):
    """``[changes]`` of the targets file: ``{name: Change}`` in file order
    (the order packagers apply them).  ``{}`` when the file has none.

    :raises HarnessError: a change whose folder lacks ``{release}``, a
        release ``[releases]`` lacks, a requirement
        that is not an earlier change of each of its releases, an ``on``
        it does not require, or an unknown key.
    """
    path = pathlib.Path(path or ctx.root / TARGETS_FILE)
    return _changes(path, _read(path))


def _changes(path, data):
    """:func:`load_changes` of the parsed targets file ``data``."""
    known_releases = data.get("releases", {})
    changes = {}
    for name, entry in data.get("changes", {}).items():
        where = f"targets file {path}: [changes.{name}]"
        extra = set(entry) - {"folder", "releases", "requires", "on", "on_upto", "packaged"}
        if extra:
            raise HarnessError(f"{where}: unknown keys {sorted(extra)}")
        folder, releases_ = entry.get("folder", ""), list(entry.get("releases", []))
        if "{release}" not in folder or not releases_:
            raise HarnessError(f"{where} needs folder (with {{release}}) and releases")
        for release in releases_:
            if release not in known_releases:
                raise HarnessError(f"{where}: release {release!r} is not in [releases]")
        requires = list(entry.get("requires", []))
        for need in requires:
            if need not in changes:
                raise HarnessError(f"{where}: requires {need!r}, which is not a change "
                                   "declared before it")
            lacking = [r for r in releases_ if r not in changes[need].releases]
            if lacking:
                raise HarnessError(f"{where}: requires {need!r}, which has no folder for "
                                   f"{', '.join(lacking)}")
        packaged = bool(entry.get("packaged", True))
        unpackaged = [n for n in requires if packaged and not changes[n].packaged]
        if unpackaged:
            raise HarnessError(f"{where}: a packaged change requires {', '.join(unpackaged)}, "
                               "which is packaged = false")
        on = entry.get("on")
        if on is not None and on not in requires:
            raise HarnessError(f"{where}: on = {on!r} must be one of its requires")
        if entry.get("on_upto") is not None and on is None:
            raise HarnessError(f"{where}: on_upto without on")
        changes[name] = Change(name, folder, tuple(releases_), tuple(requires), on,
                               entry.get("on_upto"), packaged)
    return changes


def stack_changes(changes, release):
    """The changes a packager of ``release`` applies, in order: every
    packaged change that has a folder for it."""
    return [c for c in changes.values() if c.packaged and release in c.releases]


def _from_release(path, name, entry, releases_, changes, root):
    """What target ``name`` takes from ``[releases]`` and ``[changes]``:
    ``(fields, review, release modes)``: its release's fields and venv,
    its ``patches``/``below``/``below_upto`` from ``change`` (the change's
    folder, on what the change's ``on`` says) or ``stack = true`` (the
    release's packaged stack); ``review``: the release's ``review`` table
    for a target of one change, else {}.  ``({}, {}, {})`` for a target
    without ``release``."""
    release = entry.get("release")
    where = f"targets file {path}: target {name}"
    if release is None:
        if "change" in entry or "stack" in entry:
            raise HarnessError(f"{where}: change and stack need release")
        return {}, {}, {}
    if release not in releases_:
        raise HarnessError(f"{where}: release {release!r} is not in [releases]")
    clash = [k for k in (*RELEASE_FIELDS, "venv", "patches", "below", "below_upto")
             if k in entry]
    if clash:
        raise HarnessError(f"{where}: {', '.join(clash)} come from its release and "
                           "change; the target may not set them")
    table = releases_[release]
    fields = {k: table[k] for k in RELEASE_FIELDS if k in table}
    fields["venv"] = release
    review = {}
    if entry.get("stack"):
        folders = [c.folder_for(root, release) for c in stack_changes(changes, release)]
        if not folders:
            raise HarnessError(f"{where}: no packaged change has a folder for {release}")
        fields.update(patches=folders[-1], below=folders[:-1])
    elif entry.get("change") in changes:
        change = changes[entry["change"]]
        if release not in change.releases:
            raise HarnessError(f"{where}: change {change.name} has no folder for {release}")
        fields["patches"] = change.folder_for(root, release)
        fields["below"] = ([changes[change.on].folder_for(root, release)]
                           if change.on else [])
        fields["below_upto"] = change.on_upto
        review = table.get("review", {})
    else:
        raise HarnessError(f"{where}: needs change (one of {', '.join(changes) or 'none'}) "
                           "or stack = true")
    return fields, review, table.get("modes", {})


def load(ctx, path=None):
    """Read the targets file; return ``{name: Target}`` (file order).

    A target with ``release`` takes its sdist, pins, interpreter and venv
    from ``[releases.<release>]`` (and each of its modes that release's
    settings for the mode), and its folders from ``change`` or ``stack``
    (:func:`_from_release`); a target of one change also what the
    release's ``review`` table sets.  A selection of ``unit`` under a key
    of ``[defaults.unit_paths]`` (``nova.tests.unit.virt.ironic.test_driver.X``
    under ``nova.tests.unit.virt.ironic``) takes that key's paths unless
    the target gives its own.
    """
    path = pathlib.Path(path or ctx.root / TARGETS_FILE)
    data = _read(path)
    defaults = data.get("defaults", {})
    releases_ = _releases(path, data)
    changes = _changes(path, data)
    targets = {}
    for name, entry in data.get("targets", {}).items():
        fields, review, release_modes = _from_release(path, name, entry, releases_, changes,
                                                      ctx.root)
        review_plain = {k: v for k, v in review.items() if k != "modes"}
        merged = {**defaults, **fields, **review_plain, **entry}
        merged["env"] = {**defaults.get("env", {}), **entry.get("env", {})}
        wanted = entry.get("modes") or review.get("modes") or defaults.get("modes", {})
        merged["modes"] = {m: {**release_modes.get(m, {}),
                               **review.get("modes", {}).get(m, {}),
                               **entry.get("modes", {}).get(m, {})} for m in wanted}
        missing = [k for k in ("version", "sha256", "pins", "patches") if k not in merged]
        if missing:
            raise HarnessError(f"targets file {path}: target {name} lacks {', '.join(missing)}")
        if not re.fullmatch(r"[0-9a-f]{64}", merged["sha256"]):
            raise HarnessError(f"targets file {path}: target {name}: sha256 is not 64 hex digits")
        unit = list(merged.get("unit", []))
        below = merged.get("below")
        targets[name] = Target(
            name=name,
            version=merged["version"],
            sha256=merged["sha256"],
            interpreter=merged.get("interpreter", "python3.11"),
            venv_tool=merged.get("venv_tool", "venv"),
            pins=ctx.root / merged["pins"],
            patches=ctx.root / merged["patches"],
            unit=unit,
            check_commits=bool(merged.get("check_commits", False)),
            enabled=bool(merged.get("enabled", True)),
            pip_args=list(merged.get("pip_args", [])),
            env={k: str(v) for k, v in merged["env"].items()},
            note=merged.get("note", ""),
            optional_interpreter=bool(merged.get("optional_interpreter", False)),
            below=(tuple(below) if fields and below is not None
                   else _below(path, name, below, ctx.root)),
            below_upto=merged.get("below_upto"),
            venv=merged.get("venv", ""),
            exportable=bool(merged.get("export", True)),
            modes=_modes(path, name, data.get("modes", {}), merged["modes"]),
            commit_modes=_commit_modes(path, name, merged.get("commit_modes", []),
                                       merged["modes"]),
            unit_paths=_unit_paths(unit, defaults.get("unit_paths", {}),
                                   entry.get("unit_paths", {})),
            functional=_functional(path, name, merged.get("functional", [])),
            change=str(entry.get("change", "")),
            stack=bool(entry.get("stack", False)),
        )
    return targets


def _unit_paths(unit, defaults, own):
    """``{selection: [path prefix, ...]}`` of a target: ``[defaults.unit_paths]``
    (for each selection, the longest key it equals or lies under, and
    each key itself), then the target's own ``unit_paths``."""
    paths = {k: [str(p) for p in v] for k, v in defaults.items()}
    for selection in unit:
        keys = [k for k in defaults if selection == k or selection.startswith(k + ".")]
        if keys and selection not in paths:
            paths[selection] = paths[max(keys, key=len)]
    paths.update({k: [str(p) for p in v] for k, v in own.items()})
    return paths


def requirements_missing(ctx, target, path=None):
    """The ``requires`` of the change whose folder is the target's own
    (found by the folder, whatever the target's release or venv says) that
    its ``below`` lacks: ``[(change, folder), ...]``, [] for a target whose
    folder is no change's.  A folder whose requirement is missing must not
    be exported nor shipped: it does not apply, or its tests fail."""
    changes = load_changes(ctx, path)
    own = [(c, release) for c in changes.values() for release in c.releases
           if _same(c.folder_for(ctx.root, release), target.patches)]
    if not own:
        return []
    change, release = own[0]
    return [(need, changes[need].folder_for(ctx.root, release)) for need in change.requires
            if not any(_same(changes[need].folder_for(ctx.root, release), below)
                       for below in target.below)]


def _same(one, other):
    """Whether two folder paths name the same folder (``..``, ``.`` and
    a trailing slash aside)."""
    return pathlib.Path(one).resolve() == pathlib.Path(other).resolve()


def _commit_modes(path, name, value, modes):
    """``commit_modes`` of targets.toml: a list of the target's own mode
    names; HarnessError naming the target for anything else (a misspelt
    name would otherwise leave check-commits running every mode)."""
    where = f"targets file {path}: target {name}: commit_modes"
    if not isinstance(value, list) or not all(isinstance(n, str) for n in value):
        raise HarnessError(f"{where} must be a list of mode names, not {value!r}")
    unknown = [n for n in value if n not in modes]
    if unknown:
        raise HarnessError(f"{where}: {', '.join(unknown)} is not one of the target's "
                           f"modes ({', '.join(modes) or 'none'})")
    return list(value)


def _functional(path, name, value):
    """``functional`` of targets.toml (inherited from ``[defaults]``): a
    list of dotted names under ``nova.tests.functional`` (a module, e.g.
    ``nova.tests.functional.regressions.test_bug_1853009``, or a class,
    ``nova.tests.functional.test_servers.ServerRescheduleTests``), none
    twice nor inside another (split_by_filter gives a test to the first
    selection that matches it: the other would run no test); HarnessError
    naming the target for anything else."""
    where = f"targets file {path}: target {name}: functional"
    if not isinstance(value, list):
        raise HarnessError(f"{where} must be a list of dotted names under "
                           f"nova.tests.functional, not {value!r}")
    for entry in value:
        if not isinstance(entry, str) or not FUNCTIONAL_SELECTION.fullmatch(entry):
            raise HarnessError(
                f"{where}: {entry!r} is not a dotted name under nova.tests.functional "
                "(a module such as nova.tests.functional.regressions.test_bug_1853009 "
                "or a class such as "
                "nova.tests.functional.test_servers.ServerRescheduleTests)")
        # (a test method would never match: each selection is passed to
        # stestr as the name and a dot, which a test id never has after
        # its method's name)
        parts = entry.split(".")
        classes = [i for i, part in enumerate(parts) if part[:1].isupper()]
        if classes and classes[0] < len(parts) - 1:
            raise HarnessError(f"{where}: {entry!r} names a test method; name its "
                               "module or class")
    for i, one in enumerate(value):
        for other in value[i + 1:]:
            if one == other or other.startswith(one + ".") or one.startswith(other + "."):
                raise HarnessError(f"{where}: {one!r} and {other!r} overlap "
                                   "(each test is counted under one selection)")
    return list(value)


def _below(path, name, value, root):
    """``below`` of targets.toml (a folder or a list of folders) as a tuple
    of Paths; HarnessError for anything else."""
    if not value:
        return ()
    folders = [value] if isinstance(value, str) else value
    if not isinstance(folders, list) or not all(isinstance(f, str) for f in folders):
        raise HarnessError(f"targets file {path}: target {name}: below must be a "
                           "folder or a list of folders")
    return tuple(root / folder for folder in folders)


def get(ctx, name):
    """The target called ``name``; HarnessError (one line) if unknown."""
    targets = load(ctx)
    if name not in targets:
        raise HarnessError(f"unknown target {name!r} (known: {', '.join(targets)})")
    return targets[name]


def releases(ctx, path=None):
    """The Nova releases of the targets file, in file order: the keys of
    ``[releases]`` (``master``, ``2026.1``, ..., ``pike``); in a file
    without one, each target's :attr:`Target.release`, once."""
    declared = load_releases(ctx, path)
    if declared:
        return list(declared)
    return list(dict.fromkeys(t.release for t in load(ctx, path).values()))


@dataclasses.dataclass(frozen=True)
class PackagedStack:
    """What a packager of ``release`` applies: ``folders`` (patches
    folders, whole, in order); ``target``: the target whose tree is exactly
    that stack on the release's sdist (its version and sha256)."""

    release: str
    target: Target
    folders: tuple

    def series(self):
        """``[(folder, [patch file, ...]), ...]``: each folder's ``series``,
        in order.

        :raises HarnessError: a folder or a file its ``series`` names is
            missing, or the folder holds a patch its ``series`` does not
            list (a commit left out: the next may apply without it and the
            package silently lack it).
        """
        found = []
        for folder in self.folders:
            listed = read_series(self.target.name, folder)
            strays = sorted(p.name for p in pathlib.Path(folder).glob("*.patch")
                            if p not in listed)
            if strays:
                raise HarnessError(f"{folder} holds {', '.join(strays)}, which its series "
                                   "does not list: packagers apply whole folders")
            found.append((folder, listed))
        return found


def packaged_stack(ctx, release, path=None):
    """The packaged stack of ``release``: the folders of the release's
    target with ``stack = true`` (every packaged change of ``[changes]``
    that has a folder for it, whole, in order); in a targets file without
    one, those of its ``<release>-all`` target (its ``below``, then its own
    ``patches``) or its own target.  The one place that knows how
    targets.toml spells a packaged stack (``quilt``, the harness tests of
    the packagers' docs).

    :raises HarnessError: not a release of the targets file (the error lists
        them), or its stack target takes part of a folder (``below_upto``:
        packagers apply whole folders).
    """
    known = load(ctx, path)
    names = releases(ctx, path)
    if release not in names:
        raise HarnessError(f"unknown release {release!r} (releases: {', '.join(names)})")
    stacks = [t for t in known.values() if t.stack and t.release == release]
    target = stacks[0] if stacks else (known.get(f"{release}-all") or known.get(release))
    if target is None or target.release != release:
        raise HarnessError(f"release {release}: targets.toml has neither a target "
                           f"{release}-all nor a target {release}")
    if target.below_upto is not None:
        raise HarnessError(f"release {release}: target {target.name} applies "
                           f"{target.below[0]} up to {target.below_upto} only; packagers "
                           "apply whole folders")
    missing = requirements_missing(ctx, target, path)
    if missing:
        raise HarnessError(not_stacked_on(f"release {release}: target {target.name}'s "
                                          f"{target.patches}", missing))
    return PackagedStack(release, target, (*target.below, target.patches))


def placeholders(ctx, path=None):
    """Bug-number placeholders: ``{"main": "NNNNNNN", ...}`` from ``[bugs]``."""
    path = pathlib.Path(path or ctx.root / TARGETS_FILE)
    return dict(tomllib.loads(path.read_text()).get("bugs", {}))


def gerrit_folders(ctx, path=None):
    """``[gerrit_folders]`` of the targets file: ``{release: release}``,
    for a release of ``[gerrit_branches]`` whose changes our folders of
    another release hold (the master folders, built on nova 34.0.0, hold
    2026.2's).  ``{}`` when the file has none.

    :raises HarnessError: a key that ``[gerrit_branches]`` lacks, or a
        value no target has as its release.
    """
    path = pathlib.Path(path or ctx.root / TARGETS_FILE)
    table = _read(path).get("gerrit_folders", {})
    where = f"targets file {path}: [gerrit_folders]"
    if not isinstance(table, dict):
        raise HarnessError(f"{where} must be a table of release = release")
    branches = gerrit_branches(ctx, path)
    known = releases(ctx, path)
    for release, folders in table.items():
        if release not in branches:
            raise HarnessError(f"{where}: {release} is not a release of [gerrit_branches]")
        if folders not in known:
            raise HarnessError(f"{where}: {release} = {folders!r}: no target has release "
                               f"{folders!r} (known: {', '.join(sorted(known))})")
    return dict(table)


#: ``[gerrit_branches]``: the value of a release at end of life (its
#: branch deleted: no backports).
EOL = "eol"


def gerrit_branches(ctx, path=None):
    """``[gerrit_branches]`` of the targets file: ``{release: branch}`` in
    file order, newest first: ``master`` first, then each release's
    branch (``stable/<release>`` or ``unmaintained/<release>``), None for a
    release at end of life (``"eol"``).  ``{}`` when the file has none.

    :raises HarnessError: the file is missing or not TOML, or the table is
        not that: a value other than those, ``master`` not first or twice.
    """
    path = pathlib.Path(path or ctx.root / TARGETS_FILE)
    table = _read(path).get("gerrit_branches", {})
    where = f"targets file {path}: [gerrit_branches]"
    if not isinstance(table, dict):
        raise HarnessError(f"{where} must be a table of release = branch")
    branches = {}
    for i, (release, value) in enumerate(table.items()):
        allowed = (("master",) if i == 0 else
                   (f"stable/{release}", f"unmaintained/{release}", EOL))
        if value not in allowed:
            raise HarnessError(
                f"{where}: {release} = {value!r}: expected "
                + ('"master" (the first entry: the development branch)' if i == 0 else
                   " or ".join(f'"{a}"' for a in allowed)
                   + " (releases newest first, after master)"))
        branches[release] = None if value == EOL else value
    return branches
