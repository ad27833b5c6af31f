"""The scenario player as the explorer drives it: one process in ``--serve``
mode (``nova_side/player/play_explore.py``) in a Nova tree, in a target's
venv and concurrency mode, that plays one case at a time
(:class:`ServingPlayer`).
"""

import json
import pathlib
import queue
import subprocess
import threading
import time

from novaseries import procs
from novaseries.mainjob.trees import PLAYER, player_env
from novaseries.scenarios.explore_space import SERVE_DONE
from novaseries.util import HarnessError

#: Seconds one case may take in the player before it is killed (its
#: scenario gives up after ``play_fake.FAKE_SETTLE_TIMEOUT`` seconds per
#: wait; this is for a player that hangs).
CASE_TIMEOUT = 300
#: Seconds a player whose stdin is closed may take to end.
STOP_TIMEOUT = 30
#: Cases one player process plays before the next one takes over (each
#: case sets Nova's test fixtures up anew; a long life adds up what they
#: leave behind).
CASES_PER_PROCESS = 100


class ServingPlayer:
    """``python -m PLAYER --serve`` in ``tree`` (a Nova tree with the
    series' fake Ironic), in ``venv`` with ``target``'s environment (its
    mode's).  Its stderr goes to ``log``; each case's observation to a
    file of ``workdir``.  A player that dies or hangs is replaced at the
    next case.  Use as a context manager (it stops the process)."""

    def __init__(self, target, venv, tree, workdir, log):
        self.target, self.venv, self.tree = target, venv, tree
        self.workdir = pathlib.Path(workdir)
        self.log = pathlib.Path(log)
        self.proc = None
        self.lines = None
        self.played = 0
        self.count = 0
        self.answered = 0

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *exc):
        # (interrupted, e.g. SIGTERM's SystemExit: the case is not waited for)
        self.stop(kill=exc_type is not None)

    def _start(self):
        self.workdir.mkdir(parents=True, exist_ok=True)
        with open(self.log, 'a') as log:
            # (the player dies with the harness, even when it is SIGKILLed)
            self.proc = subprocess.Popen(
                [str(self.venv / 'bin' / 'python'), '-m', PLAYER, '--serve'],
                cwd=self.tree, env=player_env(self.target, self.venv, self.tree),
                text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=log, preexec_fn=procs.die_with_parent())
        self.lines = queue.Queue()
        threading.Thread(target=self._read, args=(self.proc, self.lines),
                         daemon=True).start()
        self.played = 0

    @staticmethod
    def _read(proc, lines):
        for line in proc.stdout:
            lines.put(line.rstrip('\n'))
        lines.put(None)

    def stop(self, kill=False):
        """Stop the player process, if any: its stdin closed, it ends
        after its case (killed if it has not within :data:`STOP_TIMEOUT`
        seconds); with ``kill``, killed at once."""
        if self.proc is None:
            return
        proc, self.proc = self.proc, None
        try:
            if kill:
                raise OSError
            proc.stdin.close()
            proc.wait(timeout=STOP_TIMEOUT)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait()

    def play(self, name, case):
        """Play ``case`` (a dict of ``explore_space.CASE_FIELDS``) as
        scenario ``name``; return its observation (keys:
        ``scenario_table.OBSERVATION``).  A player that died or hung gives
        an observation with its ``error`` (and is replaced next time).

        :raises HarnessError: the player answered no case yet and died or
            hung (it cannot play: :meth:`_lost`).
        """
        if self.proc is None or self.played >= CASES_PER_PROCESS or \
                self.proc.poll() is not None:
            self.stop()
            self._start()
        self.count += 1
        self.played += 1
        out = self.workdir / f"case-{self.count}.json"
        out.unlink(missing_ok=True)
        try:
            self.proc.stdin.write(json.dumps(
                {'name': name, 'case': case, 'out': str(out)}) + '\n')
            self.proc.stdin.flush()
        except OSError:
            pass  # it died: read what it said
        deadline = time.monotonic() + CASE_TIMEOUT
        while True:
            try:
                line = self.lines.get(timeout=max(0, deadline - time.monotonic()))
            except queue.Empty:
                return self._lost(name, f"no answer after {CASE_TIMEOUT} s")
            if line is None:
                return self._lost(name, f"the player exited ({self.proc.wait()})")
            if line == SERVE_DONE + str(out):
                obs = json.loads(out.read_text())
                out.unlink()
                self.answered += 1
                return obs
            # (another line: Nova's fixtures print to stdout too)

    def _lost(self, name, why):
        """The observation of a case the player did not answer; the
        process is killed (the next case starts another).

        :raises HarnessError: the player never answered a case (it cannot
            start: its log's end is in the details).
        """
        self.proc.kill()
        self.proc.wait()
        self.proc = None
        if not self.answered:
            raise HarnessError(f"the scenario player answered no case: {why}; its "
                               f"log: {self.log}", procs.log_tail(self.log))
        return {'scenario': name, 'error': f"{why}; its log: {self.log}"}
