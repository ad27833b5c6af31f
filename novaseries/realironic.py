"""Start a real Ironic 39.0.0 on 127.0.0.1 for a test run, and stop it cleanly.

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

Both servers run in a process group of their own; their PIDs are written to
``pids.json`` in the run directory.  :meth:`RealIronic.stop` sends SIGTERM to
the ironic master, waits, and SIGKILLs the process groups as a last resort.
Leftovers of a test process that was killed are handled three ways: the
servers get SIGTERM when the thread that started them dies (Linux
``PR_SET_PDEATHSIG``), :func:`shared` registers the stop with ``atexit``,
and every start first sweeps run directories whose owner is dead and kills
what their ``pids.json`` lists (only processes whose command line names that
run directory, so a recycled PID is never hit).

This module only uses the standard library, so that it can be imported from
Nova's test virtualenv as well as from the harness.

Command line::

    python -m novaseries.realironic install       # build/venvs/ironic from pins/ironic.txt
    python -m novaseries.realironic start         # start, print URLs, stop on Enter/Ctrl-C
    python -m novaseries.realironic sweep         # kill leftovers of killed runs
    python -m novaseries.realironic selftest --tree T [--nova-venv V] [--expect fixed|bug]
                                                  # contract + end-to-end tests
"""

import argparse
import atexit
import contextlib
import ctypes
import hashlib
import http.client
import ipaddress
import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

#: The Ironic release the pins give, and its API microversion range.
IRONIC_VERSION = "39.0.0"
#: Conductor host name: what ``reservation`` and "locked by host" show.
CONDUCTOR_HOST = "ironic-local"

_ROOT = pathlib.Path(__file__).resolve().parent.parent
_START_TIMEOUT = 90.0  # seconds until GET /v1 answers 200 (2.5-4.8 s seen)
_STOP_TIMEOUT = 20.0  # seconds SIGTERM gets before SIGKILL (3.1-4.7 s seen)
_LOG_TAIL_LINES = 40


class RealIronicError(Exception):
    """Ironic could not be installed, started or stopped.

    The message says what failed and carries the tail of the relevant log.
    """


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


def _stamp(pins, python):
    """sha256 of the pins and what the interpreter is (not where it is)."""
    from novaseries.util import interpreter_identity
    digest = hashlib.sha256(pathlib.Path(pins).read_bytes()).hexdigest()
    return f"{digest} {interpreter_identity(python)}\n"


def _base_python(python=None):
    """The interpreter to build the venv from (absolute path of a python3)."""
    python = python or os.environ.get("REALIRONIC_PYTHON") or sys.executable
    # A venv's python is fine: ``-m venv`` uses its base interpreter.
    return str(pathlib.Path(python).resolve()) if os.sep in python else shutil.which(python)


def ensure_venv(build=None, root=None, python=None, log=print):
    """Create or refresh the Ironic virtualenv from ``pins/ironic.txt``.

    Re-used as it is when its stamp (sha256 of the pins + interpreter)
    matches; otherwise rebuilt from scratch with ``pip install -r``.

    :returns: the venv path (``pathlib.Path``).
    :raises RealIronicError: if venv creation or pip fails (with pip's tail).
    """
    from novaseries.util import file_lock
    venv = venv_dir(build)
    with file_lock(venv.parent / f"{venv.name}.lock", f"venv {venv.name}"):
        return _ensure_venv(venv, pins_file(root), _base_python(python), log)


def _ensure_venv(venv, pins, python, log):
    stamp = venv / ".novaseries-stamp"
    want = _stamp(pins, python)
    if (venv / "bin" / "ironic").exists() and stamp.exists() and stamp.read_text() == want:
        return venv
    log(f"realironic: installing ironic {IRONIC_VERSION} into {venv} from {pins}")
    t0 = time.monotonic()
    if venv.exists():
        shutil.rmtree(venv)
    venv.parent.mkdir(parents=True, exist_ok=True)
    for cmd in ([python, "-m", "venv", str(venv)],
                [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "-r", str(pins)]):
        res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if res.returncode:
            raise RealIronicError(f"{' '.join(cmd)} failed (rc {res.returncode}):\n"
                                  + _tail_text(res.stdout))
    stamp.write_text(want)
    log(f"realironic: venv ready in {time.monotonic() - t0:.1f} s")
    return venv


# --------------------------------------------------------------------------
# helpers


def _tail_text(text, lines=_LOG_TAIL_LINES):
    return "\n".join(text.splitlines()[-lines:])


def log_tail(path, lines=_LOG_TAIL_LINES):
    """The last ``lines`` lines of a file ('' if it does not exist)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 64 * 1024))
            return _tail_text(f.read().decode("utf-8", "replace"), lines)
    except OSError:
        return ""


def check_loopback(host):
    """Raise RealIronicError unless ``host`` is a loopback address."""
    try:
        ok = ipaddress.ip_address(host).is_loopback
    except ValueError:
        ok = False
    if not ok:
        raise RealIronicError(f"refusing to listen on {host!r}: only loopback addresses are used")


def free_port(host="127.0.0.1"):
    """A TCP port that is free on ``host`` right now (the kernel's pick)."""
    check_loopback(host)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def port_is_free(port, host="127.0.0.1"):
    """True if nothing listens on ``host:port`` and it can be bound."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child of ours counts as dead.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _start_time(pid):
    """Start time of ``pid`` in clock ticks since boot (None if gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def _group_alive(pgid):
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # killpg(0) also succeeds for a group of zombies only: look closer.
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def _die_with_parent():
    """preexec_fn: new process gets SIGTERM when its parent thread dies."""
    parent = os.getpid()  # evaluated in the parent, before the fork

    def preexec():
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        except Exception:  # noqa: BLE001 - not Linux: rely on the sweep
            return
        if os.getppid() != parent:  # the parent died before prctl
            os.kill(os.getpid(), signal.SIGTERM)

    return preexec


def _http_status(url, method="GET", timeout=2.0):
    req = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status
    except urllib.error.HTTPError as e:
        return e.code
    except (urllib.error.URLError, OSError, http.client.HTTPException):
        return None


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

    def __init__(self, venv=None, workdir=None, port=None, image_port=None,
                 fake_delays=0, callback_timeout=1800, host="127.0.0.1",
                 start_timeout=_START_TIMEOUT, keep=False, log=None, extra_conf=""):
        check_loopback(host)
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
        self.log = log or (lambda msg: None)
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
        if not (self.venv / "bin" / "ironic").exists():
            raise RealIronicError(f"no ironic in {self.venv}: run "
                                  "`python -m novaseries.realironic install`")
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
            if port is not None and not port_is_free(port, self.host):
                raise RealIronicError(
                    f"cannot start Ironic: {name} port {self.host}:{port} is already taken")
        self.port = self.port or free_port(self.host)
        self.image_port = self.image_port or free_port(self.host)
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
        conf_args = ["--config-file", str(conf)]
        if self.extra_conf:
            (run / "extra.conf").write_text(self.extra_conf)
            conf_args += ["--config-file", str(run / "extra.conf")]

        # image server
        self._spawn("http", [self._bin("python"), "-m", "http.server", str(self.image_port),
                             "--bind", self.host, "--directory", str(run / "images")],
                    run / "http.log")

        # schema
        res = subprocess.run([self._bin("ironic-dbsync"), *conf_args, "create_schema"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             timeout=120)
        (run / "dbsync.log").write_text(res.stdout)
        if res.returncode:
            raise RealIronicError(
                f"ironic-dbsync create_schema failed (rc {res.returncode}).\n"
                f"--- {run}/ironic.log (tail) ---\n{log_tail(run / 'ironic.log')}\n"
                f"--- output ({run}/dbsync.log, tail) ---\n{_tail_text(res.stdout, 10)}")

        # ironic
        self._spawn("ironic", [self._bin("ironic"), *conf_args], run / "console.log")
        deadline = time.monotonic() + self.start_timeout
        next_owner_check = time.monotonic() + 2
        while True:
            proc = self._procs["ironic"]
            if proc.poll() is not None:
                raise RealIronicError(self._failure(f"ironic exited with rc {proc.returncode}"
                                                    " before it answered"))
            if _http_status(self.url + "/v1", timeout=1.0) == 200:
                break
            if time.monotonic() > next_owner_check:
                next_owner_check = time.monotonic() + 2
                owner_is_other = (not port_is_free(self.port, self.host)
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
        while _http_status(self.image_url, "HEAD") != 200:
            if self._procs["http"].poll() is not None or time.monotonic() > deadline:
                raise RealIronicError(
                    f"image server on {self.image_url} did not start:\n"
                    + log_tail(run / "http.log"))
            time.sleep(0.05)
        self.start_seconds = time.monotonic() - t0
        self.log(f"realironic: ironic {self.url} (pid {self.pid}) up in "
                 f"{self.start_seconds:.1f} s, run dir {run}")

    def _port_owner_is_not_ironic(self):
        # ss is not always there; /proc/net/tcp lists the listening socket's
        # inode, and /proc/<pid>/fd shows who has it.
        try:
            lines = pathlib.Path("/proc/net/tcp").read_text().splitlines()[1:]
        except OSError:
            return False
        inodes = set()
        for line in lines:
            parts = line.split()
            if parts[3] == "0A" and int(parts[1].split(":")[1], 16) == self.port:
                inodes.add(parts[9])
        if not inodes:
            return False
        ours = {p.pid for p in self._procs.values()}
        pgid = self.pid
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            links = set()
            try:
                fds = os.listdir(f"/proc/{entry}/fd")
            except OSError:
                continue
            for fd in fds:
                try:
                    links.add(os.readlink(f"/proc/{entry}/fd/{fd}"))
                except OSError:
                    pass
            if any(f"socket:[{i}]" in links for i in inodes):
                try:
                    if int(entry) in ours or os.getpgid(int(entry)) == pgid:
                        return False
                except OSError:
                    return False
                return True
        return False

    def _failure(self, what):
        tail = log_tail(self.run_dir / "ironic.log") or log_tail(self.run_dir / "console.log")
        console = log_tail(self.run_dir / "console.log", 15)
        errors = [line for line in log_tail(self.run_dir / "ironic.log", 2000).splitlines()
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
                                    start_new_session=True, preexec_fn=_die_with_parent(),
                                    close_fds=True)
        self._procs[name] = proc
        self._write_pids()
        return proc

    def _write_pids(self):
        data = {"owner": os.getpid(), "owner_start": _start_time(os.getpid()),
                "run_dir": str(self.run_dir),
                "pids": {name: p.pid for name, p in self._procs.items()}}
        tmp = self.run_dir / "pids.json.tmp"
        tmp.write_text(json.dumps(data))
        tmp.replace(self.run_dir / "pids.json")

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
                _terminate_group(proc.pid, proc)
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


def _terminate_group(pid, proc=None, timeout=_STOP_TIMEOUT, whole_group=False):
    """SIGTERM ``pid`` (a group leader), wait, then SIGKILL its group.

    ``whole_group``: send the SIGTERM to every process of the group (used for
    leftovers, whose leader may be gone).
    """
    try:
        if whole_group:
            os.killpg(pid, signal.SIGTERM)
        else:
            os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None:
            proc.poll()
        if not _group_alive(pid):
            break
        time.sleep(0.05)
    else:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
        for _ in range(100):
            if proc is not None:
                proc.poll()
            if not _group_alive(pid):
                break
            time.sleep(0.05)
    if proc is not None:
        with contextlib.suppress(Exception):
            proc.wait(timeout=1)


def _belongs(pid, run_dir):
    """True if process ``pid`` was started for ``run_dir`` (cwd or argv)."""
    try:
        if os.readlink(f"/proc/{pid}/cwd") == str(run_dir):
            return True
    except OSError:
        pass
    return str(run_dir) in _cmdline(pid)


def _group_members(pgid):
    members = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.getpgid(int(entry)) == pgid:
                    members.append(int(entry))
            except OSError:
                pass
    return members


def sweep(workdir=None, log=print):
    """Kill what runs of dead test processes left behind; remove their dirs.

    For every ``run-*/pids.json`` under ``workdir`` whose owner process is
    gone (or is this process, for a run it has stopped or failed to
    start): SIGTERM, then SIGKILL, each recorded process group that still
    has a process started for that run directory (its cwd is the run
    directory, so a recycled PID is never hit), then delete the directory.

    :returns: number of process groups killed.
    """
    workdir = pathlib.Path(workdir or default_build() / "realironic")
    killed = 0
    if not workdir.exists():
        return 0
    for pidfile in sorted(workdir.glob("run-*/pids.json")):
        try:
            data = json.loads(pidfile.read_text())
        except (OSError, ValueError):
            continue
        owner = data.get("owner")
        if owner and owner != os.getpid() and _pid_alive(owner) and \
                _start_time(owner) == data.get("owner_start"):
            continue  # a live test run owns it
        run_dir = pidfile.parent
        if str(run_dir) in _ACTIVE:
            continue
        for name, pgid in data.get("pids", {}).items():
            members = [p for p in _group_members(pgid) if _belongs(p, run_dir)]
            if not members:
                continue
            log(f"realironic: killing leftover {name} (process group {pgid}) of {run_dir}")
            _terminate_group(pgid, timeout=10, whole_group=True)
            killed += 1
        shutil.rmtree(run_dir, ignore_errors=True)
    return killed


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
            kwargs.setdefault("log", lambda m: print(m, file=sys.stderr))
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


# --------------------------------------------------------------------------
# small REST helpers for setting up nodes (tests use openstacksdk for what
# they compare; these only prepare nodes)


class Client:
    """Minimal Ironic REST client (urllib) with an explicit microversion."""

    def __init__(self, url, microversion="1.109"):
        self.url = url.rstrip("/")
        self.microversion = microversion

    def request(self, method, path, body=None, microversion=None):
        """:returns: (status, decoded JSON body or None)."""
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + "/v1" + path, data=data, method=method)
        req.add_header("X-OpenStack-Ironic-API-Version", microversion or self.microversion)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                raw = resp.read()
                status = resp.status
        except urllib.error.HTTPError as e:
            raw = e.read()
            status = e.code
        return status, (json.loads(raw) if raw else None)

    def ok(self, method, path, body=None, microversion=None):
        status, data = self.request(method, path, body, microversion)
        if status >= 300:
            raise RealIronicError(f"{method} {path}: HTTP {status} {data}")
        return data

    def node(self, node):
        return self.ok("GET", f"/nodes/{node}")

    def wait_state(self, node, states, timeout=60):
        """Poll until provision_state is in ``states`` and the lock is free."""
        states = {states} if isinstance(states, str) else set(states)
        deadline = time.monotonic() + timeout
        while True:
            n = self.node(node)
            if n["provision_state"] in states and not n["reservation"]:
                return n
            settled = not n["reservation"] and not n["target_provision_state"]
            if time.monotonic() > deadline or (settled and n["last_error"]):
                raise RealIronicError(
                    f"node {node} did not reach {sorted(states)} in {timeout} s: "
                    f"{n['provision_state']}/{n['target_provision_state']} "
                    f"reservation={n['reservation']} last_error={n['last_error']}")
            time.sleep(0.05)

    def create_available_node(self, name=None, **extra):
        """Enroll a fake-hardware node and bring it to ``available``, power off.

        :returns: the node's uuid.
        """
        body = {"driver": "fake-hardware", "deploy_interface": "direct",
                "boot_interface": "fake", "power_interface": "fake",
                "management_interface": "fake", "network_interface": "noop",
                "properties": {"cpus": 1, "memory_mb": 1024, "local_gb": 10,
                               "cpu_arch": "x86_64"}}
        if name:
            body["name"] = name
        body.update(extra)
        node = self.ok("POST", "/nodes", body)["uuid"]
        self.ok("PUT", f"/nodes/{node}/states/provision", {"target": "manage"})
        self.wait_state(node, "manageable")
        self.ok("PUT", f"/nodes/{node}/states/provision", {"target": "provide"})
        self.wait_state(node, "available")
        self.ok("PUT", f"/nodes/{node}/states/power", {"target": "power off"})
        deadline = time.monotonic() + 30
        while self.node(node)["power_state"] != "power off":
            if time.monotonic() > deadline:
                raise RealIronicError(f"node {node} did not power off")
            time.sleep(0.05)
        return node


# --------------------------------------------------------------------------
# CLI


def _find_tree(arg):
    tree = arg or os.environ.get("REALIRONIC_NOVA_TREE")
    if not tree:
        raise RealIronicError("selftest needs a Nova tree with the series applied: "
                              "--tree or $REALIRONIC_NOVA_TREE")
    tree = pathlib.Path(tree).resolve()
    if not (tree / "nova" / "virt" / "ironic" / "driver.py").exists():
        raise RealIronicError(f"{tree} is not a Nova tree")
    return tree


def selftest(tree, nova_venv=None, build=None, pattern=None, out=sys.stdout, expect=None,
             log=None):
    """Install if needed, then run ``tests/realironic`` in Nova's venv.

    :param tree: a Nova tree with the series applied (PYTHONPATH).
    :param nova_venv: Nova's test venv (openstacksdk from pins/master.txt);
        default ``build/venvs/master``.
    :param pattern: optional test id filter (``-k`` of unittest).
    :param expect: ``fixed`` or ``bug``: what spawn() must raise in the
        end-to-end tests (default: detected from the tree).
    :param log: optional open file for the test run's output (default:
        inherited stdout/stderr).
    :returns: the test run's exit code.
    """
    build = pathlib.Path(build or default_build())
    t0 = time.monotonic()
    venv = ensure_venv(build)
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
    tests = _ROOT / "tests" / "realironic"
    cmd = [str(python), "-m", "unittest", "discover", "-v", "-s", str(tests), "-t", str(tests)]
    if pattern:
        cmd += ["-k", pattern]
    print(f"realironic: {' '.join(cmd)}  (PYTHONPATH={env['PYTHONPATH']})", file=out, flush=True)
    res = subprocess.run(cmd, cwd=str(tree), env=env, stdout=log,
                         stderr=subprocess.STDOUT if log else None)
    print(f"realironic: selftest took {time.monotonic() - t0:.1f} s (rc {res.returncode})",
          file=out, flush=True)
    return res.returncode


def main(argv=None):
    """CLI: ``install``, ``start``, ``sweep``, ``selftest``."""
    p = argparse.ArgumentParser(prog="python -m novaseries.realironic",
                                description="A real Ironic on 127.0.0.1 for tests.")
    p.add_argument("--build", help="scratch dir (default: build/ or $NOVASERIES_BUILD)")
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("install", help="create build/venvs/ironic from pins/ironic.txt")
    st = sub.add_parser("start", help="start one, print its URLs, stop on Enter or signal")
    st.add_argument("--port", type=int)
    st.add_argument("--fake-delays", type=int, default=0)
    sub.add_parser("sweep", help="kill leftovers of killed runs")
    se = sub.add_parser("selftest", help="contract + end-to-end tests against real Ironic")
    se.add_argument("--tree", help="Nova tree with the series applied")
    se.add_argument("--nova-venv", help="Nova test venv (default build/venvs/master)")
    se.add_argument("-k", dest="pattern", help="only tests matching this")
    se.add_argument("--expect", choices=("auto", "fixed", "bug"),
                    help="spawn() outcome the end-to-end tests require "
                    "(default: detected from the tree)")
    args = p.parse_args(argv)
    build = pathlib.Path(args.build) if args.build else default_build()
    try:
        if args.cmd == "install":
            ensure_venv(build)
            return 0
        if args.cmd == "sweep":
            n = sweep(build / "realironic")
            print(f"realironic: {n} leftover process group(s) killed")
            return 0
        if args.cmd == "start":
            ir = RealIronic(venv_dir(build), build / "realironic", port=args.port,
                            fake_delays=args.fake_delays, log=print)
            signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
            with ir:
                print(f"url={ir.url}\nimage_url={ir.image_url}\n"
                      f"image_sha256={ir.image_sha256}\nlog={ir.log_path}\n"
                      "press Enter to stop", flush=True)
                with contextlib.suppress(KeyboardInterrupt, EOFError):
                    input()
            return 0
        if args.cmd == "selftest":
            return selftest(_find_tree(args.tree), args.nova_venv, build, args.pattern,
                            expect=args.expect)
    except RealIronicError as e:
        print(f"realironic: error: {e}", file=sys.stderr)
        return 1
    return 2


if __name__ == "__main__":
    sys.exit(main())
