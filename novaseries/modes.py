"""Nova's concurrency modes a target's tests run in: ``[modes]`` of
targets.toml and each target's settings of its modes (:class:`Mode`), the
test suites a mode runs (:data:`TEST_SUITES`) and its functional
selections.
"""

import dataclasses
import re

from novaseries import targets_file
from novaseries.util import HarnessError

#: The test suites a mode can run: Nova's unit selections and the
#: functional test modules the series touches (with the target's
#: ``functional`` selections at HEAD).
TEST_SUITES = ("unit", "functional")

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
    ``suites``: which of :data:`TEST_SUITES` run in this mode (a release whose
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
    suites: tuple = TEST_SUITES
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


#: Settings of ``[modes.<name>]`` that a target's own mode table cannot set.
_MODE_ONLY = ("description", "default")
#: The settings of a target's mode (``[modes.<name>]`` and the target's own
#: mode table): every field of :class:`Mode` but its name and
#: :data:`_MODE_ONLY`.
SETTINGS = tuple(field.name for field in dataclasses.fields(Mode)
                 if field.name not in ("name", *_MODE_ONLY))


def target_modes(path, name, known, wanted):
    """``{mode: Mode}`` of target ``name``: ``wanted`` maps each mode the
    target runs in to its :data:`SETTINGS` (a setting not given: the
    field's default); ``known`` is the file's ``[modes]`` table (each
    mode's ``env``, ``description`` and ``default``, and settings every
    target running in it gets)."""
    modes = {}
    for mode, settings in wanted.items():
        if mode not in known:
            raise HarnessError(f"targets file {path}: target {name}: unknown mode {mode!r} "
                               f"(known: {', '.join(known) or 'none'})")
        shared = {k: v for k, v in known[mode].items() if k not in _MODE_ONLY}
        settings = {**shared, **settings}
        extra = set(settings) - set(SETTINGS)
        suites = tuple(settings.get("suites", Mode.suites))
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
            functional = checked_functional(path, f"{name} mode {mode}", functional)
        per_core = settings.get("functional_workers_per_core", Mode.functional_workers_per_core)
        if isinstance(per_core, bool) or not isinstance(per_core, int) or not 1 <= per_core <= 4:
            raise HarnessError(f"targets file {path}: target {name}: mode {mode}: "
                               f"functional_workers_per_core must be an integer from 1 to 4, "
                               f"not {per_core!r}")
        if extra or not set(suites) <= set(TEST_SUITES) or not suites:
            raise HarnessError(f"targets file {path}: target {name}: mode {mode}: "
                               f"unknown settings {sorted(extra)} or suites {list(suites)} "
                               f"(suites: {', '.join(TEST_SUITES)})")
        given = dict(settings, suites=suites, functional_workers_per_core=per_core)
        given["env"] = {k: str(v) for k, v in settings.get("env", {}).items()}
        if "ci" in settings:
            given["ci"] = bool(settings["ci"])
        for key, value in (("unit", unit), ("functional", functional), ("ci_suites", ci_suites)):
            if value is not None:  # the file's lists, as tuples
                given[key] = tuple(value)
        modes[mode] = Mode(mode, **given,
                           description=str(known[mode].get("description", "")),
                           default=known[mode].get("default") is True)
    return modes


def load_modes(ctx, path=None):
    """Nova's concurrency modes of the targets file's ``[modes]``:
    ``{name: Mode}`` in file order, each with its ``env``, ``description``
    and ``default``, and the settings the file gives every target that
    runs in it; ``{}`` when the file has no ``[modes]``.

    :raises HarnessError: the file is missing or not TOML, a mode has a
        ``description`` that is not text or a ``default`` that is not a
        boolean, or not exactly one mode is the default.
    """
    path = targets_file.path(ctx, path)
    known = targets_file.read(path).get("modes", {})
    for name, table in known.items():
        if not isinstance(table.get("description", ""), str) or \
                not isinstance(table.get("default", False), bool):
            raise HarnessError(f"targets file {path}: [modes.{name}]: description must "
                               "be text and default true or false")
    modes = target_modes(path, "[modes]", known, {name: {} for name in known})
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


def checked_functional(path, name, value):
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
