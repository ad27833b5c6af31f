"""The Nova releases and the changes of targets.toml: ``[releases]`` (each
release's sdist, pins and venv, its mode settings and what its targets
of one change share) and ``[changes]`` (each change's folder per release
and what it requires, in the order packagers apply them); what a target
takes from them (:func:`target_fields`), and the requirements a target
lacks (:func:`requirements_missing`).
"""

import dataclasses
import pathlib
import re

from novaseries import targets_file
from novaseries.util import HarnessError

#: What a ``[releases.<name>]`` table declares: the sdist, its pins and
#: how to make its venv; its targets take these from it (and share the
#: venv, named after the release: :attr:`Target.venv_base`) and may not set
#: them, nor ``venv``, themselves.
RELEASE_FIELDS = ("version", "sha256", "pins", "interpreter", "venv_tool", "pip_args",
                  "optional_interpreter")
#: The fields of :data:`RELEASE_FIELDS` every release, and every target,
#: has: its sdist's version and sha256, its pins file.
REQUIRED_FIELDS = ("version", "sha256", "pins")


def check_sha256(where, sha256):
    """Refuse a ``sha256`` that is not 64 lowercase hex digits.

    :raises HarnessError: ``<where>: sha256 is not 64 hex digits``.
    """
    if not re.fullmatch(r"[0-9a-f]{64}", str(sha256)):
        raise HarnessError(f"{where}: sha256 is not 64 hex digits")


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
        64 hex digits, ``mypy`` is not true or false, or a key is not one
        of :data:`RELEASE_FIELDS`, ``modes`` (each mode's settings for the
        release), ``review`` (what its per-change targets share) or
        ``mypy`` (:func:`runs_mypy`).
    """
    path = targets_file.path(ctx, path)
    return releases_table(path, targets_file.read(path))


def releases_table(path, data):
    """:func:`load_releases` of the parsed targets file ``data``."""
    table = data.get("releases", {})
    for name, release in table.items():
        where = f"targets file {path}: [releases.{name}]"
        missing = [k for k in REQUIRED_FIELDS if k not in release]
        if missing:
            raise HarnessError(f"{where} lacks {', '.join(missing)}")
        check_sha256(where, release["sha256"])
        extra = set(release) - set(RELEASE_FIELDS) - {"modes", "review", "mypy"}
        if extra:
            raise HarnessError(f"{where}: unknown keys {sorted(extra)} (a release declares "
                               f"{', '.join(RELEASE_FIELDS)}, modes, review and mypy)")
        if not isinstance(release.get("mypy", False), bool):
            raise HarnessError(f"{where}: mypy must be true or false, not "
                               f"{release['mypy']!r}")
    return dict(table)


def runs_mypy(release):
    """Whether a ``[releases.<name>]`` table (of :func:`load_releases`)
    says the release's pep8 job runs mypy (``mypy = true``; default
    false): ``ci`` runs it once, on the release's packaged stack."""
    return release.get("mypy", False)


def load_changes(ctx, path=None):
    """``[changes]`` of the targets file: ``{name: Change}`` in file order
    (the order packagers apply them).  ``{}`` when the file has none.

    :raises HarnessError: a change whose folder lacks ``{release}``, a
        release ``[releases]`` lacks, a requirement
        that is not an earlier change of each of its releases, an ``on``
        it does not require, or an unknown key.
    """
    path = targets_file.path(ctx, path)
    return changes_table(path, targets_file.read(path))


def changes_table(path, data):
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


def target_fields(path, name, entry, releases_, changes, root):
    """What target ``name`` takes from ``[releases]`` and ``[changes]``:
    ``(fields, review, release modes)``: its release's fields, its
    ``patches``/``below``/``below_upto`` from ``change`` (the change's
    folder, on what the change's ``on`` says) or ``stack = true`` (the
    release's packaged stack); ``review``: the release's ``review`` table
    for a target of one change, else {}.  ``({}, {}, {})`` for a target
    without ``release`` (with ``stack = true``, its own ``patches`` and
    ``below`` are the stack of its release, :attr:`Target.release`)."""
    release = entry.get("release")
    where = f"targets file {path}: target {name}"
    if release is None:
        if "change" in entry:
            raise HarnessError(f"{where}: change needs release")
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


def not_stacked_on(whose, missing, stacker="it"):
    """The refusal of a folder whose change requires changes its target
    does not stack on: ``<whose> requires <change> (<folder>), ..., which
    <stacker> does not stack on`` (``export``, a release's packaged stack).

    :param missing: ``[(change, folder), ...]``, as
        :func:`requirements_missing` returns them.
    """
    return (f"{whose} requires " + ", ".join(f"{name} ({folder})" for name, folder in missing)
            + f", which {stacker} does not stack on")
