"""Running the planned hooks on a commit's (or the series') files."""

import difflib
import pathlib
import shutil
import tempfile

from novaseries.outcomes import Outcome
from novaseries.pep8job import tools
from novaseries.pep8job.plan import plan, selected, tox_problems
from novaseries.pep8job.tools import SHOW_LINES, pinned
from novaseries.util import say

#: Root files a fixer's scratch copy gets: where autopep8 reads its
#: settings (pyproject.toml's [tool.autopep8]; [pep8], [pycodestyle] and
#: [flake8] of setup.cfg, tox.ini, .pep8, .flake8).
ROOT_CONFIG_FILES = ("pyproject.toml", "setup.cfg", "tox.ini", ".pep8", ".flake8")
#: What makes the hacking hook's flake8 the target venv's flake8.
FLAKE8_SET = ("hacking", "flake8", "pycodestyle", "pyflakes", "mccabe")


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
        ok, output = tools.run_tool(venv, hook.entry, hook.args, files, scratch)
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
            venvs[venv_name] = tools.tool_venv(ctx, venv_name)
        return venvs[venv_name]
    config, tags = tools.probe(venv_for(f"pep8-{target.release}"), tree, files)
    job = plan(ctx, target, config)
    problems = job.problems + tox_problems(tree)
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
    ok, output = tools.run_tool(venv, hook.entry, args, files, tree)
    return ok, output[:2 * SHOW_LINES]
