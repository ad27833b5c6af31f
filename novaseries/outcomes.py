"""Outcomes: the counts every command and ``ci`` report, and their totals.

An :class:`Outcome` is one summary line (a stestr selection, a module,
flake8, a lint, a ci step); :func:`totals_line` is the closing
``N passed, N failed, N skipped`` line CI reads.  :func:`cannot_run` and
:func:`missing_interpreter` give the Outcome of something this machine
cannot run: skipped with a warning, a failure under ``CI=true``.
"""

import dataclasses
import os

from novaseries.util import LOG, HarnessError, find_interpreter


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
