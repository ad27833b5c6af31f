"""The hooks of a tree's ``.pre-commit-config.yaml`` as the harness runs
them: what each hook repository's manifest declares (:data:`REPOS`), and
the :class:`Plan` of a config against those declarations."""

import dataclasses
import pathlib
import re

from novaseries.pep8job.tools import CONFIG, pinned, tox_commands
from novaseries.util import canonical, pins_file

#: How a hook runs here: ``check`` its entry in the tree (a non-zero exit
#: fails), ``fix`` its entry on a scratch copy (a change or a non-zero exit
#: fails), ``tabs`` the harness's remove-tabs check
#: (:func:`novaseries.pep8job.hooks.tabs`), ``added`` its entry on the
#: added files only, ``hacking`` flake8 from the hacking venv, ``mypy`` in
#: the mypy step only (:func:`novaseries.pep8job.mypy_run.run_mypy`).
HOOK_KINDS = ("check", "fix", "tabs", "added", "hacking", "mypy")


@dataclasses.dataclass(frozen=True)
class Hook:
    """A hook as its repository's ``.pre-commit-hooks.yaml`` declares it
    (pre-commit's defaults where it says nothing), and how it runs here."""

    #: console script of the tool venv ("" for the harness's own check)
    entry: str
    kind: str = "check"
    types: tuple = ("file",)
    types_or: tuple = ()
    exclude_types: tuple = ()
    files: str = ""
    exclude: str = "^$"
    args: tuple = ()
    additional_dependencies: tuple = ()
    #: only at these revisions of its repository (empty: at every one)
    revs: tuple = ()


@dataclasses.dataclass(frozen=True)
class HookRepo:
    """A hook repository: the PyPI package that holds its hooks (None:
    checked here), the revisions whose manifests :attr:`hooks` hold
    (checked against the upstream repositories' tags when written), and
    which tool venv has it: ``pep8`` (``pins/pep8-<release>.txt``) or
    ``hacking`` (``pins/hacking-<version>.txt``)."""

    package: str
    revs: tuple
    hooks: dict
    venv: str = "pep8"


#: pre-commit/pre-commit-hooks: the hooks Nova's configs use (v5.0.0 and
#: v6.0.0 declare them alike; check-byte-order-marker is gone in v6.0.0).
PRE_COMMIT_HOOKS = {
    "trailing-whitespace": Hook("trailing-whitespace-fixer", "fix", types=("text",)),
    "mixed-line-ending": Hook("mixed-line-ending", "fix", types=("text",)),
    "fix-byte-order-marker": Hook("fix-byte-order-marker", "fix", types=("text",)),
    "check-byte-order-marker": Hook("check-byte-order-marker", types=("text",),
                                    revs=("v5.0.0",)),
    "check-executables-have-shebangs": Hook("check-executables-have-shebangs",
                                            types=("text", "executable")),
    "check-shebang-scripts-are-executable": Hook("check-shebang-scripts-are-executable",
                                                 types=("text",)),
    "check-json": Hook("check-json", types=("json",)),
    "check-yaml": Hook("check-yaml", types=("yaml",)),
    "check-added-large-files": Hook("check-added-large-files", "added"),
    "check-merge-conflict": Hook("check-merge-conflict", types=("text",)),
    "check-case-conflict": Hook("check-case-conflict"),
    "detect-private-key": Hook("detect-private-key", types=("text",)),
    "debug-statements": Hook("debug-statement-hook", types=("python",)),
    "check-docstring-first": Hook("check-docstring-first", types=("python",)),
}

#: Every hook repository a Nova release's config may name, by URL.
REPOS = {
    "https://github.com/pre-commit/pre-commit-hooks": HookRepo(
        "pre-commit-hooks", ("v5.0.0", "v6.0.0"), PRE_COMMIT_HOOKS),
    # v1.5.5's manifest (and its successor's on master); not on PyPI
    "https://github.com/Lucas-C/pre-commit-hooks": HookRepo(None, ("v1.5.5", "v1.5.6"), {
        "remove-tabs": Hook("", "tabs", types=("text",), args=("--whitespaces-count", "4"),
                            exclude=r"(Makefile|debian/rules|.gitmodules)(\.in)?$")}),
    "https://github.com/hhatto/autopep8": HookRepo("autopep8", ("v2.3.1", "v2.3.2"), {
        "autopep8": Hook("autopep8", "fix", types=("python",), args=("-i",))}),
    "https://opendev.org/openstack/hacking": HookRepo("hacking", ("7.0.0", "8.0.0"), {
        "hacking": Hook("flake8", "hacking", types=("python",),
                        additional_dependencies=(".[pep257]",))}, venv="hacking"),
    "https://github.com/codespell-project/codespell": HookRepo(
        "codespell", ("v2.3.0", "v2.4.1"), {"codespell": Hook("codespell", types=("text",))}),
    "https://github.com/sphinx-contrib/sphinx-lint": HookRepo(
        "sphinx-lint", ("v1.0.0", "v1.0.2"), {"sphinx-lint": Hook("sphinx-lint",
                                                                  types=("rst",))}),
    "https://github.com/pre-commit/mirrors-mypy": HookRepo("mypy", ("v1.12.0", "v1.15.0"), {
        "mypy": Hook("mypy", "mypy", types_or=("python", "pyi"),
                     args=("--ignore-missing-imports", "--scripts-are-modules"))}),
}

#: Keys of the config this module understands (anything else fails).
CONFIG_KEYS = {"repos", "files", "exclude"}
REPO_KEYS = {"repo", "rev", "hooks"}
HOOK_KEYS = {"id", "name", "description", "args", "files", "exclude", "types", "types_or",
             "exclude_types", "additional_dependencies"}
#: ``[testenv:pep8]`` commands of the releases with pre-commit that this
#: harness runs (the second: 33.x and 34.0.0's mypy,
#: :func:`novaseries.pep8job.mypy_run.run_mypy`).
PRE_COMMIT_RUN = "pre-commit run --all-files --show-diff-on-failure"
PEP8_COMMANDS = {PRE_COMMIT_RUN, "{[testenv:mypy]commands}"}


@dataclasses.dataclass
class Planned:
    """One hook of a tree's config, as it runs: the declared hook with the
    config's own args and filters, and the venv and pins it needs."""

    id: str
    repo: str
    rev: str
    hook: Hook
    #: the tool venv's name under build/venvs (None: no tool)
    venv: str
    pins: pathlib.Path


@dataclasses.dataclass
class Plan:
    """A tree's pep8 job as the harness runs it: the config's top-level
    filters, its hooks in order, and what does not match the declarations
    (``problems``: the check fails on any)."""

    files: str = ""
    exclude: str = "^$"
    hooks: list = dataclasses.field(default_factory=list)
    problems: list = dataclasses.field(default_factory=list)


def _strings(value):
    return tuple(str(v) for v in value)


def plan(ctx, target, config):
    """The :class:`Plan` of a parsed ``.pre-commit-config.yaml``: each hook
    declared in :data:`REPOS` for its repository and revision, with the
    config's args and filters over the manifest's, its venv and pins
    (``pins/pep8-<release>.txt``, ``pins/hacking-<version>.txt``); every
    difference from the declarations, and every tool pins file that does
    not pin a hook's package at its revision (or its additional
    dependencies), is a problem."""
    result = Plan()
    if not isinstance(config, dict) or not isinstance(config.get("repos"), list):
        result.problems.append(f"{CONFIG}: no list of repos")
        return result
    for key in sorted(set(config) - CONFIG_KEYS):
        result.problems.append(f"{CONFIG}: top-level key {key!r} is not handled here")
    result.files = config.get("files", "")
    result.exclude = config.get("exclude", "^$")
    for entry in config["repos"]:
        url, rev = entry.get("repo"), str(entry.get("rev"))
        for key in sorted(set(entry) - REPO_KEYS):
            result.problems.append(f"repo {url}: key {key!r} is not handled here")
        declared = REPOS.get(url)
        if declared is None:
            result.problems.append(f"repo {url} ({rev}) is not declared in "
                                   "novaseries/pep8job/plan.py REPOS")
            continue
        if rev not in declared.revs:
            result.problems.append(f"repo {url}: rev {rev} is not declared (declared: "
                                   f"{', '.join(declared.revs)})")
            continue
        version = rev.removeprefix("v")
        venv = f"hacking-{version}" if declared.venv == "hacking" else f"pep8-{target.release}"
        pins = pins_file(ctx.root, venv)
        for item in entry.get("hooks") or []:
            hook_id = item.get("id")
            hook = declared.hooks.get(hook_id)
            if hook is None or hook.revs and rev not in hook.revs:
                result.problems.append(f"repo {url} {rev}: hook {hook_id!r} is not declared")
                continue
            for key in sorted(set(item) - HOOK_KEYS):
                result.problems.append(f"hook {hook_id}: key {key!r} is not handled here")
            overrides = {}
            for key in ("files", "exclude"):
                if key in item:
                    overrides[key] = str(item[key])
            for key in ("types", "types_or", "exclude_types", "args",
                        "additional_dependencies"):
                if key in item:
                    overrides[key] = _strings(item[key] or [])
            hook = dataclasses.replace(hook, **overrides)
            result.hooks.append(Planned(hook_id, url, rev, hook,
                                        venv if declared.package else None, pins))
            if declared.package:
                result.problems += _pin_problems(hook_id, pins, declared.package, version,
                                                 hook.additional_dependencies)
    return result


def _pin_problems(hook_id, pins, package, version, additional):
    """What ``pins`` lacks for a hook: its package at ``version``, each of
    its additional dependencies (a local extra such as ``.[pep257]`` is
    not installed here)."""
    if not pins.is_file():
        return [f"hook {hook_id}: pins file {pins.name} is missing"]
    have = pinned(pins)
    problems = []
    if have.get(canonical(package)) != version:
        problems.append(f"hook {hook_id}: {pins.name} pins {package} "
                        f"{have.get(canonical(package), '(none)')}, the config's rev is "
                        f"{version}")
    for dependency in additional:
        name = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", dependency)
        if dependency.startswith(".") or not name or canonical(name.group(0)) not in have:
            problems.append(f"hook {hook_id}: additional dependency {dependency!r} is not "
                            f"in {pins.name}")
    return problems


def selected(path, tags, top, hook):
    """Whether pre-commit runs ``hook`` on ``path`` (whose identify
    ``tags`` are given): the config's top-level ``files``/``exclude``,
    then the hook's, each a regex searched in the path; then ``types``
    (all of them), ``types_or`` (any) and ``exclude_types`` (none)."""
    tags = set(tags)
    return bool(re.search(top.files, path) and not re.search(top.exclude, path) and
                re.search(hook.files, path) and not re.search(hook.exclude, path) and
                set(hook.types) <= tags and
                (not hook.types_or or tags & set(hook.types_or)) and
                not tags & set(hook.exclude_types))


def tox_problems(tree):
    """Commands of the tree's ``[testenv:pep8]`` the harness does not run."""
    commands = tox_commands(tree, "pep8") or []
    return [f"tox.ini [testenv:pep8] runs {command!r}, which the harness does not"
            for command in commands if command not in PEP8_COMMANDS]
