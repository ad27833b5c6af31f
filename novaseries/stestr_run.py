"""One stestr run: list its tests, run them into a subunit stream, say its
progress, count its results as :class:`~novaseries.outcomes.Outcome`.

Each run lists its tests first and writes a subunit stream
(``build/results/...``); counts come from that stream
(:mod:`novaseries.nova_side.subunit_status`), never from parsing human output, held
to the list: a listed test that never ended (its worker killed) is a
failure named in the summary.  A selection that runs no test, or whose
tests all skip, is a failure, and so is a stestr run that exits non-zero
with no failed test, and an expected failure in the series' own tests.
"""

import json
import pathlib
import re
import shutil
import subprocess
import time

from novaseries.outcomes import Outcome
from novaseries.util import LOG, LOG_TAIL_LINES, NOVA_SIDE, HarnessError, say
from novaseries.venvs import is_python3, test_env


#: subunit's status of a test that ended -> what it counts as; ``xfail``
#: counts as passed but in the series' own tests (:func:`count`).
_STATUS = {"success": "passed", "xfail": "xfail", "skip": "skipped"}
#: subunit's status of a test that never ended: ``inprogress`` (its worker
#: died under it), ``exists`` (listed, never started).
_UNENDED = ("inprogress", "exists")


def parse_statuses(found, listed=()):
    """``{test_id: status}`` from ``found`` (``{test_id: subunit status}``,
    :mod:`novaseries.nova_side.subunit_status`) and ``listed`` (the test ids stestr
    was asked to run): passed, failed, skipped, xfail, or ``lost`` for a
    test listed or started that never ended (a worker killed under it or
    before it; uxsuccess, fail and any other status: failed)."""
    results = {test_id: "lost" for test_id in listed}
    for test_id, status in found.items():
        if status in _UNENDED:
            results[test_id] = "lost"
        elif status:
            results[test_id] = _STATUS.get(status, "failed")
    return results


def split_by_filter(results, filters):
    """Attribute tests to the first stestr filter (regex) matching their id.

    Returns ``[(filter, {test_id: status})]`` in filter order; tests matching
    none go to an extra ``(None, ...)`` entry if any.
    """
    groups = [(f, {}) for f in filters]
    rest = {}
    for test_id, status in results.items():
        for pattern, group in groups:
            if re.search(pattern, test_id):
                group[test_id] = status
                break
        else:
            rest[test_id] = status
    return groups + ([(None, rest)] if rest else [])


#: How many test ids a note names at most.
NAMED = 5


def _named(ids):
    """``ids`` sorted, at most :data:`NAMED` of them, for a note."""
    ids = sorted(ids)
    more = f" and {len(ids) - NAMED} more" if len(ids) > NAMED else ""
    return ", ".join(ids[:NAMED]) + more


def count(name, results, note="", own=()):
    """An :class:`Outcome` from ``{test_id: status}`` (:func:`parse_statuses`).

    Failures beyond the failed tests, each said in the note: no test at all;
    every test skipped; a test that never ended (``lost``: its worker was
    killed); an expected failure (``xfail``) in a test of the modules
    ``own`` (dotted names: the series' own tests, where an expected failure
    hides a test that no longer shows what it asserts; Nova's own count as
    passed).
    """
    outcome = Outcome(name)
    problems = [note] if note else []
    lost, hidden = [], []
    for test_id, status in results.items():
        if status == "lost":
            lost.append(test_id)
        elif status == "xfail" and test_id.startswith(tuple(m + "." for m in own)):
            hidden.append(test_id)
        else:
            status = "passed" if status == "xfail" else status
            setattr(outcome, status, getattr(outcome, status) + 1)
    if lost:
        outcome.failed += len(lost)
        problems.append(f"{len(lost)} tests never ended (a test worker killed?): "
                        f"{_named(lost)}")
    if hidden:
        outcome.failed += len(hidden)
        problems.append(f"{len(hidden)} expected failures in the series' own tests: "
                        f"{_named(hidden)}")
    if not results:
        outcome.failed += 1
        problems.append("ran no tests")
    elif outcome.skipped == len(results):
        outcome.failed += 1
        problems.append("every test skipped")
    outcome.note = "; ".join(problems)
    return outcome


#: Seconds between two progress lines of a running stestr.
STESTR_PROGRESS_EVERY = 15.0

#: subunit v2 status values (the low 3 bits of a packet's flags) of a test
#: that has ended: success, uxsuccess, skip, fail, xfail.
_ENDED = {3: "passed", 4: "failed", 5: "skipped", 6: "failed", 7: "passed"}


class SubunitCounter:
    """Counts the tests of a subunit v2 byte stream fed in pieces.

    Reads only each packet's header: the signature byte 0xB3, two flag
    bytes (status in the low 3 bits) and the packet's total length (a
    1-4 byte number: the top two bits of its first byte say how many bytes
    follow, the rest is big-endian), then skips the packet.

    ``counts``: ``{"passed": n, "failed": n, "skipped": n}`` of the tests
    that ended; ``listed``: the tests announced with status ``exists``
    (0 when the producer does not list them first).
    """

    def __init__(self):
        self.counts = {"passed": 0, "failed": 0, "skipped": 0}
        self.listed = 0
        self._buffer = b""

    @property
    def done(self):
        """How many tests have ended."""
        return sum(self.counts.values())

    def feed(self, data):
        """Count the packets that ``data`` (the next bytes of the stream)
        completes; an incomplete packet waits for the next call."""
        buf = self._buffer + data
        pos = 0
        while True:
            start = buf.find(b"\xb3", pos)
            if start < 0 or len(buf) - start < 4:
                pos = len(buf) if start < 0 else start
                break
            size = (buf[start + 3] >> 6) + 1
            if len(buf) - start < 3 + size:
                pos = start
                break
            length = buf[start + 3] & 0x3F
            for byte in buf[start + 4:start + 3 + size]:
                length = (length << 8) | byte
            if length < 4 + size or len(buf) - start < length:
                if length < 4 + size:  # not a packet: resynchronise
                    pos = start + 1
                    continue
                pos = start
                break
            status = buf[start + 2] & 0x07
            if status in _ENDED:
                self.counts[_ENDED[status]] += 1
            elif status == 1:  # exists: the producer lists its tests
                self.listed += 1
            pos = start + length
        self._buffer = buf[pos:]


def _watch_progress(path, proc, label, every=STESTR_PROGRESS_EVERY, clock=time.monotonic,
                    wait=None):
    """While ``proc`` runs, say every ``every`` seconds how many tests of
    the subunit stream at ``path`` have ended.  Returns the counter."""
    counter = SubunitCounter()
    start = clock()
    wait = wait or (lambda: proc.wait(timeout=every))
    with open(path, "rb") as stream:
        while True:
            try:
                wait()
                finished = True
            except subprocess.TimeoutExpired:
                finished = False
            counter.feed(stream.read())
            if finished:
                return counter
            c = counter.counts
            total = f"/{counter.listed}" if counter.listed else ""
            say(f"  [{label}] {counter.done}{total} tests done ({c['failed']} failed, "
                f"{c['skipped']} skipped), {clock() - start:.0f} s")


def exclude_list(tree, name, out):
    """Write ``out`` from the tree's exclude list file ``name`` as Nova's
    ``tools/generate-exclude.sh`` does (comment and empty lines dropped)
    and return it, for ``stestr --exclude-list``.

    :raises HarnessError: the tree has no such file.
    """
    source = pathlib.Path(tree) / name
    if not source.is_file():
        raise HarnessError(f"{tree}: no exclude list {name} (targets.toml names it)")
    lines = [line for line in source.read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    out.write_text("".join(line + "\n" for line in lines))
    return out


#: Run inside a target's venv: a stream's last status per test.
SUBUNIT_STATUS = NOVA_SIDE / "subunit_status.py"
#: stestr's ``PYTHON`` for a run with ``roots`` (:func:`run_stestr`).
LOADER = NOVA_SIDE / "stestr_loader.py"
#: The environment variable that gives :data:`LOADER` a listing's roots
#: (the loader's ``ROOTS_ENV``: it runs in Nova's venv, the harness
#: does not import it).
ROOTS_ENV = "NOVASERIES_TEST_ROOTS"


def uses_loader(venv, roots):
    """True when a run with ``roots`` in ``venv`` starts its processes
    through :data:`LOADER` (:func:`loader_env`): roots given, a Python 3
    venv (the loader's language)."""
    return bool(roots) and is_python3(venv)


def loader_env(env, venv, roots):
    """``env`` for stestr to start its processes through :data:`LOADER`
    with ``venv``'s interpreter, the listing loading ``roots`` (dotted
    modules and packages, :func:`novaseries.selecting.test_roots`) instead
    of discovering the whole test path; ``env`` itself when ``roots`` is
    None or the venv is not a Python 3 one (the loader's language).

    :raises HarnessError: a path with a space (stestr splits ``$PYTHON``
        on spaces)."""
    if not uses_loader(venv, roots):
        return env
    python = f"{venv / 'bin' / 'python'} {LOADER}"
    if python.count(" ") != 1:
        raise HarnessError(f"stestr cannot run {python!r}: a path with a space")
    return dict(env, PYTHON=python, **{ROOTS_ENV: " ".join(roots)})


def _stestr(venv, repo, test_path, *args):
    """An stestr command line (strings) on the repository ``repo``, with
    ``--test-path test_path`` when given."""
    cmd = [venv / "bin" / "stestr", "--repo-url", repo]
    if test_path:
        cmd += ["--test-path", test_path]
    return [str(c) for c in (*cmd, *args)]


def list_tests(venv, tree, env, filters, repo, test_path=None, exclude=None):
    """The test ids ``stestr list`` gives for ``filters`` (and the exclude
    list file ``exclude``), as the run will get them; ``(ids, "")``, or
    ``(None, why)`` when stestr could not list them (a test module that
    does not import).  Makes the stestr repository ``repo`` first (the
    run then uses it)."""
    init = subprocess.run(_stestr(venv, repo, None, "init"), cwd=tree, env=env,
                          capture_output=True, stdin=subprocess.DEVNULL)
    if init.returncode:
        return None, f"stestr init exited {init.returncode}: {init.stderr.decode()[-300:]}"
    cmd = _stestr(venv, repo, test_path, "list", *filters,
                  *(("--exclude-list", exclude) if exclude else ()))
    proc = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, stdin=subprocess.DEVNULL)
    if proc.returncode:
        output = (proc.stdout + proc.stderr).decode(errors="replace")
        tail = output.strip().splitlines()[-LOG_TAIL_LINES:]
        LOG.error("\n".join("    " + line for line in tail))
        return None, f"stestr list exited {proc.returncode}: {tail[-1] if tail else ''}"
    # every line is a test id (one a line, spaces included: a scenario's
    # name); a line that is not one fails as a test that never ended
    return [line.strip() for line in proc.stdout.decode(errors="replace").splitlines()
            if line.strip()], ""


def stream_statuses(venv, stream, env):
    """``{test_id: subunit status}`` of the subunit stream at ``stream``
    (:mod:`novaseries.nova_side.subunit_status`, run with the venv's python).

    :raises HarnessError: the stream could not be read."""
    with open(stream, "rb") as data:
        proc = subprocess.run([str(venv / "bin" / "python"), str(SUBUNIT_STATUS)],
                              stdin=data, capture_output=True, env=env)
    if proc.returncode:
        raise HarnessError(f"could not read the subunit stream {stream}",
                           proc.stderr.decode(errors="replace")[-2000:])
    return json.loads(proc.stdout.decode("utf-8", "replace"))


def run_stestr(target, venv, tree, filters, outdir, label, test_path=None, progress=None,
               exclude=None, concurrency=None, roots=None):
    """``stestr list`` then ``stestr run --subunit --load-list`` of the
    tests of ``filters``; return ``{test_id: status}``
    (:func:`parse_statuses`: a listed test that never ended is ``lost``)
    and a note, non-empty when stestr could not list the tests or exited
    non-zero with no failed test (the caller counts such a run as a
    failure, :func:`stestr_failure`).  Says how many tests
    have ended every :data:`STESTR_PROGRESS_EVERY` seconds while it runs, as
    ``[<progress or label>] ...``.  ``exclude``: an exclude list file in
    the tree (see :func:`exclude_list`), as the mode's tox env passes it;
    ``concurrency``: stestr's workers (None: its default, one per core);
    ``roots``: the modules and packages that hold the tests
    (:func:`novaseries.selecting.test_roots`), which each of the run's
    processes then imports instead of every test module under the test
    path (:func:`loader_env`).  The run's stestr repository is
    ``outdir/<label>.stestr`` (not the tree's ``.stestr``), so that runs
    at the same time in one tree do not share one.  Listing first costs
    nothing more: given the list, the run does not discover the tests
    again."""
    outdir.mkdir(parents=True, exist_ok=True)
    stream, errlog = outdir / f"{label}.subunit", outdir / f"{label}.stderr.log"
    listing = outdir / f"{label}.list"
    repo = outdir / f"{label}.stestr"  # stestr keeps its files in repo/.stestr
    shutil.rmtree(repo, ignore_errors=True)
    repo.mkdir()
    env = loader_env(test_env(target, venv, tree), venv, roots)
    if exclude:
        exclude = exclude_list(tree, exclude, outdir / f"{label}.exclude.txt")
    listed, note = list_tests(venv, tree, env, filters, repo, test_path, exclude)
    if listed is None:
        return {}, note
    listing.write_text("".join(test_id + "\n" for test_id in listed))
    if not listed:
        return {}, ""
    cmd = _stestr(venv, repo, test_path, "run", "--subunit", "--load-list", listing,
                  *(("--concurrency", concurrency) if concurrency else ()))
    with open(stream, "wb") as out, open(errlog, "wb") as err:
        proc = subprocess.Popen(cmd, cwd=tree, env=env, stdout=out,
                                stderr=err, stdin=subprocess.DEVNULL)
        try:
            _watch_progress(stream, proc, progress or label)
        except Exception as exc:  # progress is a courtesy: never lose the run
            LOG.warning(f"warning: progress of {stream} not shown: {exc!r}")
        finally:
            try:
                rc = proc.wait()
            except BaseException:
                proc.kill()
                proc.wait()
                raise
    results = parse_statuses(stream_statuses(venv, stream, env), listed)
    if rc and not any(s in ("failed", "lost") for s in results.values()):
        note = (f"stestr exited {rc} with no failed test (tests may be missing); "
                f"see {errlog}")
        tail = errlog.read_text(errors="replace").strip().splitlines()[-LOG_TAIL_LINES:]
        LOG.error("\n".join("    " + line for line in tail))
    failed = sorted(t for t, s in results.items() if s in ("failed", "lost"))
    if failed:
        LOG.error(f"    failed or unended tests ({len(failed)}), details: "
                  f"{venv}/bin/subunit2pyunit < {stream}\n"
                  + "\n".join(f"      {test_id}" for test_id in failed[:30]))
    return results, note


def stestr_failure(name, note):
    """The failed :class:`Outcome` of a stestr run whose ``note``
    (:func:`run_stestr`) says it exited non-zero with no failed test; None
    for a run without such a note."""
    return Outcome(name, failed=1, note=note) if note else None
