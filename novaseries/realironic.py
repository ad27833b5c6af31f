"""A real Ironic 39.0.0 on 127.0.0.1 for a test run: start it, stop it cleanly.

The contract tests (``tests/realironic/``) compare the fake Ironic of the
series (``nova.tests.fixtures.ironic.IronicFixture``) with this real service,
and the end-to-end tests run Nova's fixed ``IronicDriver`` against it.  See
``doc/real-ironic.rst``.

What :class:`RealIronic` starts, all on loopback addresses, all in fresh free
ports, all in a run directory of its own:

* an HTTP server (``python -m http.server``) for the deploy image
  ``disk.img`` (1 MiB, its sha256 in :attr:`RealIronic.image_sha256`);
* ``ironic-dbsync create_schema`` on a SQLite file (``upgrade`` cannot run
  on SQLite);
* the all-in-one ``ironic`` process (``rpc_transport = none``, noauth,
  ``fake-hardware`` with ``direct`` deploy and fake boot and power, noop
  network, automated cleaning off), so that a deploy really waits in
  ``wait call-back`` until it is undeployed, aborted or deleted.

The servers' process groups, the ``pids.json`` of the run directory, the
death signal and the sweep of leftovers are :mod:`novaseries.procs`'s;
:meth:`RealIronic.stop` sends SIGTERM to each server's leader, waits, and
SIGKILLs its group as a last resort, and :func:`shared` registers the stop
with ``atexit``.

Standard library only (with ``psutil`` where the venv has it, through
:mod:`novaseries.procs`), so that it can be imported from Nova's test
virtualenv as well as from the harness.  Progress goes to the
``novaseries.realironic`` logger.  The command line is ``novaseries ironic``
(:mod:`novaseries.commands.ironic`).
"""

import atexit
import hashlib
import logging
import os
import pathlib
import shutil
import subprocess
import sys
import threading
import time

from novaseries import procs, util

LOG = logging.getLogger("novaseries.realironic")

#: The Ironic release the pins give, and its API microversion range.
IRONIC_VERSION = "39.0.0"
#: Conductor host name: what ``reservation`` and "locked by host" show.
CONDUCTOR_HOST = "ironic-local"

_ROOT = pathlib.Path(__file__).resolve().parent.parent
_START_TIMEOUT = 90.0  # seconds until GET /v1 answers 200 (2.5-4.8 s seen)


#: Ironic could not be installed, started or stopped; the message says what
#: failed and carries the tail of the relevant log.
RealIronicError = procs.ServiceError


# --------------------------------------------------------------------------
# paths, venv


def project_root():
    """The project checkout this module lives in."""
    return _ROOT


def default_build():
    """Scratch directory: ``$NOVASERIES_BUILD`` or ``<root>/build``."""
    return pathlib.Path(os.environ.get("NOVASERIES_BUILD", _ROOT / "build"))


def pins_file(root=None):
    """``pins/ironic.txt``: the frozen requirement set of the Ironic venv."""
    return pathlib.Path(root or _ROOT) / "pins" / "ironic.txt"


def venv_dir(build=None):
    """Where the Ironic virtualenv lives (``build/venvs/ironic``)."""
    return pathlib.Path(build or default_build()) / "venvs" / "ironic"


#: Bump when the Ironic venv's install recipe changes, to rebuild it.
VENV_RECIPE = "2"


def _base_python(python=None):
    """The interpreter to build the venv from: ``python`` or
    ``$REALIRONIC_PYTHON`` if given, else Python 3.11 as the Nova venvs
    find it (``novaseries.util.find_interpreter``: the running Python if it
    is a 3.11, else pyenv's, else PATH's); the venv's recipe records the
    interpreter's identity, not this path."""
    python = python or os.environ.get("REALIRONIC_PYTHON")
    if not python:
        try:
            return str(util.find_interpreter("python3.11"))
        except util.HarnessError as exc:
            raise RealIronicError(str(exc)) from None
    return str(pathlib.Path(python).resolve()) if os.sep in python else shutil.which(python)


def ensure_venv(build=None, root=None, python=None, log=None):
    """Create or reuse the Ironic virtualenv from ``pins/ironic.txt``
    (``novaseries.util.build_venv``; reused while the sha256 of the pins and
    the interpreter's identity are unchanged).

    :returns: the venv path (``pathlib.Path``).
    :raises RealIronicError: if venv creation or pip fails (with pip's tail).
    """
    return pinned_venv(venv_dir(build), lambda: _base_python(python), pins_file(root),
                       VENV_RECIPE, [],
                       pathlib.Path(build or default_build()) / "results" / "realironic" /
                       "venv-install.log", f"ironic {IRONIC_VERSION} venv")


def pinned_venv(venv, python, pins, recipe, pip_args, log_path, what, tool="venv"):
    """An Ironic venv: ``pip install -q <pip_args> -r <pins>`` into ``venv``
    made from ``python()`` (``novaseries.util.build_venv``, which locks
    and reuses it while the sha256 of the pins, ``recipe`` and the
    interpreter's identity are unchanged).

    :param python: a function returning the interpreter (it may raise).
    :returns: the venv path.
    :raises RealIronicError: no interpreter, or venv creation or pip failed
        (with pip's tail).
    """
    try:
        interpreter = python()
        digest = hashlib.sha256(pins.read_bytes() + b"\0" + recipe.encode() + b"\0" +
                                util.interpreter_identity(interpreter).encode()).hexdigest()
        util.build_venv(venv, interpreter, [["-q", *pip_args, "-r", pins]], digest,
                        log_path, tool=tool, what=what)
    except util.HarnessError as exc:
        raise RealIronicError(f"{exc}\n{exc.details}".rstrip()) from None
    return venv


# --------------------------------------------------------------------------
# config

CONF_TEMPLATE = """\
# Generated by novaseries.realironic for one test run.
[DEFAULT]
host = {host}
debug = true
log_file = {run}/ironic.log
auth_strategy = noauth
rpc_transport = none
state_path = {run}/state
enabled_hardware_types = fake-hardware
enabled_bios_interfaces = fake,no-bios
enabled_boot_interfaces = fake
enabled_console_interfaces = fake,no-console
enabled_deploy_interfaces = fake,direct,custom-agent,ramdisk
default_deploy_interface = direct
enabled_firmware_interfaces = fake,no-firmware
enabled_inspect_interfaces = fake,no-inspect
enabled_management_interfaces = fake
enabled_network_interfaces = noop
default_network_interface = noop
enabled_power_interfaces = fake
enabled_raid_interfaces = fake,no-raid
enabled_rescue_interfaces = fake,no-rescue
enabled_storage_interfaces = fake,noop
default_storage_interface = noop
enabled_vendor_interfaces = fake,no-vendor
minimum_memory_warning_only = true

[api]
host_ip = {ip}
port = {port}
api_workers = 1

[database]
connection = sqlite:///{run}/ironic.sqlite

[conductor]
automated_clean = false
deploy_callback_timeout = {callback_timeout}
check_provision_state_interval = 60
sync_power_state_interval = 0
heartbeat_interval = 10

[dhcp]
dhcp_provider = none

[agent]
image_download_source = http

[oslo_concurrency]
lock_path = {run}/locks

[service_catalog]
# Where the (never started) deploy agent would call back.  Required: without
# it a direct deploy fails in prepare ("Couldn't get the URL of the Ironic
# API service").  noauth makes ironic use auth_type none for it.
endpoint_override = http://{ip}:{port}

[fake]
power_delay = {power_delay}
boot_delay = {boot_delay}
"""


# --------------------------------------------------------------------------
# the service


class RealIronic:
    """One real Ironic (+ image HTTP server) on 127.0.0.1.

    :param venv: the Ironic virtualenv (see :func:`ensure_venv`).
    :param workdir: parent of the run directories (``build/realironic``).
    :param port: Ironic API port; None picks a free one.  A taken port is an
        error (RealIronicError), not silently replaced.
    :param image_port: port of the image server; None picks a free one.
    :param fake_delays: whole seconds each fake power and boot action takes
        (``[fake] power_delay/boot_delay``); 1 makes ``deploying`` last about
        3.4 s and ``deleting`` about 4.1 s, long enough to act on.
    :param callback_timeout: ``[conductor] deploy_callback_timeout`` (s).
    :param keep: keep the run directory after a clean stop (logs, DB).
    :param extra_conf: ini text, passed as a second ``--config-file``
        (its options override the generated ones).

    Attributes after :meth:`start`: ``url`` (``http://127.0.0.1:<port>``),
    ``image_url`` and ``missing_image_url`` (a 404), ``image_sha256``,
    ``run_dir``, ``log_path``, ``pid`` (the ironic master), ``start_seconds``.
    """

    #: The server program start() needs in the venv, and how to get it.
    SERVER = "ironic"
    INSTALL = "novaseries ironic install"

    def __init__(self, venv=None, workdir=None, port=None, image_port=None,
                 fake_delays=0, callback_timeout=1800, host="127.0.0.1",
                 start_timeout=_START_TIMEOUT, keep=False, log=None, extra_conf=""):
        procs.check_loopback(host)
        self.venv = pathlib.Path(venv or os.environ.get("REALIRONIC_VENV") or venv_dir())
        self.workdir = pathlib.Path(workdir or default_build() / "realironic")
        self.host = host
        self.port = port
        self.image_port = image_port
        self.fake_delays = fake_delays
        self.callback_timeout = callback_timeout
        self.start_timeout = start_timeout
        self.keep = keep
        self.extra_conf = extra_conf
        self.log = log or LOG.info
        self.run_dir = None
        self._procs = {}
        self._lock = threading.Lock()
        self.url = self.image_url = self.missing_image_url = None
        self.image_sha256 = None
        self.start_seconds = None

    # -- paths
    @property
    def log_path(self):
        return self.run_dir / "ironic.log" if self.run_dir else None

    @property
    def pid(self):
        proc = self._procs.get("ironic")
        return proc.pid if proc else None

    def _bin(self, name):
        return str(self.venv / "bin" / name)

    # -- start
    def start(self):
        """Sweep leftovers, write config + image, create the schema, start.

        Blocks until ``GET /v1`` answers 200 (or ``start_timeout``).

        :returns: self.
        :raises RealIronicError: venv missing, port taken, schema creation
            failed, ironic exited or never answered; the message has the log
            tail.  Whatever was started is stopped again before raising.
        """
        if not (self.venv / "bin" / self.SERVER).exists():
            raise RealIronicError(f"no {self.SERVER} in {self.venv}: run "
                                  f"`{self.INSTALL}`")
        sweep(self.workdir, log=self.log)
        t0 = time.monotonic()
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.run_dir = pathlib.Path(
            self.workdir / f"run-{os.getpid()}-{time.strftime('%H%M%S')}-{id(self) & 0xffff:04x}")
        self.run_dir.mkdir()
        _ACTIVE.add(str(self.run_dir))
        self._write_pids()
        try:
            self._start(t0)
        except BaseException:
            self.stop(keep=True)
            raise
        return self

    def _start(self, t0):
        for name, port in (("API", self.port), ("image", self.image_port)):
            if port is not None and not procs.port_is_free(port, self.host):
                raise RealIronicError(
                    f"cannot start Ironic: {name} port {self.host}:{port} is already taken")
        self.port = self.port or procs.free_port(self.host)
        self.image_port = self.image_port or procs.free_port(self.host)
        run = self.run_dir
        for sub in ("state", "locks", "images"):
            (run / sub).mkdir()
        image = os.urandom(1024 * 1024)
        (run / "images" / "disk.img").write_bytes(image)
        self.image_sha256 = hashlib.sha256(image).hexdigest()
        self.url = f"http://{self.host}:{self.port}"
        self.image_url = f"http://{self.host}:{self.image_port}/disk.img"
        self.missing_image_url = f"http://{self.host}:{self.image_port}/missing.img"
        conf = run / "ironic.conf"
        conf.write_text(CONF_TEMPLATE.format(
            host=CONDUCTOR_HOST, run=run, ip=self.host, port=self.port,
            callback_timeout=self.callback_timeout,
            power_delay=int(self.fake_delays), boot_delay=int(self.fake_delays)))
        conf_args = self._conf_args(conf)

        # image server
        self._spawn("http", [self._bin("python"), "-m", "http.server", str(self.image_port),
                             "--bind", self.host, "--directory", str(run / "images")],
                    run / "http.log")

        self._create_schema(conf_args)

        # ironic
        self._spawn("ironic", [self._bin("ironic"), *conf_args], run / "console.log")
        deadline = time.monotonic() + self.start_timeout
        next_owner_check = time.monotonic() + 2
        while True:
            proc = self._procs["ironic"]
            if proc.poll() is not None:
                raise RealIronicError(self._failure(f"ironic exited with rc {proc.returncode}"
                                                    " before it answered"))
            if procs.http_status(self.url + "/v1", timeout=1.0) == 200:
                break
            if time.monotonic() > next_owner_check:
                next_owner_check = time.monotonic() + 2
                owner_is_other = (not procs.port_is_free(self.port, self.host)
                                  and self._port_owner_is_not_ironic())
            else:
                owner_is_other = False
            if owner_is_other:
                raise RealIronicError(self._failure(
                    f"API port {self.host}:{self.port} was taken by another process"))
            if time.monotonic() > deadline:
                raise RealIronicError(self._failure(
                    f"ironic did not answer GET {self.url}/v1 within {self.start_timeout:.0f} s"))
            time.sleep(0.1)
        # the image server must answer too (ironic HEADs the image in prepare)
        deadline = time.monotonic() + 10
        while procs.http_status(self.image_url, "HEAD") != 200:
            if self._procs["http"].poll() is not None or time.monotonic() > deadline:
                raise RealIronicError(
                    f"image server on {self.image_url} did not start:\n"
                    + procs.log_tail(run / "http.log"))
            time.sleep(0.05)
        self.start_seconds = time.monotonic() - t0
        self.log(f"realironic: ironic {self.url} (pid {self.pid}) up in "
                 f"{self.start_seconds:.1f} s, run dir {run}")

    def _conf_args(self, conf):
        """``--config-file`` arguments: ``conf``, then ``extra_conf`` (written
        to the run directory), whose options override."""
        args = ["--config-file", str(conf)]
        if self.extra_conf:
            (self.run_dir / "extra.conf").write_text(self.extra_conf)
            args += ["--config-file", str(self.run_dir / "extra.conf")]
        return args

    def _create_schema(self, conf_args):
        """``ironic-dbsync create_schema`` (``upgrade`` cannot run on SQLite).

        :raises RealIronicError: it failed; with ironic.log's and its own
            output's tails (``dbsync.log``).
        """
        run = self.run_dir
        res = subprocess.run([self._bin("ironic-dbsync"), *conf_args, "create_schema"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             timeout=120)
        (run / "dbsync.log").write_text(res.stdout)
        if res.returncode:
            raise RealIronicError(
                f"ironic-dbsync create_schema failed (rc {res.returncode}).\n"
                f"--- {run}/ironic.log (tail) ---\n{procs.log_tail(run / 'ironic.log')}\n"
                f"--- output ({run}/dbsync.log, tail) ---\n{procs.tail_text(res.stdout, 10)}")

    def _port_owner_is_not_ironic(self):
        """True if the API port is held by a process that is not ours."""
        owners = procs.listeners(self.port)
        if not owners:
            return False
        ours = {p.pid for p in self._procs.values()}
        for pid in owners:
            try:
                if pid in ours or os.getpgid(pid) == self.pid:
                    return False
            except OSError:
                return False
        return True

    def _failure(self, what):
        tail = (procs.log_tail(self.run_dir / "ironic.log")
                or procs.log_tail(self.run_dir / "console.log"))
        console = procs.log_tail(self.run_dir / "console.log", 15)
        errors = [line for line in procs.log_tail(self.run_dir / "ironic.log", 2000).splitlines()
                  if " ERROR " in line or " CRITICAL " in line]
        msg = f"cannot start Ironic: {what}."
        if errors:
            msg += "\n--- errors in ironic.log (last 5) ---\n" + "\n".join(errors[-5:])
        msg += f"\n--- {self.run_dir}/ironic.log (tail) ---\n{tail}"
        if console and console not in tail:
            msg += f"\n--- {self.run_dir}/console.log (tail) ---\n{console}"
        return msg

    def _spawn(self, name, cmd, logfile, env=None):
        with open(logfile, "ab") as out:
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, env=env,
                                    stderr=subprocess.STDOUT, cwd=self.run_dir,
                                    start_new_session=True, preexec_fn=procs.die_with_parent(),
                                    close_fds=True)
        self._procs[name] = proc
        self._write_pids()
        return proc

    def _write_pids(self):
        procs.write_pids(self.run_dir, self._procs)

    # -- stop
    def stop(self, keep=None):
        """Stop ironic and the image server; idempotent.

        In the reverse order of their start, SIGTERM to each server's leader
        (the ironic master stops its worker), wait up to 20 s, then SIGKILL
        whatever is left in its process group.  Removes the run directory
        unless ``keep`` (or the constructor's ``keep``).

        :returns: seconds the stop took.
        """
        with self._lock:
            t0 = time.monotonic()
            for name in reversed(list(self._procs)):
                proc = self._procs.pop(name)
                procs.terminate_group(proc.pid, proc)
            if self.run_dir is not None:
                _ACTIVE.discard(str(self.run_dir))
            if self.run_dir is not None and self.run_dir.exists():
                keep = self.keep if keep is None else keep
                if keep:
                    self._write_pids()
                else:
                    shutil.rmtree(self.run_dir, ignore_errors=True)
            return time.monotonic() - t0

    def __enter__(self):
        return self.start()

    def __exit__(self, exc_type, *exc):
        failed = exc_type is not None and not issubclass(
            exc_type, (SystemExit, KeyboardInterrupt))
        self.stop(keep=True if failed else None)


#: Run directories of the RealIronic instances of this process that are not
#: stopped yet: never swept.
_ACTIVE = set()


def sweep(workdir=None, log=None):
    """:func:`novaseries.procs.sweep` of ``build/realironic`` (default),
    sparing this process's running instances."""
    return procs.sweep(workdir or default_build() / "realironic", active=_ACTIVE,
                       log=log or LOG.warning)


# --------------------------------------------------------------------------
# one shared instance per test process

_SHARED = None
_SHARED_LOCK = threading.Lock()


def shared(**kwargs):
    """The test process's Ironic, started on first use, stopped at exit.

    Started again if it was stopped.
    ``kwargs`` go to :class:`RealIronic` on the first call only.  The venv
    must exist (``install``); tests do not install it themselves.
    ``$REALIRONIC_KEEP=1`` keeps the run directory.
    """
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None or _SHARED.pid is None:
            kwargs.setdefault("keep", os.environ.get("REALIRONIC_KEEP") == "1")
            kwargs.setdefault("log", lambda m: print(m, file=sys.stderr, flush=True))
            inst = RealIronic(**kwargs)
            atexit.register(inst.stop)
            inst.start()
            _SHARED = inst
        return _SHARED


def fixture(**kwargs):
    """A ``fixtures.Fixture`` that starts a RealIronic for one test.

    ``kwargs`` go to :class:`RealIronic`; the started instance is the
    fixture's ``ironic`` attribute; it is stopped at the test's cleanup.
    (A function, so that this module does not need ``fixtures``.)
    """
    import fixtures as _fixtures

    class RealIronicFixture(_fixtures.Fixture):
        def _setUp(self):
            self.ironic = RealIronic(**kwargs)
            self.addCleanup(self.ironic.stop)
            self.ironic.start()

    return RealIronicFixture()


def selftest(tree, nova_venv=None, build=None, pattern=None, expect=None, log=None,
             root=None, nova_env=None):
    """Install if needed, then run ``tests/realironic`` in Nova's venv.

    :param tree: a Nova tree with the series applied (PYTHONPATH).
    :param nova_venv: Nova's test venv (openstacksdk from pins/master.txt);
        default ``build/venvs/master``.
    :param pattern: optional test id filter (``-k`` of unittest).
    :param expect: ``fixed`` or ``bug``: what spawn() must raise in the
        end-to-end tests (default: detected from the tree).
    :param log: optional open file for the test run's output (default:
        inherited stdout/stderr).
    :param root: the project checkout (pins, ``tests/realironic``); default
        the one this module lives in.
    :param nova_env: environment for Nova's concurrency mode (a mode's
        ``env`` in targets.toml, e.g. ``OS_NOVA_DISABLE_EVENTLET_PATCHING``
        ``True`` for native threads); default eventlet mode.
    :returns: the test run's exit code.
    """
    build = pathlib.Path(build or default_build())
    t0 = time.monotonic()
    root = pathlib.Path(root or _ROOT)
    venv = ensure_venv(build, root)
    nova_venv = pathlib.Path(os.path.abspath(
        nova_venv or os.environ.get("REALIRONIC_NOVA_VENV")
        or build / "venvs" / "master"))
    python = nova_venv / "bin" / "python"
    if not python.exists():
        raise RealIronicError(f"no Nova test venv at {nova_venv}")
    env = dict(os.environ)
    env.update({
        "PYTHONPATH": os.pathsep.join([str(tree), str(_ROOT)]),
        "REALIRONIC_VENV": str(venv), "NOVASERIES_BUILD": str(build),
        "REALIRONIC_REQUIRED": "1", "REALIRONIC_EXPECT": expect or env.get(
            "REALIRONIC_EXPECT", "auto"),
        "LANGUAGE": "en_US", "LC_ALL": "C.UTF-8", "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1", "OS_NOVA_DISABLE_EVENTLET_PATCHING": "False",
        "PATH": f"{nova_venv / 'bin'}{os.pathsep}{env.get('PATH', '')}",
    })
    env.update(nova_env or {})
    tests = root / "tests" / "realironic"
    cmd = [str(python), "-m", "unittest", "discover", "-v", "-s", str(tests), "-t", str(tests)]
    if pattern:
        cmd += ["-k", pattern]
    LOG.info(f"realironic: {' '.join(cmd)}  (PYTHONPATH={env['PYTHONPATH']})")
    res = subprocess.run(cmd, cwd=str(tree), env=env, stdout=log,
                         stderr=subprocess.STDOUT if log else None)
    LOG.info(f"realironic: selftest took {time.monotonic() - t0:.1f} s (rc {res.returncode})")
    return res.returncode


if __name__ == "__main__":
    sys.exit("use `novaseries ironic ...` (python -m novaseries ironic --help)")
