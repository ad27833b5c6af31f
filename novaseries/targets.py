"""Targets are data: ``targets/targets.toml`` describes each Nova release.

:func:`load` makes its targets (:class:`novaseries.target_model.Target`)
from ``[targets]``, with what their release and change give them
(:mod:`novaseries.release_changes`) and their modes
(:mod:`novaseries.modes`); the file's other tables are read here too: a
release's packaged stack, the bug-number placeholders (``[bugs]``) and
the Gerrit branches (``[gerrit_branches]``, ``[gerrit_folders]``).
"""

import dataclasses
import pathlib

from novaseries import modes, release_changes, targets_file
from novaseries.target_model import Target, read_series
from novaseries.util import HarnessError

#: The target (of targets.toml) the main job (``run``, ci's main job
#: steps) and ``ironic driver-tests``/``hang-probe`` use unless told; the
#: packaged stack of its release (:func:`default_stack_target`) is the main
#: job's fixed tree and the tree of the real-Ironic runs.
DEFAULT_TARGET = "master"

#: The target (of targets.toml) of pike, whose driver runs end to end
#: against the pike-era Ironic (ci's ``pike against Ironic`` step,
#: :func:`novaseries.testrun.pike_driver_outcomes`).
PIKE_TARGET = "pike"


def load(ctx, path=None):
    """Read the targets file; return ``{name: Target}`` (file order).

    A target with ``release`` takes its sdist, pins and interpreter from
    ``[releases.<release>]`` and shares the release's venv (and each of its modes that release's
    settings for the mode), and its folders from ``change`` or ``stack``
    (:func:`novaseries.release_changes.target_fields`); a target of one change also what the
    release's ``review`` table sets.  A selection of ``unit`` under a key
    of ``[defaults.unit_paths]`` (``nova.tests.unit.virt.ironic.test_driver.X``
    under ``nova.tests.unit.virt.ironic``) takes that key's paths unless
    the target gives its own.

    :raises HarnessError: the file is missing or not TOML, or a target
        lacks a field (``version``, ``sha256``, ``pins``, ``patches``,
        ``interpreter``: from ``[defaults]``, its release or itself) or has
        a wrong one.
    """
    path = targets_file.path(ctx, path)
    data = targets_file.read(path)
    defaults = data.get("defaults", {})
    releases_ = release_changes.releases_table(path, data)
    changes = release_changes.changes_table(path, data)
    targets = {}
    for name, entry in data.get("targets", {}).items():
        fields, review, release_modes = release_changes.target_fields(
            path, name, entry, releases_, changes, ctx.root)
        review_plain = {k: v for k, v in review.items() if k != "modes"}
        merged = {**defaults, **fields, **review_plain, **entry}
        merged["env"] = {**defaults.get("env", {}), **entry.get("env", {})}
        wanted = entry.get("modes") or review.get("modes") or defaults.get("modes", {})
        merged["modes"] = {m: {**release_modes.get(m, {}),
                               **review.get("modes", {}).get(m, {}),
                               **entry.get("modes", {}).get(m, {})} for m in wanted}
        missing = [k for k in (*release_changes.REQUIRED_FIELDS, "patches") if k not in merged]
        if missing:
            raise HarnessError(f"targets file {path}: target {name} lacks {', '.join(missing)}")
        if "interpreter" not in merged:
            raise HarnessError(f"targets file {path}: target {name} has no interpreter "
                               "(set interpreter in [defaults], its release or the target)")
        release_changes.check_sha256(f"targets file {path}: target {name}", merged["sha256"])
        unit = list(merged.get("unit", []))
        below = merged.get("below")
        targets[name] = Target(
            name=name,
            version=merged["version"],
            sha256=merged["sha256"],
            interpreter=merged["interpreter"],
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
            release=merged.get("release") or merged.get("venv") or name,
            exportable=bool(merged.get("export", True)),
            modes=modes.target_modes(path, name, data.get("modes", {}), merged["modes"]),
            commit_modes=_commit_modes(path, name, merged.get("commit_modes", []),
                                       merged["modes"]),
            unit_paths=_unit_paths(unit, defaults.get("unit_paths", {}),
                                   entry.get("unit_paths", {})),
            functional=modes.checked_functional(path, name, merged.get("functional", [])),
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


def _commit_modes(path, name, value, mode_names):
    """``commit_modes`` of targets.toml: a list of the target's own mode
    names; HarnessError naming the target for anything else (a misspelt
    name would otherwise leave check-commits running every mode)."""
    where = f"targets file {path}: target {name}: commit_modes"
    if not isinstance(value, list) or not all(isinstance(n, str) for n in value):
        raise HarnessError(f"{where} must be a list of mode names, not {value!r}")
    unknown = [n for n in value if n not in mode_names]
    if unknown:
        raise HarnessError(f"{where}: {', '.join(unknown)} is not one of the target's "
                           f"modes ({', '.join(mode_names) or 'none'})")
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
    declared = release_changes.load_releases(ctx, path)
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
    """The packaged stack of ``release``: the folders (its ``below``, then
    its own ``patches``) of the release's target with ``stack = true``
    (:func:`stack_target`: every packaged change of ``[changes]`` that has
    a folder for it, whole, in order).  The one place that knows how
    targets.toml spells a packaged stack (``quilt``, the harness tests of
    the packagers' docs).

    :raises HarnessError: not a release of the targets file (the error lists
        them), no target of it says ``stack = true``, or its stack target
        takes part of a folder (``below_upto``: packagers apply whole
        folders).
    """
    names = releases(ctx, path)
    if release not in names:
        raise HarnessError(f"unknown release {release!r} (releases: {', '.join(names)})")
    target = stack_target(ctx, release, path)
    if target.below_upto is not None:
        raise HarnessError(f"release {release}: target {target.name} applies "
                           f"{target.below[0]} up to {target.below_upto} only; packagers "
                           "apply whole folders")
    missing = release_changes.requirements_missing(ctx, target, path)
    if missing:
        raise HarnessError(release_changes.not_stacked_on(
            f"release {release}: target {target.name}'s {target.patches}", missing))
    return PackagedStack(release, target, (*target.below, target.patches))


def stack_target(ctx, release, path=None):
    """The target whose tree is ``release``'s packaged stack: the release's
    target with ``stack = true`` (:func:`packaged_stack` checks the stack
    itself).

    :raises HarnessError: no target of ``release`` says ``stack = true``.
    """
    stacks = [t for t in load(ctx, path).values() if t.stack and t.release == release]
    if not stacks:
        raise HarnessError(f"release {release}: no target of it in "
                           f"{targets_file.path(ctx, path)} says stack = true "
                           "(its packaged stack)")
    return stacks[0]


def default_stack_target(ctx, path=None):
    """:func:`stack_target` of :data:`DEFAULT_TARGET`'s release, the
    default release's packaged stack; None when the targets file has no
    such target.

    :raises HarnessError: as :func:`stack_target`.
    """
    default = load(ctx, path).get(DEFAULT_TARGET)
    return None if default is None else stack_target(ctx, default.release, path)


def default_stack_name(ctx, path=None):
    """The name of :func:`default_stack_target`, or :data:`DEFAULT_TARGET`
    when the targets file lacks that target (the steps on it are then
    skipped, and :func:`default_stack_in_mode` names it as unknown)."""
    stack = default_stack_target(ctx, path)
    return stack.name if stack else DEFAULT_TARGET


def default_stack_in_mode(ctx, mode=None):
    """The target of :func:`default_stack_name`, in ``mode``
    (:func:`mode_target`) when given: the tree, venv and environment of
    ci's ``real Ironic`` step, ``ironic driver-tests`` and ``hang-probe``.

    :raises HarnessError: the targets file lacks it, or it does not run in
        ``mode``.
    """
    target = get(ctx, default_stack_name(ctx))
    return target if mode is None else mode_target(target, mode)


def mode_target(target, mode):
    """``target`` in ``mode`` for the main job and the real Ironic's driver
    tests: the mode's environment with the target's own interpreter and
    venv, so that the two modes' results differ in nothing else.

    :raises HarnessError: the target does not run in ``mode``.
    """
    return target.in_mode(mode, interpreter=False)


def mypy_targets(ctx, path=None):
    """The names of the targets whose tree ``ci`` runs mypy on: the target
    of the packaged stack (:func:`packaged_stack`) of each release whose
    ``[releases.<name>]`` says ``mypy = true``, in file order.

    :raises HarnessError: as :func:`packaged_stack`, for such a release.
    """
    return [packaged_stack(ctx, name, path).target.name
            for name, release in release_changes.load_releases(ctx, path).items()
            if release_changes.runs_mypy(release)]


def placeholders(ctx, path=None):
    """Bug-number placeholders: ``{"main": "NNNNNNN", ...}`` from ``[bugs]``."""
    return dict(targets_file.read(targets_file.path(ctx, path)).get("bugs", {}))


def gerrit_folders(ctx, path=None):
    """``[gerrit_folders]`` of the targets file: ``{release: release}``,
    for a release of ``[gerrit_branches]`` whose changes our folders of
    another release hold (the master folders, built on nova 34.0.0, hold
    2026.2's).  ``{}`` when the file has none.

    :raises HarnessError: a key that ``[gerrit_branches]`` lacks, or a
        value no target has as its release.
    """
    path = targets_file.path(ctx, path)
    table = targets_file.read(path).get("gerrit_folders", {})
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
#: Nova's development branch on Gerrit: ``[gerrit_branches]``'s first
#: value; backports start from its commits.
DEVELOPMENT_BRANCH = "master"


def gerrit_branches(ctx, path=None):
    """``[gerrit_branches]`` of the targets file: ``{release: branch}`` in
    file order, newest first: ``master`` first, then each release's
    branch (``stable/<release>`` or ``unmaintained/<release>``), None for a
    release at end of life (``"eol"``).  ``{}`` when the file has none.

    :raises HarnessError: the file is missing or not TOML, or the table is
        not that: a value other than those, ``master`` not first or twice.
    """
    path = targets_file.path(ctx, path)
    table = targets_file.read(path).get("gerrit_branches", {})
    where = f"targets file {path}: [gerrit_branches]"
    if not isinstance(table, dict):
        raise HarnessError(f"{where} must be a table of release = branch")
    branches = {}
    for i, (release, value) in enumerate(table.items()):
        allowed = ((DEVELOPMENT_BRANCH,) if i == 0 else
                   (f"stable/{release}", f"unmaintained/{release}", EOL))
        if value not in allowed:
            raise HarnessError(
                f"{where}: {release} = {value!r}: expected "
                + (f'"{DEVELOPMENT_BRANCH}" (the first entry: the development branch)'
                   if i == 0 else
                   " or ".join(f'"{a}"' for a in allowed)
                   + f" (releases newest first, after {DEVELOPMENT_BRANCH})"))
        branches[release] = None if value == EOL else value
    return branches
