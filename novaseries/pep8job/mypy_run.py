"""The release's mypy, once per release on its ``-all`` tree (a ci step)."""

import dataclasses
import pathlib
import re
import subprocess
import time

from novaseries.outcomes import Outcome
from novaseries.pep8job import tools
from novaseries.pep8job.plan import PRE_COMMIT_RUN, plan, selected
from novaseries.pep8job.tools import (CONFIG, SHOW_LINES, pinned, proc_output, tool_env,
                                      tox_commands, tox_ini)
from novaseries.util import HarnessError, canonical, git, pins_file, say

#: ``[testenv:mypy]`` commands: mypy from tox (33.x, 34.0.0), or the hook.
MYPY_FROM_TOX = "mypy"
MYPY_HOOK = PRE_COMMIT_RUN + " mypy"


def run_mypy(ctx, target, tree):
    """The release's mypy on ``tree`` (its ``-all`` tree at HEAD), as its
    pep8 job runs it: ``[testenv:mypy]``'s ``mypy`` with the tree's own
    config (33.x, 34.0.0; each of the env's deps must be in the tool
    pins), or the config's mypy hook (31.x, 32.x: its args on the tracked
    files its filters select).  The cache goes to
    ``build/results/<target>/mypy-cache`` (the tree stays clean).  One
    Outcome (failed, not raised, when the venv or the command cannot be
    had); mypy's errors (file:line) in the log on failure."""
    label = f"{target.name} mypy"
    start = time.monotonic()
    try:
        venv = tools.tool_venv(ctx, f"pep8-{target.release}")
        pins = pins_file(ctx.root, f"pep8-{target.release}")
        cmd, what = _mypy_command(ctx, target, tree, venv, pins)
    except HarnessError as exc:
        say(f"  [{label}] {exc}\n{exc.details}".rstrip())
        return Outcome(label, failed=1, note=str(exc))
    cache = ctx.results(target.name) / "mypy-cache"
    cache.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run([str(pathlib.Path(venv, "bin", cmd[0])), "--cache-dir", str(cache),
                           *cmd[1:]], cwd=tree, env=tool_env(venv), stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, errors="replace")
    lines = proc_output(proc).splitlines()
    name = f"{label} (mypy {pinned(pins).get('mypy')}, {what})"
    say(f"[{label}] {time.monotonic() - start:.0f} s: {lines[-1] if lines else ''}")
    if proc.returncode:
        say("\n".join("    " + line for line in lines[:4 * SHOW_LINES]))
        return Outcome(name, failed=1, note=lines[-1] if lines else
                       f"mypy exited {proc.returncode}")
    return Outcome(name, passed=1)


def _mypy_command(ctx, target, tree, venv, pins):
    """``(command, what)`` of the tree's mypy run (see :func:`run_mypy`).

    :raises HarnessError: what the tree runs is not what this module
        declares, or the pins lack something it installs.
    """
    commands = tox_commands(tree, "mypy")
    if commands == [MYPY_FROM_TOX]:
        parser = tox_ini(tree)
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
        config, _ = tools.probe(venv, tree, [])
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
        _, tags = tools.probe(venv, tree, by_path)
        files = [f for f in by_path if selected(f, tags[f], job, hook)]
        if not files:
            raise HarnessError(f"the mypy hook of {CONFIG} selects no file")
        return (["mypy", *hook.args, *files],
                f"the {CONFIG} hook {hooks[0].rev}, {len(files)} files")
    raise HarnessError(f"tox.ini [testenv:mypy] runs {commands}, which this harness does "
                       "not (novaseries/pep8job/mypy_run.py)")
