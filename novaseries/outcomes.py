"""Outcomes: the counts every command and ``ci`` report, and their totals.

An :class:`Outcome` is one summary line (a stestr selection, a module,
flake8, a lint, a ci step); :func:`totals_line` is the closing
``N passed, N failed, N skipped`` line CI reads; :func:`report` prints
the summary every command and ``ci`` end with.  :func:`cannot_run` and
:func:`missing_interpreter` give the Outcome of something this machine
cannot run: skipped with a warning, a failure under ``CI=true``.
"""

import dataclasses
import os
import re

from novaseries.util import LOG, LOG_TAIL_LINES, HarnessError
from novaseries.venv_build import find_interpreter


@dataclasses.dataclass
class Outcome:
    """Counts for one selection (a stestr filter, a module, flake8, a lint)."""

    name: str
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    note: str = ""

    def line(self):
        """One summary line."""
        mark = "FAIL" if self.failed else "ok  "
        text = f"{mark} {self.name}: {self.passed} passed, {self.failed} failed"
        if self.skipped:
            text += f", {self.skipped} skipped"
        return text + (f"  ({self.note})" if self.note else "")


def totals(outcomes):
    """Sum of outcomes as ``(passed, failed, skipped)``."""
    return (sum(o.passed for o in outcomes), sum(o.failed for o in outcomes),
            sum(o.skipped for o in outcomes))


def totals_line(outcomes):
    """The closing ``N passed, N failed, N skipped`` line."""
    passed, failed, skipped = totals(outcomes)
    return f"{passed} passed, {failed} failed, {skipped} skipped"


def report(outcomes, notes=()):
    """Print the summary of ``outcomes``: ``=== summary``, each one's
    line, the lines ``notes`` (``ci``'s times), and last
    :func:`totals_line`; return the exit status (1 if anything failed,
    else 0)."""
    print("\n=== summary")
    for outcome in outcomes:
        print(outcome.line())
    for note in notes:
        print(note)
    print(totals_line(outcomes), flush=True)
    return 1 if totals(outcomes)[1] else 0


def cannot_run(name, why, note):
    """An Outcome for a target, mode or step that cannot run here: skipped
    with a warning, but a failure (and an error) under ``CI=true``, where
    the machine must have everything."""
    under_ci = os.environ.get("CI", "").lower() == "true"
    (LOG.error if under_ci else LOG.warning)(
        f"{'error' if under_ci else 'warning'}: {why}: "
        f"{'cannot run under CI=true' if under_ci else 'skipped'}")
    return Outcome(name, failed=int(under_ci), skipped=int(not under_ci), note=note)


def missing_interpreter(target):
    """An Outcome when ``target``'s interpreter is missing and the target
    allows that (``optional_interpreter``), else None.

    Outside CI the target is skipped with a message; under ``CI=true`` (the
    CI machine image has every interpreter) it is a failure
    (:func:`cannot_run`).
    """
    if not target.optional_interpreter:
        return None
    try:
        find_interpreter(target.interpreter)
    except HarnessError as exc:
        return cannot_run(f"{target.name}: {target.interpreter} missing",
                          f"{exc}: target {target.name}", "target not tested")
    return None


def parse_unittest(text):
    """``(ran, failed, skipped)`` from unittest's closing lines.

    Reads the last lines of the output: "Ran N tests in ..." and, as the
    last line, "OK", "OK (skipped=S)" or "FAILED (failures=F, errors=E,
    skipped=S)"; expected failures count as failures (every test these
    runs hold is the project's own).  Output that does not end so (a run
    that died before its summary: an earlier summary in the output is a
    nested run's) counts as one failure.
    """
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    verdict = re.fullmatch(r"(?:OK|FAILED)(?: \((.*)\))?", lines[-1]) if lines else None
    ran = re.match(r"Ran (\d+) tests? in", lines[-2]) if len(lines) > 1 else None
    if not verdict or not ran:
        return 0, 1, 0
    counts = {}
    for part in (verdict.group(1) or "").split(","):
        key, _, value = part.strip().partition("=")
        if value:
            counts[key] = int(value)
    failed = counts.get("failures", 0) + counts.get("errors", 0) + \
        counts.get("unexpected successes", 0) + counts.get("expected failures", 0)
    return int(ran.group(1)), failed, counts.get("skipped", 0)


def unittest_counts(text, rc):
    """``(ran, failed, skipped)`` of a unittest run's output ``text``
    (:func:`parse_unittest`) and exit status ``rc``: a run that exited
    non-zero, ran no test (Python 2.7's unittest exits 0 when discovery
    finds nothing) or skipped every test it ran, with no failure counted,
    is one failure."""
    ran, failed, skipped = parse_unittest(text)
    if (rc or not ran or skipped >= ran) and not failed:
        failed = 1
    return ran, failed, skipped


def unittest_outcome(name, log_path, rc):
    """``(tests run, Outcome named name)`` of a unittest run whose output is
    in ``log_path`` and whose exit status is ``rc`` (:func:`unittest_counts`:
    a crash or a run of no test is a failure); a failed run's last
    :data:`~novaseries.util.LOG_TAIL_LINES` lines go to the log as an
    error."""
    text = log_path.read_text(errors="replace")
    ran, failed, skipped = unittest_counts(text, rc)
    if failed:
        LOG.error("\n".join(text.strip().splitlines()[-LOG_TAIL_LINES:]))
    return ran, Outcome(name, passed=max(0, ran - failed - skipped), failed=failed,
                        skipped=skipped, note=f"log: {log_path}")
