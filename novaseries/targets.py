"""Targets are data: ``targets/targets.toml`` describes each Nova release.

A :class:`Target` carries everything the commands need; the series itself is
read from the target's patches folder (quilt-style ``series`` file).
"""

import dataclasses
import pathlib
import re
import tomllib

from novaseries.util import HarnessError

TARGETS_FILE = pathlib.Path("targets") / "targets.toml"


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

    @property
    def sdist_name(self):
        """File name of the sdist on PyPI."""
        return f"nova-{self.version}.tar.gz"

    def series(self):
        """Patch files of the series, in order (list of Paths).

        Raises HarnessError if the folder or its ``series`` file is missing or
        names a file that does not exist.  An empty series is allowed (and
        returns []); callers that need patches say so themselves.
        """
        series_file = self.patches / "series"
        if not self.patches.is_dir():
            raise HarnessError(f"target {self.name}: patches folder {self.patches} is missing")
        if not series_file.is_file():
            raise HarnessError(f"target {self.name}: {series_file} is missing "
                               "(one patch file name per line)")
        patches = []
        for line in series_file.read_text().splitlines():
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            path = self.patches / line.split()[0]
            if not path.is_file():
                raise HarnessError(f"target {self.name}: {series_file} names {line.split()[0]}, "
                                   "which does not exist")
            patches.append(path)
        return patches

    def series_status(self):
        """``(patches, problem)``: the series, or [] and a one-line reason."""
        try:
            patches = self.series()
        except HarnessError as exc:
            return [], str(exc)
        if not patches:
            return [], f"target {self.name}: {self.patches / 'series'} lists no patches"
        return patches, ""

    def select(self, upto):
        """The series up to and including the patch named ``upto``.

        ``upto`` is a file name, its number prefix (``0003``) or a unique
        substring of a file name.  None means the whole series.
        """
        patches = self.series()
        if upto is None:
            return patches
        names = [p.name for p in patches]
        matches = [i for i, n in enumerate(names)
                   if n == upto or n.split("-", 1)[0] == upto.zfill(4)]
        if not matches:
            matches = [i for i, n in enumerate(names) if upto.lower() in n.lower()]
        if len(matches) != 1:
            what = "no patch" if not matches else f"{len(matches)} patches"
            raise HarnessError(f"--upto {upto!r}: {what} of {self.name}'s series match "
                               f"(series: {', '.join(names) or 'empty'})")
        return patches[:matches[0] + 1]


def load(ctx, path=None):
    """Read the targets file; return ``{name: Target}`` (file order)."""
    path = pathlib.Path(path or ctx.root / TARGETS_FILE)
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise HarnessError(f"targets file {path} not found")
    except tomllib.TOMLDecodeError as exc:
        raise HarnessError(f"targets file {path}: {exc}")
    defaults = data.get("defaults", {})
    targets = {}
    for name, entry in data.get("targets", {}).items():
        merged = {**defaults, **entry}
        merged["env"] = {**defaults.get("env", {}), **entry.get("env", {})}
        missing = [k for k in ("version", "sha256", "pins", "patches") if k not in merged]
        if missing:
            raise HarnessError(f"targets file {path}: target {name} lacks {', '.join(missing)}")
        if not re.fullmatch(r"[0-9a-f]{64}", merged["sha256"]):
            raise HarnessError(f"targets file {path}: target {name}: sha256 is not 64 hex digits")
        targets[name] = Target(
            name=name,
            version=merged["version"],
            sha256=merged["sha256"],
            interpreter=merged.get("interpreter", "python3.11"),
            venv_tool=merged.get("venv_tool", "venv"),
            pins=ctx.root / merged["pins"],
            patches=ctx.root / merged["patches"],
            unit=list(merged.get("unit", [])),
            check_commits=bool(merged.get("check_commits", False)),
            enabled=bool(merged.get("enabled", True)),
            pip_args=list(merged.get("pip_args", [])),
            env={k: str(v) for k, v in merged["env"].items()},
            note=merged.get("note", ""),
            optional_interpreter=bool(merged.get("optional_interpreter", False)),
        )
    return targets


def get(ctx, name):
    """The target called ``name``; HarnessError (one line) if unknown."""
    targets = load(ctx)
    if name not in targets:
        raise HarnessError(f"unknown target {name!r} (known: {', '.join(targets)})")
    return targets[name]


def placeholders(ctx, path=None):
    """Bug-number placeholders: ``{"main": "NNNNNNN", ...}`` from ``[bugs]``."""
    path = pathlib.Path(path or ctx.root / TARGETS_FILE)
    return dict(tomllib.loads(path.read_text()).get("bugs", {}))
