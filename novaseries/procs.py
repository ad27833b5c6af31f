"""Local servers for the tests: loopback ports, process groups, leftovers.

What :class:`novaseries.ironic.service.RealIronic` and
:class:`novaseries.ironic.pike.PikeIronic` start (Ironic, its image server,
RabbitMQ) runs through here: each server in a process group of its own,
started from a run directory (its cwd), with ``PR_SET_PDEATHSIG`` so that
it dies with the thread that started it; :data:`PIDS_FILE` in the run
directory names the owner and the groups, so that :func:`sweep` can kill
what a killed test run left behind -- only processes whose cwd or command
line is that run directory, so a recycled PID is never hit.

Uses ``psutil`` where it is importable (Nova's and Ironic's venvs pin it:
the tests that start a real Ironic run there) to list a process group's
members, read their cwd and command line and find who listens on a port;
the harness itself is standard library only, and falls back to reading
``/proc``.  Owner start times are always read from ``/proc/<pid>/stat``
(clock ticks since boot), whichever side wrote :data:`PIDS_FILE`, so that the
two sides agree.
"""

import contextlib
import ctypes
import http.client
import ipaddress
import json
import os
import pathlib
import shutil
import signal
import socket
import time
import urllib.error
import urllib.request

from novaseries.util import LOG_TAIL_LINES

try:  # pragma: no cover - depends on the venv
    import psutil
except ImportError:
    psutil = None

#: Seconds SIGTERM gets before SIGKILL: several times a clean stop of an
#: Ironic service, so that only a server that does not stop is killed.
STOP_TIMEOUT = 20.0
#: Seconds SIGTERM gives a dead run's leftover before SIGKILL (:func:`sweep`):
#: its run directory is deleted next, so its clean stop matters less than
#: not holding up the run that sweeps.
SWEEP_TIMEOUT = 10.0
#: The file of a run directory naming its owner and process groups
#: (:func:`write_pids`, read by :func:`sweep`).
PIDS_FILE = "pids.json"
#: How the name of each run directory begins (``<prefix><pid>-...``, under
#: the workdir that :func:`sweep` looks through).
RUN_PREFIX = "run-"


class ServiceError(Exception):
    """A local server could not be set up, started or stopped (the message
    says what failed, with the relevant log's tail)."""


# -- files ----------------------------------------------------------------

def tail_text(text, lines=LOG_TAIL_LINES):
    """The last ``lines`` lines of ``text``."""
    return "\n".join(text.splitlines()[-lines:])


def log_tail(path, lines=LOG_TAIL_LINES):
    """The last ``lines`` lines of a file ('' if it does not exist)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 64 * 1024))
            return tail_text(f.read().decode("utf-8", "replace"), lines)
    except OSError:
        return ""


# -- ports ----------------------------------------------------------------

def check_loopback(host):
    """Raise ServiceError unless ``host`` is a loopback address."""
    try:
        ok = ipaddress.ip_address(host).is_loopback
    except ValueError:
        ok = False
    if not ok:
        raise ServiceError(f"refusing to listen on {host!r}: only loopback addresses are used")


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


def listeners(port):
    """PIDs of the processes listening on TCP ``port`` (IPv4)."""
    if psutil is not None:
        with contextlib.suppress(psutil.Error, OSError):
            return {c.pid for c in psutil.net_connections("tcp4")
                    if c.status == psutil.CONN_LISTEN and c.laddr and
                    c.laddr.port == port and c.pid}
    # /proc/net/tcp lists the listening socket's inode, /proc/<pid>/fd
    # shows who has it (needs no ss).
    try:
        lines = pathlib.Path("/proc/net/tcp").read_text().splitlines()[1:]
    except OSError:
        return set()
    inodes = {f"socket:[{parts[9]}]" for parts in (line.split() for line in lines)
              if parts[3] == "0A" and int(parts[1].split(":")[1], 16) == port}
    pids = set()
    for pid in _pids():
        with contextlib.suppress(OSError):
            if any(os.readlink(f"/proc/{pid}/fd/{fd}") in inodes
                   for fd in os.listdir(f"/proc/{pid}/fd")):
                pids.add(pid)
    return pids


def http_status(url, method="GET", timeout=2.0):
    """The HTTP status ``url`` answers with, or None when nothing answers."""
    req = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status
    except urllib.error.HTTPError as e:
        return e.code
    except (urllib.error.URLError, OSError, http.client.HTTPException):
        return None


# -- processes --------------------------------------------------------------

def _pids():
    return [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]


def _stat_fields(pid):
    """``/proc/<pid>/stat`` after the command name (state is field 0)."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()


def pid_alive(pid):
    """True if ``pid`` runs (a zombie counts as dead)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        return _stat_fields(pid)[0] != "Z"
    except (OSError, IndexError):
        return False


def start_time(pid):
    """Start time of ``pid`` in clock ticks since boot (None if gone).

    Always from ``/proc`` (not psutil's float), so that every writer and
    reader of :data:`PIDS_FILE` compares the same numbers."""
    try:
        return int(_stat_fields(pid)[19])
    except (OSError, ValueError, IndexError):
        return None


def group_members(pgid):
    """PIDs of the live (not zombie) processes of process group ``pgid``."""
    if psutil is not None:
        members = []
        for proc in psutil.process_iter():
            with contextlib.suppress(psutil.Error, OSError):
                if os.getpgid(proc.pid) == pgid and proc.status() != psutil.STATUS_ZOMBIE:
                    members.append(proc.pid)
        return members
    members = []
    for pid in _pids():
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = _stat_fields(pid)
            if int(fields[2]) == pgid and fields[0] != "Z":
                members.append(pid)
    return members


def group_alive(pgid):
    """True while process group ``pgid`` has a live process."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # killpg(0) also succeeds for a group of zombies only: look closer.
    return bool(group_members(pgid))


def cmdline(pid):
    """The command line of ``pid`` as one string ('' if gone)."""
    if psutil is not None:
        with contextlib.suppress(psutil.Error, OSError):
            return " ".join(psutil.Process(pid).cmdline())
        return ""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def _cwd(pid):
    if psutil is not None:
        with contextlib.suppress(psutil.Error, OSError):
            return psutil.Process(pid).cwd()
        return None
    try:
        return os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return None


def belongs(pid, run_dir):
    """True if process ``pid`` was started for ``run_dir`` (cwd or argv)."""
    return _cwd(pid) == str(run_dir) or str(run_dir) in cmdline(pid)


def die_with_parent():
    """A ``preexec_fn``: the new process gets SIGTERM when the thread that
    started it dies (Linux ``PR_SET_PDEATHSIG``; elsewhere the sweep)."""
    parent = os.getpid()  # evaluated in the parent, before the fork
    # looked up in the parent: a dlopen in the child of a threaded parent
    # can deadlock on the loader's lock before the exec
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except Exception:  # noqa: BLE001 - not Linux: rely on the sweep
        prctl = None

    def preexec():
        if prctl is None:
            return
        prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the parent died before prctl
            os.kill(os.getpid(), signal.SIGTERM)

    return preexec


def terminate_group(pid, proc=None, timeout=STOP_TIMEOUT, whole_group=False):
    """SIGTERM ``pid`` (a group leader), wait, then SIGKILL its group.

    :param proc: the ``subprocess.Popen`` of ``pid``, if ours (reaped).
    :param whole_group: send the SIGTERM to every process of the group
        (used for leftovers, whose leader may be gone).
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
        if not group_alive(pid):
            break
        time.sleep(0.05)
    else:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
        for _ in range(100):
            if proc is not None:
                proc.poll()
            if not group_alive(pid):
                break
            time.sleep(0.05)
    if proc is not None:
        with contextlib.suppress(Exception):
            proc.wait(timeout=1)


def write_pids(run_dir, procs):
    """Write :data:`PIDS_FILE` in ``run_dir``: this process as owner (with
    its start time) and ``{name: pid}`` of ``procs`` (``{name: Popen}``)."""
    data = {"owner": os.getpid(), "owner_start": start_time(os.getpid()),
            "run_dir": str(run_dir),
            "pids": {name: p.pid for name, p in procs.items()}}
    path = pathlib.Path(run_dir) / PIDS_FILE
    tmp = path.with_name(f"{PIDS_FILE}.tmp")
    tmp.write_text(json.dumps(data))
    tmp.replace(path)


def sweep(workdir, active=(), log=print):
    """Kill what runs of dead test processes left behind; remove their dirs.

    For every ``<RUN_PREFIX>*/<PIDS_FILE>`` under ``workdir`` whose owner process is
    gone (or is this process, for a run it has stopped or failed to
    start), except the run directories in ``active``: SIGTERM, then
    SIGKILL, each recorded process group that still has a process started
    for that run directory, then delete the directory.

    :returns: number of process groups killed.
    """
    workdir = pathlib.Path(workdir)
    killed = 0
    if not workdir.exists():
        return 0
    for pidfile in sorted(workdir.glob(f"{RUN_PREFIX}*/{PIDS_FILE}")):
        try:
            data = json.loads(pidfile.read_text())
        except (OSError, ValueError):
            continue
        owner = data.get("owner")
        if owner and owner != os.getpid() and pid_alive(owner) and \
                start_time(owner) == data.get("owner_start"):
            continue  # a live test run owns it
        run_dir = pidfile.parent
        if str(run_dir) in active:
            continue
        for name, pgid in data.get("pids", {}).items():
            members = [p for p in group_members(pgid) if belongs(p, run_dir)]
            if not members:
                continue
            log(f"killing leftover {name} (process group {pgid}) of {run_dir}")
            terminate_group(pgid, timeout=SWEEP_TIMEOUT, whole_group=True)
            killed += 1
        shutil.rmtree(run_dir, ignore_errors=True)
    return killed
