"""``test``: run Nova's targeted tests and flake8 on a tree, in the target's venv.

The venv (``build/venvs/TARGET``) gets the target's pins, then the Nova
sdist itself with ``--no-deps`` (only for its metadata and entry points);
the code under test is the tree's, via cwd + PYTHONPATH.  The venv is reused
while a digest of its recipe (pins file, Nova version, interpreter, pip
arguments) is unchanged.

Each stestr run lists its tests first and writes a subunit stream
(``build/results/...``); counts come from that stream
(:mod:`novaseries.subunit_status`), never from parsing human output, held
to the list: a listed test that never ended (its worker killed) is a
failure named in the summary.  A selection that runs no test, or whose
tests all skip, is a failure, and so is a stestr run that exits non-zero
with no failed test, and an expected failure in the series' own tests.
"""

import concurrent.futures
import hashlib
import json
import os
import pathlib
import re
import shutil
import subprocess
import threading
import time

from novaseries import pep8job
from novaseries import sdist as sdist_mod
from novaseries.outcomes import Outcome, cannot_run
from novaseries import tree as tree_mod
from novaseries.tree import changed_files
from novaseries.util import (LOG, HarnessError, build_venv, find_interpreter,
                             interpreter_identity, run, say)

#: Bump when the install recipe below changes, to rebuild existing venvs.
RECIPE = "2"
MARKER = "novaseries-recipe.sha256"
FUNCTIONAL_PATH = "./nova/tests/functional"
FUNCTIONAL_DIR = "nova/tests/functional/"
#: Paths no unit test imports or reads: a commit touching only these cannot
#: change unit results, so check-commits does not re-run the unit selections.
UNIT_IRRELEVANT = ("nova/tests/functional/", "releasenotes/", "doc/", "api-guide/",
                   "api-ref/")


#: subunit's status of a test that ended -> what it counts as; ``xfail``
#: counts as passed but in the series' own tests (:func:`count`).
_STATUS = {"success": "passed", "xfail": "xfail", "skip": "skipped"}
#: subunit's status of a test that never ended: ``inprogress`` (its worker
#: died under it), ``exists`` (listed, never started).
_UNENDED = ("inprogress", "exists")


def parse_statuses(found, listed=()):
    """``{test_id: status}`` from ``found`` (``{test_id: subunit status}``,
    :mod:`novaseries.subunit_status`) and ``listed`` (the test ids stestr
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


def _recipe_digest(target, identity):
    """What the venv is made of: the pins, the Nova sdist, the venv tool and
    pip arguments, and the interpreter's identity (implementation, version,
    machine: :func:`~novaseries.util.interpreter_identity`), not its path,
    so that a venv made by ``.ci/run`` (harness venv's Python) is reused by
    ``python3 -m novaseries`` (the system's) and the other way round."""
    digest = hashlib.sha256()
    digest.update(target.pins.read_bytes())
    for part in (RECIPE, target.version, target.sha256, target.interpreter,
                 identity, target.venv_tool, *target.pip_args):
        digest.update(b"\0" + part.encode())
    return digest.hexdigest()


def ensure_venv(ctx, target):
    """Create or reuse ``build/venvs/NAME`` (the target's ``venv``, by default
    its name); return ``(path, seconds spent)``.

    :func:`novaseries.util.build_venv` holds ``build/venvs/NAME.lock``
    meanwhile: a second command that needs the same venv waits for the
    first (and then reuses what it built)."""
    interpreter = find_interpreter(target.interpreter)
    if not target.pins.is_file():
        raise HarnessError(f"target {target.name}: pins file {target.pins} is missing")
    venv = ctx.venv(target.venv_name)

    def installs():  # the pins, then Nova's sdist without its dependencies
        sdist = sdist_mod.fetch(target, ctx.sdist_cache)
        return [[*target.pip_args, "-r", target.pins], ["--no-deps", sdist]]
    return build_venv(venv, interpreter, installs,
                      _recipe_digest(target, interpreter_identity(interpreter)),
                      ctx.results(target.name) / "venv-install.log",
                      tool=target.venv_tool, marker=venv / MARKER)


def test_env(target, venv, tree):
    """Nova's tox environment for a run from ``tree`` with ``venv``."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "PYTHONHOME", "PYTHONPATH", "PYTHONSTARTUP")}
    env.update(target.env)
    env["PATH"] = f"{venv}/bin{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(venv)
    env["PYTHONPATH"] = str(tree)
    return env


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


def compile_tree(venv, tree):
    """Byte-compile ``tree``'s ``nova`` package for ``venv``'s interpreter.

    Nova's test environment sets ``PYTHONDONTWRITEBYTECODE=1``, so without
    this every stestr process (its test discovery and each worker) compiles
    every Nova module it imports from source again: a few CPU seconds per
    process, for about seventy stestr runs in ``ci``.  Python 3 keeps the
    compiled files in ``__pycache__`` per interpreter (``cpython-311``,
    ``cpython-313``), checks each against its source's mtime and size
    before using it and ignores those without a source, so a checkout of
    another commit only recompiles what it changed.  Nothing for a Python 2
    venv (pike): Python 2 writes ``.pyc`` beside the source and imports one
    whose source is gone.  Git ignores the files (``__pycache__`` in the
    tree's exclude list).  A failure only costs that time, never the run.
    """
    if not any(pathlib.Path(venv, "lib").glob("python3*")):
        return
    proc = subprocess.run([str(pathlib.Path(venv, "bin", "python")), "-m", "compileall",
                           "-q", "-j", "0", "nova"], cwd=tree, stdin=subprocess.DEVNULL,
                          capture_output=True)
    if proc.returncode:
        LOG.warning(f"warning: compileall in {tree} exited {proc.returncode}: "
                    f"{proc.stdout.decode(errors='replace')[-500:]}")


#: Run inside a target's venv: a stream's last status per test.
SUBUNIT_STATUS = pathlib.Path(__file__).with_name("subunit_status.py")


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
        tail = (proc.stdout + proc.stderr).decode(errors="replace").strip().splitlines()[-15:]
        LOG.error("\n".join("    " + line for line in tail))
        return None, f"stestr list exited {proc.returncode}: {tail[-1] if tail else ''}"
    # every line is a test id (one a line, spaces included: a scenario's
    # name); a line that is not one fails as a test that never ended
    return [line.strip() for line in proc.stdout.decode(errors="replace").splitlines()
            if line.strip()], ""


def stream_statuses(venv, stream, env):
    """``{test_id: subunit status}`` of the subunit stream at ``stream``
    (:mod:`novaseries.subunit_status`, run with the venv's python).

    :raises HarnessError: the stream could not be read."""
    with open(stream, "rb") as data:
        proc = subprocess.run([str(venv / "bin" / "python"), str(SUBUNIT_STATUS)],
                              stdin=data, capture_output=True, env=env)
    if proc.returncode:
        raise HarnessError(f"could not read the subunit stream {stream}",
                           proc.stderr.decode(errors="replace")[-2000:])
    return json.loads(proc.stdout.decode("utf-8", "replace"))


def run_stestr(target, venv, tree, filters, outdir, label, test_path=None, progress=None,
               exclude=None, concurrency=None):
    """``stestr list`` then ``stestr run --subunit --load-list`` of the
    tests of ``filters``; return ``{test_id: status}``
    (:func:`parse_statuses`: a listed test that never ended is ``lost``)
    and a note, non-empty when stestr could not list the tests or exited
    non-zero with no failed test (the caller counts such a run as a
    failure, :func:`stestr_failure`).  Says how many tests
    have ended every :data:`STESTR_PROGRESS_EVERY` seconds while it runs, as
    ``[<progress or label>] ...``.  ``exclude``: an exclude list file in
    the tree (see :func:`exclude_list`), as the mode's tox env passes it;
    ``concurrency``: stestr's workers (None: its default, one per core).
    The run's stestr repository is ``outdir/<label>.stestr`` (not the
    tree's ``.stestr``), so that runs at the same time in one tree do not
    share one.  Listing first costs nothing more: given the list, the run
    does not discover the tests again."""
    outdir.mkdir(parents=True, exist_ok=True)
    stream, errlog = outdir / f"{label}.subunit", outdir / f"{label}.stderr.log"
    listing = outdir / f"{label}.list"
    repo = outdir / f"{label}.stestr"  # stestr keeps its files in repo/.stestr
    shutil.rmtree(repo, ignore_errors=True)
    repo.mkdir()
    env = test_env(target, venv, tree)
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
        tail = errlog.read_text(errors="replace").strip().splitlines()[-15:]
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


def test_module(path):
    """The dotted module name of a ``test_*.py`` file's path, else None."""
    name = pathlib.PurePosixPath(path)
    if name.suffix == ".py" and name.name.startswith("test_"):
        return ".".join(name.with_suffix("").parts)
    return None


def test_modules(tree, rev="HEAD", under="nova/tests/functional", since="base"):
    """Test modules (``test_*.py`` under ``under``) the series adds or
    touches in ``since..rev``, as dotted module names."""
    return [m for m in map(test_module, changed_files(tree, rev, (under,), since)) if m]


def unit_filters(target, tree, rev="HEAD", touched=None):
    """The target's unit selections that the series up to ``rev`` targets,
    plus the unit test modules it touches that they do not cover (e.g.
    nova.tests.unit.test_fixtures).

    ``touched``: the files of a commit before the last one (check-commits
    passes a commit's own files there): a selection with ``unit_paths``
    (targets.toml) runs at such a commit only when it touches one of those
    paths (the code it tests, its own tests), one without runs always (a
    commit that changes none of the code a selection tests cannot change
    its result).  Without ``touched`` (the whole series up to ``rev``:
    ``test`` at HEAD, check-commits' last commit) every selection runs,
    whatever the series touches, so that none is left out of the final
    run (one that selects nothing there fails: ``ran no tests``).
    The unit test modules outside the selections run at the commits that
    touch them (``touched`` given), else when the series touches them.  A
    target stacked on another series (``below``, e.g. master-all) adds
    only the modules its own patches touch: those of the series below ran
    in that series' target, and the patches on top do not change the code
    they test unless they touch it (then the selections cover it).
    """
    if touched is not None:
        modules = [m for m in map(test_module, touched)
                   if m and m.startswith("nova.tests.unit.")]
    else:
        below = target.below_series()
        since = tree_mod.series_commits(tree, rev)[len(below) - 1] if below else "base"
        modules = test_modules(tree, rev, "nova/tests/unit", since)
    selected = [u for u in target.unit
                if touched is None or u not in target.unit_paths or
                any(f.startswith(tuple(target.unit_paths[u])) for f in touched)]
    # (a selection naming tests in a module, ``module.Case.test_x``,
    # covers that module's changes: it names the tests a change adds)
    extra = [m for m in modules
             if not any(m == u or m.startswith(u + ".") or u.startswith(m + ".")
                        for u in target.unit)]
    return selected + [re.escape(m) + r"\b" for m in extra]


def _filter_dir(tree, pattern):
    """The directory of what one unit filter names: the package itself, or
    the directory of the module, also when the filter names a class or a
    test in it (``nova.tests.unit.x.test_y.Case.test_z``); None if it
    names nothing in the tree."""
    parts = pattern.replace("\\b", "").replace("\\", "").split(".")
    path = pathlib.Path(tree, *parts)
    if path.is_dir():
        return path
    for end in range(len(parts), 0, -1):
        module = pathlib.Path(tree, *parts[:end]).with_suffix(".py")
        if module.is_file():
            return module.parent
        if pathlib.Path(tree, *parts[:end]).is_dir():
            return None
    return None


def unit_test_groups(tree, filters):
    """``[(test_path, filters)]``: the unit ``filters`` as stestr runs, each
    with the narrowest ``--test-path`` (:func:`unit_test_path`) -- one run
    when one directory below nova/tests/unit holds them all, else one per
    directory of the filters (so that stestr does not import every unit
    test module of Nova to list a few hundred), or one run over the whole
    unit tree when a filter names nothing it can place."""
    path = unit_test_path(tree, filters)
    if path is not None:
        return [(path, list(filters))]
    groups = {}
    for pattern in filters:
        one = unit_test_path(tree, [pattern])
        if one is None:
            return [(None, list(filters))]
        groups.setdefault(one, []).append(pattern)
    return list(groups.items())


def unit_test_path(tree, filters):
    """The narrowest directory under nova/tests/unit that holds every
    module or package the unit ``filters`` name (``nova.tests.unit.x`` or
    ``nova\\.tests\\.unit\\.x\\b``), for ``stestr --test-path``; None for
    nova/tests/unit itself or a filter that names none.

    stestr imports every test module under its test path to list the tests
    and again in each worker: for the ironic driver's unit tests alone that
    is a few hundred modules fewer.
    """
    dirs = []
    for pattern in filters:
        path = _filter_dir(tree, pattern)
        if path is None:
            return None
        dirs.append(path)
    unit = pathlib.Path(tree, "nova", "tests", "unit")
    common = pathlib.Path(os.path.commonpath(dirs)) if dirs else unit
    if common == unit or unit not in common.parents:
        return None
    return "./" + common.relative_to(tree).as_posix()


def functional_modules(tree, rev="HEAD", since="base"):
    """Functional test modules the series adds or touches in
    ``since..rev`` (and that exist at ``rev``)."""
    return test_modules(tree, rev, "nova/tests/functional", since)


def functional_selections(target, tree, rev="HEAD", functional_only=None, since="base"):
    """``(modules, selections)``: what a functional run of ``target`` at
    ``rev`` runs.  ``modules``: the functional test modules the series
    touches in ``since..rev`` (:func:`functional_modules`), only those of
    ``functional_only`` when given (check-commits before the last commit);
    ``selections``: the target's ``functional``
    selections (targets.toml), at HEAD and at the last commit only
    (``functional_only`` None), with the touched modules a selection
    names or holds left to it (each test is counted once, under its
    selection)."""
    modules = functional_modules(tree, rev, since)
    if functional_only is not None:
        return [m for m in modules if m in functional_only], []
    selections = list(target.functional)
    modules = [m for m in modules
               if not any(m == s or m.startswith(s + ".") for s in selections)]
    return modules, selections


def run_flake8(venv, target, tree, rev, label, touched=None):
    """``flake8 <python files touched by base..rev>`` from the tree root;
    ``touched``: the files to check instead (check-commits passes a
    commit's own files for the commits before the last: the files the
    earlier commits touched were checked at those commits, and the last
    commit checks every file of the series).  Hacking's checks cost a few
    CPU seconds per large module (the compute manager, its tests)."""
    files = [f for f in (changed_files(tree, rev) if touched is None else touched)
             if f and f.endswith(".py") and pathlib.Path(tree, f).is_file()]
    if not files:
        return Outcome(f"{label} flake8", passed=1, note="no Python files touched")
    proc = run([venv / "bin" / "flake8", *files], cwd=tree, env=test_env(target, venv, tree),
               check=False)
    name = f"{label} flake8 ({len(files)} files)"
    if proc.returncode:
        say("\n".join("    " + line for line in (proc.stdout + proc.stderr).splitlines()[:40]))
        return Outcome(name, failed=1)
    return Outcome(name, passed=1)


def unit_relevant(files):
    """True unless every path in ``files`` is under :data:`UNIT_IRRELEVANT`."""
    return any(not f.startswith(UNIT_IRRELEVANT) for f in files)


def modes(target):
    """The target in each of its concurrency modes, in order (``[target]``
    itself when it lists none)."""
    return [target.in_mode(name) for name in target.modes] or [target]


def mode_interpreter_missing(target):
    """Why the interpreter of ``target``'s mode (a mode with one of its
    own) cannot be found, or ""."""
    if target.mode is None or not target.mode.interpreter:
        return ""
    try:
        find_interpreter(target.mode.interpreter)
    except HarnessError as exc:
        return f"{exc}: mode {target.mode.name} of {target.name}"
    return ""


def test_modes(ctx, target, tree, rev="HEAD", label=None, skip_unit="",
               functional_only=None, touched=None, flake8=True, functional_since="base"):
    """:func:`test_tree` in each of the target's modes (its venv for the
    mode's interpreter made or reused first); flake8 runs once, in the
    first mode.  The modes run at the same time, each stestr with one
    worker per core it gets (:func:`mode_concurrency`) and a repository of
    its own, so that one mode's test discovery and waits overlap the
    other's tests.  A mode whose own interpreter is missing is skipped
    with a warning (a failure under ``CI=true``); a missing target
    interpreter is an error.  ``functional_only``, ``touched``,
    ``functional_since``: see :func:`test_tree`; ``flake8``: false for no flake8 at all.
    Returns the Outcomes, in mode order."""
    label = label or f"{target.name}@{rev}"
    runs, outcomes = [], {}
    for number, moded in enumerate(modes(target)):
        missing = mode_interpreter_missing(moded)
        if missing:
            outcomes[number] = [cannot_run(f"{label} [{moded.mode_name}]", missing,
                                           "mode not tested")]
            continue
        venv, _ = ensure_venv(ctx, moded)
        runs.append((number, moded, venv))
    concurrency = mode_concurrency(len(runs))

    def one(number, moded, venv):
        outcomes[number] = test_tree(ctx, moded, tree, venv, rev=rev, label=label,
                                     skip_unit=skip_unit, flake8=flake8 and number == 0,
                                     concurrency=concurrency,
                                     functional_only=functional_only,
                                     functional_since=functional_since,
                                     touched=touched)
    if len(runs) > 1:
        with concurrent.futures.ThreadPoolExecutor(len(runs)) as pool:
            for future in [pool.submit(one, *args) for args in runs]:
                future.result()
    else:
        for args in runs:
            one(*args)
    shutil.rmtree(pathlib.Path(tree) / "instances", ignore_errors=True)
    return [o for number in sorted(outcomes) for o in outcomes[number]]


#: ``ci`` jobs running now (:func:`job_started`, :func:`job_ended`).
_JOBS = {"running": 0}
_JOBS_LOCK = threading.Lock()


def job_started():
    """A ``ci`` job (:func:`novaseries.ci.run_jobs`) starts: the stestr
    runs that start from now on share the cores with it."""
    with _JOBS_LOCK:
        _JOBS["running"] += 1


def job_ended():
    """A ``ci`` job has ended (see :func:`job_started`)."""
    with _JOBS_LOCK:
        _JOBS["running"] = max(0, _JOBS["running"] - 1)


def mode_concurrency(count):
    """stestr workers of each of ``count`` modes that run at once: the
    cores shared out between them and the other ``ci`` jobs running now
    (at least 1); None (stestr's default, one per core) for a single mode
    with nothing else running."""
    with _JOBS_LOCK:
        jobs = max(1, _JOBS["running"])
    if count < 2 and jobs < 2:
        return None
    return max(1, (os.cpu_count() or 1) // (count * jobs))


def functional_concurrency(mode, concurrency):
    """stestr workers for a functional run in ``mode`` (None: no mode)
    given the workers ``concurrency`` of its other suites (None: stestr's
    default, one per core): ``functional_workers_per_core`` times as many,
    for a mode whose functional tests mostly wait; else ``concurrency``."""
    per_core = mode.functional_workers_per_core if mode is not None else 1
    if per_core == 1:
        return concurrency
    return per_core * (concurrency or os.cpu_count() or 1)


def test_tree(ctx, target, tree, venv, rev="HEAD", label=None, skip_unit="", flake8=True,
              concurrency=None, functional_only=None, touched=None, functional_since="base"):
    """Run the unit selections, the touched functional modules (with the
    target's ``functional`` selections when ``functional_only`` is None:
    HEAD, check-commits' last commit; :func:`functional_selections`) and
    flake8 on ``tree`` (checked out at ``rev``); return a list of Outcomes.

    ``target`` may be in a mode (:meth:`~novaseries.targets.Target.in_mode`):
    its env, the mode's suites and exclude lists, and ``[mode]`` in every
    name.  ``skip_unit``: a reason not to run the unit selections
    (check-commits passes one when the commit cannot change their result);
    ``flake8``: false to leave flake8 to another mode's run;
    ``concurrency``: stestr's workers (None: one per core);
    ``functional_only``: run only these of the touched functional modules
    (None: all of them); ``functional_since``: the touched functional
    modules are those of ``functional_since..rev`` (check-commits: the
    target's own commits, not those of the series it stacks on);
    ``touched``: see :func:`unit_filters` (without it, every unit
    selection runs: none at all is a failure)."""
    label = label or f"{target.name}@{rev}"
    mode = target.mode
    if mode is not None:
        label = f"{label} [{mode.name}]"
    suites = mode.suites if mode is not None else ("unit", "functional")
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", label)
    outdir = ctx.results(target.name) / safe
    outcomes = []
    start = time.monotonic()
    compile_tree(venv, tree)  # (every mode runs at least one suite)
    own = test_modules(tree, rev, "nova/tests")  # the series' own tests
    if "unit" not in suites:
        say(f"[{label}] unit: not run in this mode (targets.toml)")
    elif skip_unit:
        say(f"[{label}] unit: not re-run ({skip_unit})")
        outcomes.append(Outcome(f"{label} unit", note=f"not re-run: {skip_unit}"))
    elif not (filters := unit_filters(target, tree, rev, touched=touched)):
        # (stestr without filters would run every unit test)
        say(f"[{label}] unit: no unit selection targets this commit")
        # the whole series (no ``touched``) runs every selection: none
        # there is a failure
        outcomes.append(Outcome(f"{label} unit", failed=int(touched is None),
                                note="no unit selection targets it"))
    else:
        results, notes = {}, []
        groups = unit_test_groups(tree, filters)
        for number, (test_path, group) in enumerate(groups):
            say(f"[{label}] unit: stestr run {' '.join(group)}")
            found, note = run_stestr(target, venv, tree, group, outdir,
                                     "unit" if number == 0 else f"unit-{number}",
                                     test_path=test_path,
                                     progress=f"{label} unit",
                                     exclude=mode and mode.unit_exclude,
                                     concurrency=concurrency)
            results.update(found)
            notes.append(note)
        note = "; ".join(n for n in notes if n)
        for pattern, group in split_by_filter(results, filters):
            name = pattern.replace("\\b", "").replace("\\", "") if pattern else "(other)"
            outcomes.append(count(f"{label} unit {name}", group, note, own))
        outcomes += filter(None, (stestr_failure(f"{label} unit stestr run", n)
                                  for n in notes))
    modules, selections = functional_selections(target, tree, rev, functional_only,
                                                functional_since)
    if "functional" not in suites:
        say(f"[{label}] functional: not run in this mode (targets.toml)")
    elif modules or selections:
        say(f"[{label}] functional: {', '.join(selections + modules)}")
        # one run; each test counted under the first filter it matches: a
        # selection first (a class of a touched module counts as itself)
        filters = [re.escape(m) + r"\." for m in selections + modules]
        results, note = run_stestr(target, venv, tree, filters, outdir, "functional",
                                   test_path=FUNCTIONAL_PATH, progress=f"{label} functional",
                                   exclude=mode and mode.functional_exclude,
                                   concurrency=functional_concurrency(mode, concurrency))
        for pattern, group in split_by_filter(results, filters):
            module = pattern[:-2].replace("\\", "") if pattern else "(other)"
            outcomes.append(count(f"{label} functional {module}", group, note, own))
        outcomes += filter(None, [stestr_failure(f"{label} functional stestr run", note)])
        if mode is None:
            shutil.rmtree(pathlib.Path(tree) / "instances", ignore_errors=True)
    elif functional_only is not None:
        say(f"[{label}] functional: the target's commits up to this one touch no "
            "functional test module")
    else:
        say(f"[{label}] functional: the series touches no functional test module "
            "and the target names no functional selection")
    if flake8:  # with the rest of the release's pep8 job (novaseries.pep8job)
        outcomes.append(run_flake8(venv, target, tree, rev, label, touched=touched))
        outcomes += pep8job.run(ctx, target, tree, venv, rev=rev, label=label, touched=touched)
    for outcome in outcomes:
        say("  " + outcome.line())
    say(f"[{label}] {time.monotonic() - start:.0f} s")
    return outcomes
