"""Tests of novaseries.ironic.service itself: errors, clean stop, no leftovers.

Only the standard library and the Ironic venv (for the tests that start
``ironic-dbsync``/``ironic``) are needed; Nova is not.
"""

import json
import os
import pathlib
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

import _guard

from novaseries import procs
from novaseries.ironic import run_env, service

ROOT = pathlib.Path(service.__file__).resolve().parents[2]


def venv_or_skip(test):
    venv = pathlib.Path(os.environ.get(run_env.VENV) or
                        service.venv_dir())
    if not (venv / 'bin' / 'ironic').exists():
        if _guard.REQUIRED:
            test.fail('no Ironic venv at %s' % venv)
        test.skipTest('no Ironic venv at %s (novaseries ironic'
                      ' install)' % venv)
    return venv


def gone(pid, timeout):
    """Wait until process ``pid`` is gone (or a zombie); True if it is."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not procs.pid_alive(pid):
            return True
        time.sleep(0.05)
    return False


class TestErrors(unittest.TestCase):

    def setUp(self):
        self.workdir = pathlib.Path(tempfile.mkdtemp(prefix='realironic-'))
        self.addCleanup(subprocess.run, ['rm', '-rf', str(self.workdir)])

    def test_only_loopback(self):
        for host in ('0.0.0.0', '10.0.0.1', '192.168.1.1', 'example.com'):
            self.assertRaises(service.RealIronicError,
                              lambda: service.RealIronic(host=host))
        procs.check_loopback('127.0.0.1')
        procs.check_loopback('::1')

    def test_port_taken(self):
        venv = venv_or_skip(self)
        with socket.socket() as s:
            s.bind(('127.0.0.1', 0))
            s.listen()
            port = s.getsockname()[1]
            ir = service.RealIronic(venv, self.workdir, port=port)
            e = self.assertRaises(service.RealIronicError, ir.start)
        self.assertIn('port 127.0.0.1:%d is already taken' % port, str(e))
        self.assertIsNone(ir.pid)

    def test_schema_error_shows_log_tail(self):
        venv = venv_or_skip(self)
        ir = service.RealIronic(
            venv, self.workdir, extra_conf='[database]\nconnection = '
            'sqlite:////nonexistent-dir/ironic.sqlite\n')
        t0 = time.monotonic()
        e = self.assertRaises(service.RealIronicError, ir.start)
        msg = str(e)
        self.assertIn('ironic-dbsync create_schema failed', msg)
        self.assertIn('unable to open database file', msg)
        self.assertLess(time.monotonic() - t0, 30)
        # the image server it had started is stopped again
        self.assertIsNone(ir.pid)
        self.assertEqual({}, ir._procs)

    def assertRaises(self, exc, fn, *args):
        try:
            fn(*args)
        except exc as e:
            return e
        self.fail('%s not raised' % exc.__name__)


class TestNoLeftovers(unittest.TestCase):

    def setUp(self):
        self.workdir = pathlib.Path(tempfile.mkdtemp(prefix='realironic-'))
        self.addCleanup(subprocess.run, ['rm', '-rf', str(self.workdir)])

    def _dead_pid(self):
        p = subprocess.Popen(['true'])
        p.wait()
        return p.pid

    def test_sweep_kills_processes_of_dead_owner(self):
        run_dir = self.workdir / (procs.RUN_PREFIX + '1')
        run_dir.mkdir()
        leftover = subprocess.Popen(['sleep', '300'], cwd=run_dir,
                                    start_new_session=True)
        self.addCleanup(lambda: leftover.poll() is None and leftover.kill())
        # not ours: same kind of process, another cwd, listed too
        other = subprocess.Popen(['sleep', '300'], start_new_session=True)
        self.addCleanup(other.kill)
        (run_dir / 'pids.json').write_text(json.dumps({
            'owner': self._dead_pid(), 'owner_start': 1,
            'pids': {'ironic': leftover.pid, 'http': other.pid}}))
        self.assertEqual(1, service.sweep(self.workdir, log=lambda m: None))
        self.assertEqual(-signal.SIGTERM, leftover.wait(timeout=10))
        self.assertIsNone(other.poll())
        self.assertFalse(run_dir.exists())

    def test_sweep_leaves_live_runs_alone(self):
        run_dir = self.workdir / (procs.RUN_PREFIX + '2')
        run_dir.mkdir()
        proc = subprocess.Popen(['sleep', '300'], cwd=run_dir,
                                start_new_session=True)
        self.addCleanup(proc.kill)
        owner = subprocess.Popen(['sleep', '300'])
        self.addCleanup(owner.kill)
        (run_dir / 'pids.json').write_text(json.dumps({
            'owner': owner.pid,
            'owner_start': procs.start_time(owner.pid),
            'pids': {'ironic': proc.pid}}))
        self.assertEqual(0, service.sweep(self.workdir, log=lambda m: None))
        self.assertIsNone(proc.poll())
        self.assertTrue(run_dir.exists())

    def test_killed_test_process_leaves_no_ironic(self):
        """SIGKILL a process that started a real Ironic: nothing remains."""
        venv = venv_or_skip(self)
        code = ('import sys, time; from novaseries.ironic import service\n'
                'ir = service.RealIronic(%r, %r).start()\n'
                'print(ir.pid, ir._procs["http"].pid, ir.run_dir, flush=True)\n'
                'time.sleep(600)\n' % (str(venv), str(self.workdir)))
        child = subprocess.Popen(
            [sys.executable, '-c', code], stdout=subprocess.PIPE, text=True,
            env=dict(os.environ, PYTHONPATH=str(ROOT)))
        self.addCleanup(lambda: child.poll() is None and child.kill())
        line = child.stdout.readline().split()
        self.assertEqual(3, len(line), 'child did not start Ironic')
        master, http, run_dir = int(line[0]), int(line[1]), line[2]
        worker = [p for p in procs.group_members(master) if p != master]
        self.assertTrue(worker, 'no ironic worker process found')
        child.kill()
        child.wait()
        for pid in [master, http] + worker:
            self.assertTrue(gone(pid, 30), 'pid %d survived its test '
                            'process' % pid)
        # and the next start's sweep removes the run directory
        service.sweep(self.workdir, log=lambda m: None)
        self.assertFalse(pathlib.Path(run_dir).exists())


class TestSharedStop(unittest.TestCase):
    """Stopping the test run's Ironic leaves no process (runs last)."""

    def test_stop_leaves_nothing(self):
        venv_or_skip(self)
        ir = service.shared()
        master = ir.pid
        members = procs.group_members(master)
        http = ir._procs['http'].pid
        run_dir = ir.run_dir
        seconds = ir.stop(keep=False)
        print('stop took %.1f s' % seconds)
        for pid in members + [http]:
            self.assertFalse(procs.pid_alive(pid), pid)
        self.assertFalse(procs.group_alive(master))
        self.assertFalse(run_dir.exists())
        self.assertLess(seconds, 25)
