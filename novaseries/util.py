"""Small shared helpers: errors, the project context and its paths, pins
files, logging, subprocess and git, file locks, sha256.

Every git command the harness runs on a Nova tree goes through :func:`git`,
which hides the user's and the system's git configuration and sets a fixed
identity, so commit ids and exported patches do not depend on the machine.
"""

import contextlib
import dataclasses
import fcntl
import hashlib
import logging
import os
import pathlib
import re
import subprocess
import sys

#: Identity and date used for the pristine base commit and as committer of
#: every applied patch (``git am --committer-date-is-author-date``).
IDENTITY_NAME = "novaseries"
IDENTITY_EMAIL = "novaseries@localhost"

#: The environment variables that override the project root, the scratch
#: directory and the sdist cache (:class:`Context`).
ROOT_ENV = "NOVASERIES_ROOT"
BUILD_ENV = "NOVASERIES_BUILD"
SDIST_CACHE_ENV = "NOVASERIES_SDIST_CACHE"
BASE_DATE = "2000-01-01T00:00:00+0000"


class HarnessError(Exception):
    """A user-facing error: the CLI prints it as one line and exits 1.

    ``details`` (optional) is printed after the line: digests, the failing
    hunk, the commands to continue, ...
    """

    def __init__(self, message, details=""):
        super().__init__(message)
        self.details = details


@dataclasses.dataclass
class Context:
    """Where things live.

    ``root``: the project checkout (holds ``targets/``, ``patches/``, ``pins/``).
    ``build``: scratch space (trees, venvs, results); git-ignored.
    ``sdist_cache``: where downloaded sdists are kept (pre-seed it to work
    offline: a file there is used, after the sha256 check, instead of pip).
    """

    root: pathlib.Path
    build: pathlib.Path
    sdist_cache: pathlib.Path

    @classmethod
    def create(cls, root=None, build=None, sdist_cache=None):
        """Build a context from CLI options, the environment, then defaults.

        Environment: NOVASERIES_ROOT, NOVASERIES_BUILD, NOVASERIES_SDIST_CACHE.
        """
        root = project_root(root)
        build = build_dir(root, build)
        cache = pathlib.Path(sdist_cache or os.environ.get(SDIST_CACHE_ENV)
                             or build / "sdists")
        return cls(root.resolve(), build.resolve(), cache.resolve())

    def tree(self, name):
        """The tree called ``name``: ``build/trees/<name>``; a target's
        default tree is named after the target."""
        return self.build / "trees" / name

    def venv(self, name):
        """The virtualenv called ``name``: ``build/venvs/<name>``
        (:func:`venv_dir`); a target's is its release's
        (:attr:`novaseries.target_model.Target.venv_name`)."""
        return venv_dir(self.build, name)

    def results(self, name):
        """The results folder called ``name`` (test logs, subunit streams):
        ``build/results/<name>`` (:func:`results_dir`); a target's is named
        after the target."""
        return results_dir(self.build, name)

    @property
    def results_root(self):
        """The folder of the results folders: ``build/results``
        (:func:`results_root`)."""
        return results_root(self.build)


#: The targets file, under the project root.
TARGETS_FILE = pathlib.Path("targets") / "targets.toml"

#: The directory that holds the ``novaseries`` package: what harness code
#: run in another venv (Nova's, the pep8 tools') needs on PYTHONPATH.
PACKAGE_PARENT = pathlib.Path(__file__).resolve().parent.parent

#: ``novaseries/nova_side``: the harness code that runs in Nova's venvs
#: (players, driver tests, subunit_status.py).
NOVA_SIDE = PACKAGE_PARENT / "novaseries" / "nova_side"


def nova_side_pythonpath(tree):
    """``PYTHONPATH`` for harness code run in Nova's venv from ``tree``:
    the tree, then :data:`PACKAGE_PARENT` (``novaseries.nova_side`` and
    what it imports of the harness)."""
    return os.pathsep.join([str(tree), str(PACKAGE_PARENT)])


def find_root():
    """The project root: the nearest ancestor of the cwd with :data:`TARGETS_FILE`,
    else the checkout this package lives in (:data:`PACKAGE_PARENT`)."""
    here = pathlib.Path.cwd()
    for path in (here, *here.parents):
        if (path / TARGETS_FILE).is_file():
            return path
    return PACKAGE_PARENT


def project_root(root=None):
    """The project checkout (holds ``targets/``, ``patches/``, ``pins/``):
    ``root`` if given, else ``$NOVASERIES_ROOT``, else :func:`find_root`."""
    return pathlib.Path(root or os.environ.get(ROOT_ENV) or find_root())


def pins_file(root, name):
    """The pins (frozen requirements) of the venv ``name``:
    ``<root>/pins/<name>.txt`` (``root``: the project checkout)."""
    return pathlib.Path(root) / "pins" / f"{name}.txt"


def canonical(name):
    """A distribution name as pip compares it."""
    return re.sub(r"[-_.]+", "-", name).lower()


def pin_lines(path):
    """``[(canonical name, version)]`` of the ``name==version`` lines of
    the pins file ``path``, in order; OSError if it cannot be read."""
    found = (re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*([^\s;#]+)", line)
             for line in pathlib.Path(path).read_text().splitlines())
    return [(canonical(m.group(1)), m.group(2)) for m in found if m]


#: The harness's logger; its progress lines are INFO records.  The CLI
#: sends them to stdout (:func:`setup_logging`; ``-q`` keeps WARNING and
#: up, ``-v`` adds DEBUG).  Without that set-up (the harness's own tests)
#: only warnings reach stderr, through logging's last-resort handler.
LOG = logging.getLogger("novaseries")


def say(message=""):
    """Log a progress line (INFO on :data:`LOG`)."""
    LOG.info(message)


class _FlushingHandler(logging.StreamHandler):
    """Writes to the stream that ``sys.stdout`` is at emit time (so that a
    test's ``redirect_stdout`` is honoured), flushed per record so that it
    interleaves with the output of child processes."""

    def __init__(self, stream=None):
        super().__init__(stream)
        self._fixed = stream is not None

    def emit(self, record):
        if not self._fixed:
            self.stream = sys.stdout
        if self.stream is None:  # stdout closed after a broken pipe
            return
        super().emit(record)

    def handleError(self, record):
        # `novaseries run --list | head`: stop, as print() would, instead of
        # logging's traceback for every further line
        if isinstance(sys.exc_info()[1], BrokenPipeError):
            raise sys.exc_info()[1]
        super().handleError(record)


def setup_logging(verbosity=0, stream=None):
    """Send :data:`LOG` (and its children, e.g. ``novaseries.ironic.service``)
    to ``stream`` (default: the current stdout), one message per line.

    :param verbosity: 0 INFO (progress lines), 1 or more DEBUG, -1 or less
        WARNING (errors and warnings only).
    :returns: the handler (replaces one set up before).
    """
    level = logging.INFO if verbosity == 0 else (
        logging.DEBUG if verbosity > 0 else logging.WARNING)
    for old in [h for h in LOG.handlers if isinstance(h, _FlushingHandler)]:
        LOG.removeHandler(old)
    handler = _FlushingHandler(stream)
    handler.setFormatter(logging.Formatter("%(message)s"))
    LOG.addHandler(handler)
    LOG.setLevel(level)
    LOG.propagate = False
    return handler


def run(cmd, cwd=None, env=None, check=True, capture=True, stdin=None, stdout=None):
    """Run ``cmd`` (a list); return the CompletedProcess (text mode).

    With ``check`` a non-zero exit raises HarnessError naming the command and
    showing its output.
    """
    kwargs = dict(cwd=cwd, env=env, text=True, stdin=stdin if stdin is not None
                  else subprocess.DEVNULL)
    if stdout is not None:
        kwargs.update(stdout=stdout, stderr=subprocess.STDOUT)
    elif capture:
        kwargs.update(stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        proc = subprocess.run([str(c) for c in cmd], **kwargs)
    except FileNotFoundError as exc:
        raise HarnessError(f"command not found: {cmd[0]} ({exc})")
    if check and proc.returncode != 0:
        output = ((proc.stdout or "") + (proc.stderr or "")).strip() if capture else ""
        raise HarnessError(f"command failed ({proc.returncode}): {' '.join(map(str, cmd))}",
                           output[-4000:])
    return proc


def git_env(extra=None):
    """Environment for git: no user/system config, fixed identity, C locale."""
    env = dict(os.environ)
    for key in list(env):
        if key.startswith("GIT_") and key not in ("GIT_EXEC_PATH",):
            del env[key]
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_AUTHOR_NAME=IDENTITY_NAME,
        GIT_AUTHOR_EMAIL=IDENTITY_EMAIL,
        GIT_COMMITTER_NAME=IDENTITY_NAME,
        GIT_COMMITTER_EMAIL=IDENTITY_EMAIL,
        LC_ALL="C",
        LANGUAGE="C",
        GIT_TERMINAL_PROMPT="0",
        GIT_EDITOR="true",
    )
    env.update(extra or {})
    return env


def git(tree, *args, check=True, env=None):
    """Run ``git -C tree args...`` in the isolated environment; return stdout
    stripped of the final newline (or the CompletedProcess if check=False)."""
    proc = run(["git", "-C", tree, *args], env=git_env(env), check=check)
    return proc if not check else proc.stdout.rstrip("\n")


def sha256_file(path):
    """Hex sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@contextlib.contextmanager
def file_lock(path, what):
    """Hold an exclusive ``flock`` on ``path`` (created) for the block.

    If another process holds it, say so and wait: two commands on one
    checkout that need the same venv or tree take turns instead of
    building it together.  The lock goes with the process (no stale
    lock files to clean up).
    """
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            LOG.warning(f"waiting for {what}: {path} is held by {holder}")
            fcntl.flock(handle, fcntl.LOCK_EX)
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()} ({' '.join(sys.argv[:3])})\n")
        handle.flush()
        try:
            yield
        finally:
            handle.seek(0)
            handle.truncate()
            fcntl.flock(handle, fcntl.LOCK_UN)


def build_dir(root, build=None):
    """The scratch directory: ``build`` if given, else ``$NOVASERIES_BUILD``,
    else ``<root>/build`` (``root``: the project checkout)."""
    return pathlib.Path(build or os.environ.get(BUILD_ENV)
                        or pathlib.Path(root) / "build")


def results_root(build):
    """The folder of the results folders: ``<build>/results``."""
    return pathlib.Path(build) / "results"


def results_dir(build, name):
    """The results folder ``name`` (logs, subunit streams):
    ``<build>/results/<name>``."""
    return results_root(build) / name


def venv_dir(build, name):
    """Where the venv ``name`` lives: ``<build>/venvs/<name>``."""
    return pathlib.Path(build) / "venvs" / name


#: Lines of a log's tail an error shows (a venv install's, a test run's, a server's).
LOG_TAIL_LINES = 40
