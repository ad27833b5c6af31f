"""One search of the explorer: the cases a seed generates, played and
judged, a failing one shrunk (:func:`search`); and how a case is told
(:func:`describe`), replayed and saved as a main-job scenario
(:func:`scenario_source`).

Hypothesis generates the cases (``generate.cases``) from the seed and
shrinks a failing one to a minimal case that fails by the same rule
(``universal.problems``: the rule is the failure's kind, so that two
rules broken by different cases are two failures).  Each distinct case is
played once (a cache by case); shrinking plays at most ``shrink_cases``
cases beyond the search's, after which a case not played yet counts as
passing, so that Hypothesis ends with the smallest failing case found
by then.
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


@dataclasses.dataclass
class Searched:
    """What a search played: ``played``, ``{key: (case, problems)}`` in
    the order played (shrinking's cases included), and its ``failures``
    (minimal, one per rule broken)."""

    seed: int
    played: dict = dataclasses.field(default_factory=dict)
    failures: list = dataclasses.field(default_factory=list)


def search(play, seed, cases, shrink_cases=SHRINK_CASES, progress=None):
    """Generate ``cases`` cases from ``seed``, play each (``play(case) ->
    observation``) and judge it; shrink each failure, playing at most
    ``shrink_cases`` more.

    :param progress: called as ``progress(number, case, problems)`` after
        each case played.
    :returns: a :class:`Searched`.
    :raises HarnessError: Hypothesis is not installed.
    """
    found = Searched(seed)
    observations = {}

    def judged(case):
        k = key(case)
        if k not in found.played:
            if len(found.played) >= cases + shrink_cases:
                return None  # past the budget: not played, passes
            obs = play(case)
            found.played[k] = (case, universal.problems(obs))
            observations[k] = obs
            if progress:
                progress(len(found.played), case, found.played[k][1])
        return found.played[k][1]

    strategy = case_strategy()

    @hypothesis.settings(
        max_examples=cases, database=None, deadline=None,
        derandomize=False, report_multiple_bugs=True,
        phases=(hypothesis.Phase.generate, hypothesis.Phase.shrink),
        suppress_health_check=list(hypothesis.HealthCheck),
        verbosity=hypothesis.Verbosity.quiet, print_blob=False)
    @hypothesis.seed(seed)
    @hypothesis.given(strategy)
    def test(case):
        problems = judged(case)
        if problems:
            raise VIOLATIONS[problems[0][0]](case, problems,
                                             observations[key(case)])

    try:
        test()
    except Violation as e:
        found.failures.append(_failure(seed, e))
    except BaseExceptionGroup as group:
        for e in group.exceptions:
            if not isinstance(e, Violation):
                raise
            found.failures.append(_failure(seed, e))
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
            "             fixed=[...]),")
