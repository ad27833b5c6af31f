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
  args and filters) is declared here, per repository and revision
  (:data:`REPOS`), with the PyPI package that holds it.  A repository,
  revision, hook or config key not declared here, a tool pins file that
  does not pin the package at the hook's revision, or a pep8 or mypy tox
  command that is not the one this module runs, fails the check with
  what differs (:func:`plan`): the checks cannot drift from the tree's
  config unseen;
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
  is pre-commit-hooks', which PyPI holds) is checked here: a tab in a
  text file it selects fails;
* ``check-added-large-files`` checks the files the commit (or the series)
  adds, as when they were committed (``--enforce-all``: the job's
  ``--all-files`` run stages nothing and so checks nothing);
  ``check-merge-conflict`` runs as in the job, where it checks nothing
  outside a merge;
* mypy runs once per release on its ``-all`` tree (:func:`run_mypy`, a ci
  step), the command of ``[testenv:mypy]`` (33.x, 34.0.0) or the hook's
  (31.x, 32.x: the hook's default args on the tracked files its ``files``
  selects);
* pike (no pre-commit): its ``tox -e pep8`` is flake8 (``flake8_run.run_flake8``,
  with pike's hacking, in its Python 2.7 venv) and the JSON checks of
  ``doc/`` (no carriage return; ``python -m json.tool`` reads it), on the
  touched JSON files under ``doc/``.
"""

import configparser
import dataclasses
import difflib
import hashlib
import json
import os
import pathlib
import re
import shutil
import subprocess
import tempfile
import time

from novaseries.outcomes import Outcome
from novaseries.tree import changed_files
from novaseries.util import (HarnessError, build_venv, find_interpreter, git, git_env,
                             interpreter_identity, say)

CONFIG = ".pre-commit-config.yaml"
#: The tool venvs' interpreter (pre-commit's own Python in the job).
TOOL_INTERPRETER = "python3.11"
#: Bump when the tool venvs' recipe changes, to rebuild them.
RECIPE = "1"
#: Root files a fixer's scratch copy gets: where autopep8 reads its
#: settings (pyproject.toml's [tool.autopep8]; [pep8], [pycodestyle] and
#: [flake8] of setup.cfg, tox.ini, .pep8, .flake8).
ROOT_CONFIG_FILES = ("pyproject.toml", "setup.cfg", "tox.ini", ".pep8", ".flake8")
#: Output lines of a failed hook shown in the log.
SHOW_LINES = 40

#: How a hook runs here: ``check`` its entry in the tree (a non-zero exit
#: fails), ``fix`` its entry on a scratch copy (a change or a non-zero exit
#: fails), ``tabs`` this module's remove-tabs check, ``added`` its entry
#: on the added files only, ``hacking`` flake8 from the hacking venv,
#: ``mypy`` in the mypy step only (:func:`run_mypy`).
KINDS = ("check", "fix", "tabs", "added", "hacking", "mypy")


@dataclasses.dataclass(frozen=True)
class Hook:
    """A hook as its repository's ``.pre-commit-hooks.yaml`` declares it
    (pre-commit's defaults where it says nothing), and how it runs here."""

    #: console script of the tool venv ("" for this module's own check)
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
#: module runs (the second: 33.x and 34.0.0's mypy, :func:`run_mypy`).
PRE_COMMIT_RUN = "pre-commit run --all-files --show-diff-on-failure"
PEP8_COMMANDS = {PRE_COMMIT_RUN, "{[testenv:mypy]commands}"}
#: ``[testenv:mypy]`` commands: mypy from tox (33.x, 34.0.0), or the hook.
MYPY_FROM_TOX = "mypy"
MYPY_HOOK = PRE_COMMIT_RUN + " mypy"
#: pike's ``[testenv:pep8]`` commands, all of which run here: flake8
#: (``flake8_run.run_flake8``) and the two JSON checks of doc/.
LEGACY_PEP8 = (
    "bash tools/flake8wrap.sh {posargs}",
    "bash -c \"! find doc/ -type f -name *.json | xargs grep -U -n $'\\r'\"",
    "bash -c '! find doc/ -type f -name *.json | xargs -t -n1 python -m json.tool 2>&1 "
    "> /dev/null | grep -B1 -v ^python'",
)
#: What makes the hacking hook's flake8 the target venv's flake8.
FLAKE8_SET = ("hacking", "flake8", "pycodestyle", "pyflakes", "mccabe")


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
    """A tree's pep8 job as this module runs it: the config's top-level
    filters, its hooks in order, and what does not match the declarations
    (``problems``: the check fails on any)."""

    files: str = ""
    exclude: str = "^$"
    hooks: list = dataclasses.field(default_factory=list)
    problems: list = dataclasses.field(default_factory=list)


def canonical(name):
    """A distribution name as pip compares it."""
    return re.sub(r"[-_.]+", "-", name).lower()


def pinned(path):
    """``{canonical name: version}`` of a pins file's ``name==version``
    lines."""
    found = {}
    for line in pathlib.Path(path).read_text().splitlines():
        match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*([^\s;#]+)", line)
        if match:
            found[canonical(match.group(1))] = match.group(2)
    return found


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
    pep8_pins = ctx.root / "pins" / f"pep8-{target.release}.txt"
    for entry in config["repos"]:
        url, rev = entry.get("repo"), str(entry.get("rev"))
        for key in sorted(set(entry) - REPO_KEYS):
            result.problems.append(f"repo {url}: key {key!r} is not handled here")
        declared = REPOS.get(url)
        if declared is None:
            result.problems.append(f"repo {url} ({rev}) is not declared in "
                                   "novaseries/pep8job.py REPOS")
            continue
        if rev not in declared.revs:
            result.problems.append(f"repo {url}: rev {rev} is not declared (declared: "
                                   f"{', '.join(declared.revs)})")
            continue
        version = rev.removeprefix("v")
        if declared.venv == "hacking":
            venv, pins = f"hacking-{version}", ctx.root / "pins" / f"hacking-{version}.txt"
        else:
            venv, pins = f"pep8-{target.release}", pep8_pins
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


def tool_env(venv):
    """The environment of a tool of ``venv``: no user or system git
    configuration (:func:`~novaseries.util.git_env`), UTF-8, the venv
    first on PATH, no PYTHONPATH."""
    env = git_env()
    for key in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV"):
        env.pop(key, None)
    env.update(LC_ALL="C.UTF-8", LANG="C.UTF-8", PYTHONDONTWRITEBYTECODE="1")
    if venv is not None:
        env["PATH"] = f"{venv}/bin{os.pathsep}{env.get('PATH', '')}"
        env["VIRTUAL_ENV"] = str(venv)
    return env


def tool_venv(ctx, name):
    """Create or reuse ``build/venvs/NAME`` from ``pins/NAME.txt`` with
    :data:`TOOL_INTERPRETER` (reused while the pins, the recipe and the
    interpreter's identity are unchanged); its path."""
    pins = ctx.root / "pins" / f"{name}.txt"
    if not pins.is_file():
        raise HarnessError(f"pins file {pins} is missing")
    interpreter = find_interpreter(TOOL_INTERPRETER)
    digest = hashlib.sha256(pins.read_bytes())
    for part in (RECIPE, interpreter_identity(interpreter)):
        digest.update(b"\0" + part.encode())
    venv, _ = build_venv(ctx.venv(name), interpreter, [["-r", pins]], digest.hexdigest(),
                         ctx.results(name) / "venv-install.log", what="pep8 tools")
    return venv


def probe(venv, tree, files):
    """``(config, {path: tags})``: the tree's parsed config and the
    identify tags of ``files``, read in the tool venv
    (:mod:`novaseries.nova_side.pep8probe`, from the checkout this module is in)."""
    env = tool_env(venv)
    env["PYTHONPATH"] = str(pathlib.Path(__file__).resolve().parent.parent)
    proc = subprocess.run([str(pathlib.Path(venv, "bin", "python")), "-m",
                           "novaseries.nova_side.pep8probe"], cwd=tree, env=env, text=True,
                          input=json.dumps({"config": CONFIG, "files": list(files)}),
                          capture_output=True)
    if proc.returncode:
        raise HarnessError(f"cannot read {tree}/{CONFIG} (novaseries.nova_side.pep8probe exited "
                           f"{proc.returncode})", proc.stderr[-2000:])
    data = json.loads(proc.stdout)
    return data["config"], data["tags"]


def touched_files(tree, rev, touched):
    """The files to check: ``touched`` (a commit's own) or those the
    series adds or modifies up to ``rev``; only those that exist there."""
    files = changed_files(tree, rev) if touched is None else touched
    return [f for f in files if f and os.path.lexists(os.path.join(tree, f))]


def added_files(tree, rev, touched):
    """The files the commit (``touched`` given) or the series adds."""
    return set(changed_files(tree, rev, since=f"{rev}~1" if touched is not None else "base",
                             diff_filter="A"))


def _output(proc):
    return ((proc.stdout or "") + (proc.stderr or "")).strip()


def _tool(venv, entry, args, files, cwd):
    """Run ``entry`` of ``venv`` with ``args`` and ``files`` in ``cwd``;
    ``(ok, output lines)``."""
    proc = subprocess.run([str(pathlib.Path(venv, "bin", entry)), *args, *files], cwd=cwd,
                          env=tool_env(venv), stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, errors="replace")
    return proc.returncode == 0, _output(proc).splitlines()


def changed_lines(path, before, after, hook_id):
    """Lines saying what a fixer changed in ``path``: each changed line of
    the original (``repr``, so that whitespace, tabs, carriage returns and
    byte-order marks show), then a unified diff."""
    old = before.decode("utf-8", "replace").splitlines(True)
    new = after.decode("utf-8", "replace").splitlines(True)
    lines = []
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, _, _ in matcher.get_opcodes():
        if tag != "equal":
            lines += [f"{path}:{n + 1}: {hook_id} changes {old[n]!r}"
                      for n in range(i1, i2)] or [f"{path}:{i1 + 1}: {hook_id} inserts lines"]
    diff = list(difflib.unified_diff(old, new, f"a/{path}", f"b/{path}"))
    return lines[:SHOW_LINES] + [line.rstrip("\n") for line in diff[:SHOW_LINES]]


def _fix(venv, hook, files, tree):
    """A fixer on a scratch copy of ``files`` (and the tree's root config
    files); ``(ok, lines)``: not ok when it changed a file or exited
    non-zero."""
    with tempfile.TemporaryDirectory(prefix="novaseries-pep8-") as scratch:
        for name in [*ROOT_CONFIG_FILES, *files]:
            source = pathlib.Path(tree, name)
            if source.is_file():
                copy = pathlib.Path(scratch, name)
                copy.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, copy)
        ok, output = _tool(venv, hook.entry, hook.args, files, scratch)
        lines, changed = [], []
        for name in files:
            before = pathlib.Path(tree, name).read_bytes()
            after = pathlib.Path(scratch, name).read_bytes()
            if before != after:
                changed.append(name)
                lines += changed_lines(name, before, after, hook.entry)
    if changed:
        lines.insert(0, f"would change: {', '.join(changed)}")
    return ok and not changed, output[:SHOW_LINES] + lines


def tabs(files, tree):
    """Lucas-C's remove-tabs as a check: ``(ok, lines)``, a line per tab
    (at most :data:`SHOW_LINES`)."""
    lines = []
    for name in files:
        data = pathlib.Path(tree, name).read_bytes()
        if b"\t" in data:
            lines += [f"{name}:{n}: remove-tabs: a tab" for n, line in
                      enumerate(data.split(b"\n"), start=1) if b"\t" in line]
    return not lines, lines[:SHOW_LINES]


def flake8_is_hook(target, hacking_pins):
    """Whether the target's own flake8 (its venv: ``flake8_run.run_flake8``)
    is the hacking hook's: the same versions of :data:`FLAKE8_SET`."""
    if not hacking_pins.is_file() or not target.pins.is_file():
        return False
    own, hook = pinned(target.pins), pinned(hacking_pins)
    return all(name in hook and own.get(name) == hook[name] for name in FLAKE8_SET)


def run(ctx, target, tree, venv, rev="HEAD", label=None, touched=None):
    """The pep8 job's checks on the files touched by ``base..rev`` (or
    ``touched``: a commit's own), for ``testrun.test_tree``: the hooks of
    the tree's ``.pre-commit-config.yaml`` (:func:`run_hooks`), or pike's
    JSON checks (:func:`run_legacy`; its flake8 is ``flake8_run.run_flake8``).
    ``venv``: the target's own venv.  Returns a list of Outcomes; a
    failure to set up (a venv that does not install, a config that cannot
    be read) is a failed Outcome, not an exception."""
    label = label or f"{target.name}@{rev}"
    start = time.monotonic()
    try:
        files = touched_files(tree, rev, touched)
        if pathlib.Path(tree, CONFIG).is_file():
            outcomes = run_hooks(ctx, target, tree, files, label,
                                 added=lambda: added_files(tree, rev, touched))
        else:
            outcomes = run_legacy(tree, venv, files, label)
    except HarnessError as exc:
        say(f"  [{label}] pep8 job: {exc}\n{exc.details}".rstrip())
        outcomes = [Outcome(f"{label} pep8 job", failed=1, note=str(exc))]
    say(f"[{label}] pep8 job checks: {time.monotonic() - start:.1f} s")
    return outcomes


def run_hooks(ctx, target, tree, files, label, added=set):
    """The config's hooks on ``files`` (``added``: a function returning the
    added files, for check-added-large-files); one Outcome counting the
    hooks that ran (passed or failed), its note naming each failed hook
    and its files; every failure's details (file, line, tool output, the
    fixer's diff) in the log."""
    name = f"{label} pep8 hooks ({len(files)} files)"
    venvs = {}

    def venv_for(venv_name):  # each tool venv made or reused once per run
        if venv_name not in venvs:
            venvs[venv_name] = tool_venv(ctx, venv_name)
        return venvs[venv_name]
    config, tags = probe(venv_for(f"pep8-{target.release}"), tree, files)
    job = plan(ctx, target, config)
    problems = job.problems + _tox_problems(tree)
    if problems:
        for problem in problems:
            say(f"  [{label}] pep8 job: {problem}")
        return [Outcome(name, failed=1, note="config drift: " + "; ".join(problems))]
    passed, failed, notes = 0, [], []
    for planned in job.hooks:
        hook = planned.hook
        chosen = [f for f in files if selected(f, tags.get(f, ()), job, hook)]
        if hook.kind == "added":
            new = added()
            chosen = [f for f in chosen if f in new]
        if not chosen:
            continue
        if hook.kind == "mypy":
            notes.append("mypy: once per release on its -all tree (ci step)")
            continue
        if hook.kind == "hacking" and flake8_is_hook(target, planned.pins) and \
                all(f.endswith(".py") for f in chosen):
            notes.append(f"hacking {planned.rev}: the flake8 run (same versions)")
            continue
        ok, lines = _run_hook(planned, chosen, tree, venv_for)
        if ok:
            passed += 1
            continue
        shown = chosen if len(chosen) < 4 else chosen[:1] + [f"{len(chosen) - 1} more"]
        failed.append(f"{planned.id} ({', '.join(shown)})")
        say(f"  [{label}] pep8 hook {planned.id} ({planned.repo} {planned.rev}) FAILED "
            f"on {', '.join(chosen)}")
        say("\n".join("    " + line for line in lines[:2 * SHOW_LINES]))
    note = "; ".join(([f"failed: {', '.join(failed)}"] if failed else []) + notes)
    return [Outcome(name, passed=passed, failed=len(failed), note=note)]


def _run_hook(planned, files, tree, venv_for):
    """Run one planned hook on ``files`` (``venv_for(name)``: the tool
    venv of that name); ``(ok, lines)``."""
    hook = planned.hook
    if hook.kind == "tabs":
        return tabs(files, tree)
    venv = venv_for(planned.venv)
    if hook.kind == "fix":
        return _fix(venv, hook, files, tree)
    args = list(hook.args) + (["--enforce-all"] if hook.kind == "added" else [])
    ok, output = _tool(venv, hook.entry, args, files, tree)
    return ok, output[:2 * SHOW_LINES]


def _tox(tree):
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.read(pathlib.Path(tree, "tox.ini"), encoding="utf-8")
    return parser


def tox_commands(tree, env):
    """The commands of tox.ini's ``[testenv:ENV]`` (one per line, comments
    dropped), or None when it has no such env."""
    parser = _tox(tree)
    section = f"testenv:{env}"
    if not parser.has_section(section) or "commands" not in parser[section]:
        return None
    return [" ".join(line.split()) for line in parser[section]["commands"].splitlines()
            if line.strip()]


def _tox_problems(tree):
    """Commands of ``[testenv:pep8]`` this module does not run."""
    commands = tox_commands(tree, "pep8") or []
    return [f"tox.ini [testenv:pep8] runs {command!r}, which the harness does not"
            for command in commands if command not in PEP8_COMMANDS]


def run_legacy(tree, venv, files, label):
    """pike's ``tox -e pep8`` beyond flake8: no carriage return in, and
    ``python -m json.tool`` (the target venv's Python) reads, each touched
    JSON file under ``doc/``; one Outcome counting the two checks that
    ran.  Fails when tox.ini's pep8 commands are not :data:`LEGACY_PEP8`."""
    name = f"{label} pep8 JSON checks"
    commands = tox_commands(tree, "pep8")
    if commands != [" ".join(c.split()) for c in LEGACY_PEP8]:
        say(f"  [{label}] pep8 job: tox.ini [testenv:pep8] runs {commands}, which this "
            "harness does not (novaseries/pep8job.py LEGACY_PEP8)")
        return [Outcome(name, failed=1, note="config drift: tox.ini [testenv:pep8] is not "
                        "the declared one")]
    docs = [f for f in files if f.startswith("doc/") and f.endswith(".json") and
            pathlib.Path(tree, f).is_file()]
    if not docs:
        return [Outcome(name, note="no JSON file under doc/ touched (flake8: its own line)")]
    carriage, unreadable = {}, {}
    for doc in docs:
        lines = [n for n, line in enumerate(pathlib.Path(tree, doc).read_bytes().split(b"\n"),
                                            start=1) if b"\r" in line]
        if lines:
            carriage[doc] = [f"{doc}:{n}: carriage return" for n in lines]
        proc = subprocess.run([str(pathlib.Path(venv, "bin", "python")), "-m", "json.tool",
                               doc], cwd=tree, stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, errors="replace", env=tool_env(venv))
        if proc.returncode:
            unreadable[doc] = [f"{doc}: python -m json.tool: {_output(proc)}"]
    for line in [line for found in (carriage, unreadable) for lines in found.values()
                 for line in lines]:
        say(f"  [{label}] pep8 JSON check FAILED: {line}")
    note = "; ".join(f"{what}: {', '.join(found)}" for what, found in
                     (("carriage returns", carriage), ("not JSON", unreadable)) if found)
    failed = int(bool(carriage)) + int(bool(unreadable))
    return [Outcome(name, passed=2 - failed, failed=failed, note=note)]


def run_mypy(ctx, target, tree):
    """The release's mypy on ``tree`` (its ``-all`` tree at HEAD), as its
    pep8 job runs it: ``[testenv:mypy]``'s ``mypy`` with the tree's own
    config (33.x, 34.0.0; each of the env's deps must be in the tool
    pins), or the config's mypy hook (31.x, 32.x: its args on the tracked
    files its filters select).  The cache goes to
    ``build/results/<target>/mypy-cache`` (the tree stays clean).  One
    Outcome; mypy's errors (file:line) in the log on failure."""
    label = f"{target.name} mypy"
    start = time.monotonic()
    try:
        venv = tool_venv(ctx, f"pep8-{target.release}")
        pins = ctx.root / "pins" / f"pep8-{target.release}.txt"
        cmd, what = _mypy_command(ctx, target, tree, venv, pins)
    except HarnessError as exc:
        say(f"  [{label}] {exc}\n{exc.details}".rstrip())
        return Outcome(label, failed=1, note=str(exc))
    cache = ctx.results(target.name) / "mypy-cache"
    cache.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run([str(pathlib.Path(venv, "bin", cmd[0])), "--cache-dir", str(cache),
                           *cmd[1:]], cwd=tree, env=tool_env(venv), stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, errors="replace")
    output = _output(proc).splitlines()
    name = f"{label} (mypy {pinned(pins).get('mypy')}, {what})"
    say(f"[{label}] {time.monotonic() - start:.0f} s: {output[-1] if output else ''}")
    if proc.returncode:
        say("\n".join("    " + line for line in output[:4 * SHOW_LINES]))
        return Outcome(name, failed=1, note=output[-1] if output else
                       f"mypy exited {proc.returncode}")
    return Outcome(name, passed=1)


def _mypy_command(ctx, target, tree, venv, pins):
    """``(command, what)`` of the tree's mypy run (see :func:`run_mypy`).

    :raises HarnessError: what the tree runs is not what this module
        declares, or the pins lack something it installs.
    """
    commands = tox_commands(tree, "mypy")
    if commands == [MYPY_FROM_TOX]:
        parser = _tox(tree)
        deps = [line.split("#")[0].strip() for line in
                parser["testenv:mypy"].get("deps", "").splitlines()]
        have = pinned(pins)
        missing = [d for d in deps if d and canonical(re.split(r"[<>=!~;\[ ]", d)[0])
                   not in have]
        if missing:
            raise HarnessError(f"tox.ini [testenv:mypy] installs {', '.join(missing)}, "
                               f"which {pins.name} does not pin")
        return ["mypy"], "tox.ini [testenv:mypy], the tree's config"
    if commands == [MYPY_HOOK]:
        listed = [f for f in git(tree, "ls-files").splitlines() if f]
        config, _ = probe(venv, tree, [])
        job = plan(ctx, target, config)
        if job.problems:
            raise HarnessError("config drift: " + "; ".join(job.problems))
        hooks = [p for p in job.hooks if p.hook.kind == "mypy"]
        if len(hooks) != 1:
            raise HarnessError(f"{CONFIG} has {len(hooks)} mypy hooks (tox runs one)")
        hook = hooks[0].hook
        # (the path filters first: identify reads only the files they keep)
        by_path = [f for f in listed if selected(f, (), job, dataclasses.replace(
            hook, types=(), types_or=(), exclude_types=()))]
        _, tags = probe(venv, tree, by_path)
        files = [f for f in by_path if selected(f, tags[f], job, hook)]
        if not files:
            raise HarnessError(f"the mypy hook of {CONFIG} selects no file")
        return (["mypy", *hook.args, *files],
                f"the {CONFIG} hook {hooks[0].rev}, {len(files)} files")
    raise HarnessError(f"tox.ini [testenv:mypy] runs {commands}, which this harness does "
                       "not (novaseries/pep8job.py)")
