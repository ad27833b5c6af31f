"""One search of the explorer: the cases a seed generates, played and
judged, each rule broken shrunk to a minimal case (:func:`search`); and
how a case is told (:func:`describe`) and saved as a main-job scenario
(:func:`scenario_source`).

Hypothesis generates the cases (``generate.cases``) from the seed and
shrinks a failing one to a minimal case that fails by the same rule
(``universal.problems``' first: the rule is the failure's kind, so that
two rules broken are two failures).  Each distinct case is played once
(a cache by case).
"""

import dataclasses
import json

from novaseries.explorer.generate import cases as case_strategy
from novaseries.scenarios import universal

try:
    import hypothesis
except ImportError:  # the explore extra (generate.need_hypothesis says so)
    hypothesis = None

#: Cases shrinking may play, beyond the search's own.
SHRINK_CASES = 40


class Violation(AssertionError):
    """A case broke a rule of ``universal.RULES``: ``case``, ``problems``
    (``[(rule, text)]``) and the observation ``obs``."""

    def __init__(self, case, problems, obs):
        super().__init__('; '.join(f"{rule}: {text}" for rule, text in problems))
        self.case, self.problems, self.obs = case, problems, obs


#: One exception class per rule, so that Hypothesis keeps apart (and
#: shrinks apart) the failures of different rules.
VIOLATIONS = {rule: type(f"Violation_{rule.replace(': ', '_').replace('-', '_')}",
                         (Violation,), {}) for rule in universal.RULE_NAMES}


def key(case):
    """The case as a canonical text (the cache's key; distinct schedules
    are distinct keys)."""
    return json.dumps(case, sort_keys=True)


def describe(case):
    """The case in one line: kind, its steps as ``action@poll`` (``/td``:
    a poll of the tear-down wait), then what differs from the simplest."""
    steps = []
    if case['action']:
        steps.append(f"{case['action']}@{case['after_polls']}")
    steps += [f"{act}@{polls}{'/td' if loop else ''}"
              for polls, act, *loop in case['then']]
    extra = [f"{case['nodes']} nodes", f"max_attempts {case['max_attempts']}"]
    extra += [f"{field} {case[field]}" for field in
              ('deploying_reads', 'deleting_reads', 'api_max_retries')]
    extra += [flag for flag in ('port', 'delete_on_reschedule') if case[flag]]
    return f"{case['kind']} [{' '.join(steps) or '-'}] {', '.join(extra)}"


@dataclasses.dataclass
class Failure:
    """A rule a case broke: the minimal case Hypothesis found for it (the
    search's ``mode``, once known)."""

    seed: int
    rule: str
    case: dict
    problems: list
    obs: dict = dataclasses.field(repr=False, default=None)
    mode: str = None
    #: where the defect is filed, if it is one of ``job.EXPECTED``
    expected: str = None


@dataclasses.dataclass
class Searched:
    """What a search played: ``played``, ``{key: (case, problems)}`` in
    the order played, of which ``generated`` (keys) are the seed's own
    cases and the rest shrinking's; and its ``failures`` (minimal, one per
    rule that came first in a case's problems)."""

    seed: int
    played: dict = dataclasses.field(default_factory=dict)
    generated: list = dataclasses.field(default_factory=list)
    failures: list = dataclasses.field(default_factory=list)


class _Aborted(BaseException):
    """Ends a Hypothesis run at once (Hypothesis lets a BaseException of
    its own pass): something other than a rule broke (the player, the
    judge, an interrupt); :func:`search` raises the original."""


def _hypothesis_run(seed, cases, test, phases):
    """Run ``test(case)`` on the cases Hypothesis generates from ``seed``
    (at most ``cases``), in ``phases``; a failure is shrunk (no
    database, no deadline, no health check, quiet)."""
    @hypothesis.settings(
        max_examples=cases, database=None, deadline=None,
        derandomize=False, report_multiple_bugs=False, phases=phases,
        suppress_health_check=list(hypothesis.HealthCheck),
        verbosity=hypothesis.Verbosity.quiet, print_blob=False)
    @hypothesis.seed(seed)
    @hypothesis.given(case_strategy())
    def run(case):
        test(case)
    run()


def search(play, seed, cases, shrink_cases=SHRINK_CASES, progress=None):
    """Generate ``cases`` cases from ``seed``, play each (``play(case) ->
    observation``) and judge it; then shrink each rule broken first.

    Two passes, so that every case is generated whatever fails: the first
    plays the seed's cases and raises nothing; then, for each rule that
    comes first in a case's problems, Hypothesis runs the same seed again
    (the same cases, judged from the cache) and shrinks the first case
    that broke it, playing at most
    ``shrink_cases`` cases it has not played yet (past that, an unplayed
    case passes).  Hypothesis also ends shrinking after its own 300 s.

    :param progress: called as ``progress(number, case, problems)`` after
        each case played.
    :returns: a :class:`Searched`.
    :raises HarnessError: Hypothesis is not installed, or the player cannot
        play (``player.ServingPlayer.play``).
    :raises BaseException: whatever else ``play`` or the judge raised
        (an interrupt's SystemExit, a bad observation), at once.
    """
    found = Searched(seed)
    observations, aborted = {}, []
    budget = [cases]

    def judged(case):
        k = key(case)
        if k not in found.played:
            if budget[0] <= 0:
                return None  # past the budget: not played, passes
            budget[0] -= 1
            try:
                obs = play(case)
                problems = universal.problems(obs)
            except BaseException as e:
                aborted.append(e)
                raise _Aborted() from e
            found.played[k] = (case, problems)
            observations[k] = obs
            if progress:
                progress(len(found.played), case, problems)
        return found.played[k][1]

    def shrinking(rule):
        def test(case):
            problems = judged(case)
            if problems and problems[0][0] == rule:
                raise VIOLATIONS[rule](case, problems, observations[key(case)])
        return test

    def generating(case):
        judged(case)

    try:
        _hypothesis_run(seed, cases, generating, (hypothesis.Phase.generate,))
        found.generated = list(found.played)
        first = {}
        for k in found.generated:
            problems = found.played[k][1]
            if problems:
                first.setdefault(problems[0][0], k)
        for rule, k in first.items():
            budget[0] = shrink_cases
            try:
                _hypothesis_run(seed, cases, shrinking(rule),
                                (hypothesis.Phase.generate, hypothesis.Phase.shrink))
                case, problems = found.played[k]  # (not found again: as played)
                violation = Violation(case, problems, observations[k])
            except Violation as e:
                violation = e
            found.failures.append(_failure(seed, violation))
    except _Aborted:
        raise aborted[0] from None
    return found


def _failure(seed, violation):
    return Failure(seed, violation.problems[0][0], violation.case,
                   violation.problems, violation.obs)


def scenario_source(failure, name=None):
    """A ``Scenario(...)`` of ``scenario_table.py`` that plays the
    failure's case in the main job (its checks to be written: what the
    fixed tree must show), as Python source."""
    name = name or f"explored-{failure.seed}-{failure.rule.split(': ')[-1]}"
    fields = ''.join(f",\n             {field}={value!r}" for field, value in
                     failure.case.items() if field != 'then')
    then = [tuple(step) for step in failure.case['then']]
    return (f"Scenario({name!r}, {describe(failure.case)!r}{fields},\n"
            f"             then={then!r}, finish_ironic_work=True,\n"
            f"             source='novaseries explore --seed {failure.seed}: "
            f"{failure.rule}',\n"
            "             fixed=[]),  # the checks the fixed tree must pass")
