"""Interpreters and pinned venvs: find an interpreter by name, and build
a venv from its pins, reused while its recipe stamp is unchanged.

Every venv the harness makes (Nova's test venvs, the pep8 tools', the
Ironics') is built here.  Harness-side only: no module that Nova's venv
imports (``nova_side.HARNESS_MODULES``) imports this one.
"""

import hashlib
import os
import pathlib
import shutil
import subprocess
import sys
import time

from novaseries.util import LOG_TAIL_LINES, HarnessError, file_lock, run, say

#: The interpreter of the venvs the harness builds for its tools from ``pins/``
#: (the pep8 job's tools, the Ironic of pins/ironic.txt): their pins are frozen for it.
TOOLS_PYTHON = "python3.11"

#: The file in a venv holding its recipe stamp (:func:`recipe_digest`).
RECIPE_MARKER = "novaseries-recipe.sha256"

#: The log of a venv's installation, in its results folder.
VENV_INSTALL_LOG = "venv-install.log"


def interpreter_identity(executable):
    """What a venv made from ``executable`` depends on, without its path:
    implementation, full version and machine, e.g. ``cpython 3.11.7
    x86_64``.  A venv's interpreter and its base give the same answer.

    :raises HarnessError: the interpreter does not run.
    """
    code = ("import platform, sys; sys.stdout.write(' '.join(["
            "getattr(getattr(sys, 'implementation', None), 'name', 'cpython'), "
            "platform.python_version(), platform.machine()]) + '\\n')")
    try:
        proc = subprocess.run([str(executable), "-c", code], capture_output=True,
                              text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        raise HarnessError(f"interpreter {executable} does not run: {exc}")
    if proc.returncode != 0:
        raise HarnessError(f"interpreter {executable} does not run: {proc.stderr.strip()}")
    return proc.stdout.strip()


def recipe_digest(pins, *parts):
    """The recipe stamp of a venv built from the pins file ``pins``, which
    :func:`build_venv` compares with the one the venv was made with: the
    sha256 of the file's bytes, then of each of ``parts`` (str: the
    caller's recipe version, the interpreter's identity
    (:func:`interpreter_identity`), ...), each after a NUL byte.

    The one place every venv's stamp is composed (Nova's test venvs, the
    pep8 tool venvs, the Ironic venvs).
    """
    digest = hashlib.sha256(pathlib.Path(pins).read_bytes())
    for part in parts:
        digest.update(b"\0" + part.encode())
    return digest.hexdigest()


def build_venv(venv, interpreter, installs, digest, log_path, tool="venv", what="venv"):
    """Create or reuse the virtualenv ``venv`` -- the one venv builder of
    the harness (Nova test venvs, the Ironic venvs).

    Reused as it is while ``<venv>/``:data:`RECIPE_MARKER` holds ``digest``
    (what the venv is made of: :func:`recipe_digest`); otherwise removed and
    made again: ``python -m venv`` from ``interpreter``, or for Python 2.7
    ``virtualenv`` (``tool="virtualenv"``, in the harness's environment:
    ``pip install -e '.[py27]'``), then each of ``installs`` (argument lists
    for ``pip install``; or a function returning them, called only when
    the venv is made, e.g. to download what it installs).  A ``venv`` is
    filled by ``uv pip install --python <venv>/bin/python`` when the
    harness's environment has uv (``pip install -e '.[uv]'``, which
    ``.ci/run`` does: the same pinned versions in a tenth of pip's time),
    else by the venv's own pip; a Python 2.7 ``virtualenv`` always by its
    pip (uv does not install for Python 2).  Holds
    ``<venv>.lock`` (:func:`novaseries.util.file_lock`) while it checks and builds: a
    second command that needs the same venv waits, then reuses it.

    :returns: ``(venv, seconds spent)``; 0 when reused.
    :raises HarnessError: virtualenv missing, or a command failed (with the
        tail of ``log_path``).
    """
    venv = pathlib.Path(venv)
    with file_lock(venv.parent / f"{venv.name}.lock", f"{what} {venv.name}"):
        return _build_venv(venv, interpreter, installs, digest, log_path, tool,
                           venv / RECIPE_MARKER, what)


def pinned_venv(venv, interpreter, pins, recipe, log_path, pip_args=(), tool="venv",
                what="venv"):
    """Create or reuse ``venv`` from the pins file ``pins``: ``pip install
    <pip_args> -r <pins>`` into a venv of ``interpreter`` (:func:`build_venv`),
    reused while its stamp, :func:`recipe_digest` of the pins, ``recipe``
    (the caller's recipe version) and the interpreter's identity, is
    unchanged.  Returns the venv's path.

    :raises HarnessError: the pins file is missing, the interpreter does
        not run, or the venv does not install.
    """
    pins = pathlib.Path(pins)
    if not pins.is_file():
        raise HarnessError(f"pins file {pins} is missing")
    digest = recipe_digest(pins, recipe, interpreter_identity(interpreter))
    return build_venv(venv, interpreter, [[*pip_args, "-r", pins]], digest, log_path,
                      tool=tool, what=what)[0]


def _build_venv(venv, interpreter, installs, digest, log_path, tool, marker, what):
    if marker.is_file() and (venv / "bin" / "python").exists() and \
            marker.read_text().strip() == digest:
        say(f"{what}: {venv} (reused, recipe unchanged)")
        return venv, 0.0
    start = time.monotonic()
    if callable(installs):
        installs = installs()
    if venv.exists():
        say(f"{what}: {venv}: recipe changed, rebuilding")
        shutil.rmtree(venv)
    venv.parent.mkdir(parents=True, exist_ok=True)
    log_path = pathlib.Path(log_path)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    say(f"{what}: creating {venv} with {interpreter} (log: {log_path})")
    if tool == "virtualenv":
        if run([sys.executable, "-c", "import virtualenv"], check=False).returncode:
            raise HarnessError(f"{venv.name} needs virtualenv in the harness environment: "
                               "pip install -e '.[py27]'")
        create = [sys.executable, "-m", "virtualenv", "-p", str(interpreter), str(venv)]
    else:
        create = [str(interpreter), "-m", "venv", str(venv)]
    uv = uv_binary() if tool == "venv" else None
    if uv:
        pip = [uv, "pip", "install", "--python", str(venv / "bin" / "python")]
    else:
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install",
               "--disable-pip-version-check"]
    with open(log_path, "w") as handle:
        for cmd in [create] + [pip + [str(a) for a in args] for args in installs]:
            handle.write(f"$ {' '.join(cmd)}\n")
            handle.flush()
            if run(cmd, stdout=handle, check=False).returncode:
                raise HarnessError(f"venv install failed: {' '.join(cmd)}",
                                   "".join(log_path.read_text().splitlines(True)
                                           [-LOG_TAIL_LINES:]))
    marker.write_text(digest + "\n")
    spent = time.monotonic() - start
    say(f"{what}: ready in {spent:.0f} s")
    return venv, spent


def uv_binary():
    """The path of uv's executable in the harness's environment (the
    ``uv`` extra), or None: :func:`build_venv` then installs with pip."""
    try:
        import uv
    except ImportError:
        return None
    try:
        return uv.find_uv_bin()
    except FileNotFoundError:
        return None


def python_version(executable):
    """``(major, minor)`` of an interpreter, or None if it cannot run."""
    try:
        proc = subprocess.run([str(executable), "-c",
                               "import sys; print('%d.%d' % sys.version_info[:2])"],
                              capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0:
        return None
    major, minor = proc.stdout.strip().split(".")
    return int(major), int(minor)


def find_interpreter(name):
    """Resolve an interpreter name such as ``python3.11`` or ``python2.7``.

    Looks at the running interpreter, pyenv's versions folder ($PYENV_ROOT or
    ~/.pyenv), then PATH (skipping pyenv shims, which may point nowhere).
    Returns the executable path; raises HarnessError when none is found.
    """
    want = name.removeprefix("python")
    try:
        wanted = tuple(int(p) for p in want.split("."))
    except ValueError:
        raise HarnessError(f"bad interpreter name {name!r} (expected e.g. python3.11)")
    if sys.version_info[:2] == wanted:
        return pathlib.Path(sys.executable)
    pyenv_root = pathlib.Path(os.environ.get("PYENV_ROOT") or pathlib.Path.home() / ".pyenv")
    candidates = sorted((pyenv_root / "versions").glob(f"{want}.*/bin/{name}"),
                        key=lambda p: [int(x) if x.isdigit() else 0
                                       for x in p.parent.parent.name.split(".")],
                        reverse=True)
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        if directory and "shims" not in pathlib.Path(directory).parts:
            candidates.append(pathlib.Path(directory) / name)
    for candidate in candidates:
        if candidate.is_file() and python_version(candidate) == wanted:
            return candidate
    raise HarnessError(f"interpreter {name} not found (looked in PATH and "
                       f"{pyenv_root}/versions); install it, e.g. `pyenv install {want}`")
