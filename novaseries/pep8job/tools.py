"""The pep8 job's tools: their venvs (one per release, one per hacking
version, from ``pins/``), their environment, the tree's config and tox.ini
as read, and a tool's run."""

import configparser
import json
import os
import pathlib
import subprocess

from novaseries import util, venv_build, venvs
from novaseries.util import HarnessError, git_env

#: The tree's pre-commit config.
CONFIG = ".pre-commit-config.yaml"
#: Bump when the tool venvs' recipe changes, to rebuild them.
RECIPE = "1"
#: First lines of a failed tool's output shown in the log (a multiple of
#: it for some: see the callers): its first findings, where a log's tail
#: (:data:`~novaseries.util.LOG_TAIL_LINES`) shows where a run ended.
SHOW_LINES = 40


def pinned(path):
    """``{canonical name: version}`` of a pins file's ``name==version``
    lines (:func:`novaseries.util.pin_lines`)."""
    return dict(util.pin_lines(path))


def tool_env(venv):
    """The environment of a tool of ``venv``: no user or system git
    configuration (:func:`~novaseries.util.git_env`), UTF-8, the venv
    first on PATH and its ``VIRTUAL_ENV``, none of the harness's
    :data:`~novaseries.venvs.PYTHON_ENV_VARS`."""
    env = git_env()
    for key in venvs.PYTHON_ENV_VARS:
        env.pop(key, None)
    env.update(LC_ALL="C.UTF-8", LANG="C.UTF-8", PYTHONDONTWRITEBYTECODE="1")
    if venv is not None:
        env["PATH"] = f"{venv}/bin{os.pathsep}{env.get('PATH', '')}"
        env["VIRTUAL_ENV"] = str(venv)
    return env


def tool_venv(ctx, name):
    """Create or reuse ``build/venvs/NAME`` from its pins
    (:func:`novaseries.util.pins_file`)
    with :data:`novaseries.venv_build.TOOLS_PYTHON`
    (:func:`novaseries.venv_build.pinned_venv`, recipe :data:`RECIPE`); its path.

    :raises HarnessError: the pins file is missing, no interpreter, or the
        venv does not install.
    """
    return venv_build.pinned_venv(
        ctx.venv(name), venv_build.find_interpreter(venv_build.TOOLS_PYTHON),
        util.pins_file(ctx.root, name), RECIPE,
        ctx.results(name) / venv_build.VENV_INSTALL_LOG, what="pep8 tools")


def probe(venv, tree, files):
    """``(config, {path: tags})``: the tree's parsed config and the
    identify tags of ``files``, read in the tool venv
    (:mod:`novaseries.nova_side.pep8probe`, from the checkout this module is in).

    :raises HarnessError: the probe failed (the config does not parse).
    """
    env = tool_env(venv)
    env["PYTHONPATH"] = str(util.PACKAGE_PARENT)
    proc = subprocess.run([str(pathlib.Path(venv, "bin", "python")), "-m",
                           "novaseries.nova_side.pep8probe"], cwd=tree, env=env, text=True,
                          input=json.dumps({"config": CONFIG, "files": list(files)}),
                          capture_output=True)
    if proc.returncode:
        raise HarnessError(f"cannot read {tree}/{CONFIG} (novaseries.nova_side.pep8probe exited "
                           f"{proc.returncode})", proc.stderr[-2000:])
    data = json.loads(proc.stdout)
    return data["config"], data["tags"]


def proc_output(proc):
    """A finished process's stdout then stderr, stripped."""
    return ((proc.stdout or "") + (proc.stderr or "")).strip()


def run_tool(venv, entry, args, files, cwd):
    """Run ``entry`` of ``venv`` with ``args`` and ``files`` in ``cwd``;
    ``(ok, output lines)``."""
    proc = subprocess.run([str(pathlib.Path(venv, "bin", entry)), *args, *files], cwd=cwd,
                          env=tool_env(venv), stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, errors="replace")
    return proc.returncode == 0, proc_output(proc).splitlines()


def tox_ini(tree):
    """The tree's tox.ini, parsed (no interpolation)."""
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.read(pathlib.Path(tree, "tox.ini"), encoding="utf-8")
    return parser


def tox_commands(tree, env):
    """The commands of tox.ini's ``[testenv:ENV]`` (one per line, comments
    dropped), or None when it has no such env."""
    parser = tox_ini(tree)
    section = f"testenv:{env}"
    if not parser.has_section(section) or "commands" not in parser[section]:
        return None
    return [" ".join(line.split()) for line in parser[section]["commands"].splitlines()
            if line.strip()]
