"""Judging the main job's observations against the scenario table
(``scenarios/scenario_table.py``): :func:`problems_of` one observation
(:func:`scenario_error`: why it is no verdict at all; :func:`unplayed`: a
step that never came; :func:`unchecked`: what a real Ironic cannot
check), :func:`evaluate` a run (each observation's ``problems`` and
``verdict``; the fixed tree's count of wrong scenarios),
:func:`bug_reasons` (why the reproducer tree shows the bug) and
:func:`mode_summary` (the counts of a mode, as the summary line says
them).  A verdict's kind (:func:`verdict_kind`) is how its text begins: the
constants below.
"""

from novaseries.scenarios import scenario_table
from novaseries.scenarios.checks import all_steps_fired, missing, REAL_IRONIC
from novaseries.scenarios.invariant import NOOP_VIFS, noop_vifs
from novaseries.scenarios.scenario import FIXED, REPRODUCER, SCENARIOS_KEY, TREES
from novaseries.util import HarnessError

#: The kinds of verdict :func:`evaluate` writes, each the start of its
#: text.  Fixed tree: right, wrong.
OK = 'ok'
WRONG = 'WRONG: '
#: Either tree: no verdict (:func:`scenario_error`).
ERROR = 'error: '
#: Reproducer tree: not what its column says; a declared unplayable
#: scenario; the bug shown; the fixed tree's checks hold there too.
UNEXPECTED = 'unexpected: '
NOT_PLAYABLE = 'not playable '
BUG_REPRODUCED = 'bug reproduced'
AS_RELEASED = 'as on '
VERDICT_KINDS = (OK, WRONG, ERROR, UNEXPECTED, NOT_PLAYABLE,
                 BUG_REPRODUCED, AS_RELEASED)


def verdict_kind(verdict):
    """The kind of ``verdict`` (a text of :func:`evaluate`, or None): the
    one of :data:`VERDICT_KINDS` it begins with (:data:`OK`: it is exactly that);
    None for no verdict or another text."""
    verdict = verdict or ''
    if verdict == OK:
        return OK
    return next((k for k in VERDICT_KINDS if k != OK and verdict.startswith(k)),
                None)


def fixed_verdict(problems):
    """The fixed tree's verdict on an observation with ``problems``
    (:func:`problems_of`): ``ok`` or ``WRONG: <problems>``."""
    return OK if not problems else WRONG + '; '.join(problems)


def scenario_error(obs):
    """Why the observation is no verdict at all: the player failed, the
    server did not settle, or a step of the scenario never happened (then
    the scenario did not test what it defines, on either tree); None when
    it happened as defined."""
    if obs.get('error'):
        return 'player error: ' + obs['error'].strip().splitlines()[-1]
    problem = missing(obs, 'error', 'settled')
    if problem:
        return 'the record is incomplete: ' + problem
    if not obs['settled']:
        return 'did not settle within the time limit'
    steps = all_steps_fired(obs)
    if steps:
        return 'the scenario did not happen as defined: ' + steps


def unplayed(obs):
    """Why a step of the scenario never came, when that alone makes the
    observation no verdict (the player ran it to the end and the server
    settled); None otherwise.  On the reproducer tree of a scenario that
    declares it cannot be played there (``reproducer_unplayable``), this
    is the declared case, not an error."""
    if obs.get('error') or missing(obs, 'error', 'settled') or \
            not obs['settled']:
        return None
    return all_steps_fired(obs)


def unchecked(name, obs, table=None):
    """What the fixed tree's checks of scenario ``name`` cannot check in
    this observation (texts; empty but against a real Ironic).

    :param table: the scenarios by name (default: the main table's).
    """
    if obs.get('backend') != REAL_IRONIC:
        return []
    scenario = (table or scenario_table.BY_NAME)[name]
    skipped = [c.fake_only for c in scenario.fixed
               if getattr(c, 'fake_only', None)]
    if scenario.port and noop_vifs(obs):
        skipped.append(NOOP_VIFS)
    return skipped


def problems_of(name, tree, obs, outcome_only=False, table=None):
    """Problems of one observation against the scenario's checks of
    ``tree`` (``reproducer`` or ``fixed``); an empty list means as
    expected.  An observation that is no verdict (:func:`scenario_error`)
    gives that one problem.  Against a real Ironic, the checks marked
    ``fake_only`` are skipped (:func:`unchecked` lists them); against the
    fake Ironic, those marked ``real_only`` (the wall-time bound: the
    fake's polls are bounded instead).  The problems come in the order of
    the checks: a scenario's ``bug`` checks first.

    :param outcome_only: skip the checks marked ``detail`` (what the compute
        log says): Nova as released does not log the fix's WARNING lines,
        which is not the bug.
    :param table: the scenarios by name (default: the main table's,
        ``scenario_table.BY_NAME``; ``pike_table.BY_NAME`` for pike's).
    :raises HarnessError: an unknown scenario.
    :raises KeyError: an unknown tree.
    """
    table = table or scenario_table.BY_NAME
    if name not in table:
        raise HarnessError(f"scenario {name} is not in "
                           "the scenario table")
    scenario = table[name]
    if tree not in TREES:
        raise KeyError(tree)
    broken = scenario_error(obs)
    if broken:
        return [broken]
    real = obs.get('backend') == REAL_IRONIC
    checks = [c for c in getattr(scenario, tree)
              if not (outcome_only and getattr(c, 'detail', False)) and
              not (real and getattr(c, 'fake_only', None)) and
              not (not real and getattr(c, 'real_only', None))]
    return [p for p in (check(obs) for check in checks) if p]


def evaluate(data, released='the release', table=None):
    """Add ``problems`` and ``verdict`` to each observation; return the
    number of scenarios the fixed tree got wrong.

    Fixed tree: ``ok`` or ``WRONG: <problems>``.  Reproducer tree (Nova as
    released): ``unexpected: <problems>`` when it did not do what its
    column says; otherwise ``bug reproduced: <why>`` (the first fixed-tree
    outcome check that fails on it, the scenario's ``bug`` checks first:
    :func:`bug_reasons`) or ``as on <released>: the fixed tree's checks
    hold too``.  On either tree, an observation that is no verdict (the
    player failed, the server did not settle, a step never happened:
    :func:`scenario_error`) is ``error: <why>``; on the fixed
    tree it counts as wrong.  A scenario that declares it cannot be played
    on the reproducer tree (``reproducer_unplayable``) is ``not playable
    on <released>: <why declared>`` there when a step of it never came
    (:func:`unplayed`), and ``unexpected: ...`` when every
    step came.  Against a real Ironic, ``unchecked`` lists what the fixed
    tree's checks could not check (:func:`unchecked`).

    :param data: ``{tree label: {SCENARIOS_KEY: [observation]}}``, the
        trees of :data:`TREES` played (``run --tree`` plays only the
        fixed one).
    :param released: what the reproducer tree is, e.g. ``nova 34.0.0``.
    :param table: the scenarios by name (default: the main table's).
    """
    table = table or scenario_table.BY_NAME
    wrong = 0
    for label in (label for label in TREES if label in data):
        for obs in data[label][SCENARIOS_KEY]:
            problems = problems_of(obs['scenario'], label, obs, table=table)
            obs['problems'] = problems
            broken = scenario_error(obs)
            skipped = unchecked(obs['scenario'], obs, table)
            if skipped:
                obs['unchecked'] = skipped
            unplayable = label == REPRODUCER and table[
                obs['scenario']].reproducer_unplayable
            if unplayable and broken and unplayed(obs):
                obs['verdict'] = (f"{NOT_PLAYABLE}on {released}: "
                                  f"{unplayable}")
            elif broken:
                obs['verdict'] = ERROR + broken
                wrong += label == FIXED
            elif unplayable:
                obs['verdict'] = (f"{UNEXPECTED}declared not playable on "
                                  f"{released} ({unplayable}), but every "
                                  "step came")
            elif label == FIXED:
                obs['verdict'] = fixed_verdict(problems)
                wrong += bool(problems)
            elif problems:
                obs['verdict'] = UNEXPECTED + '; '.join(problems)
            else:
                bug = bug_reasons(obs, table)
                obs['verdict'] = (f"{BUG_REPRODUCED}: {bug[0]}" if bug else
                                  f"{AS_RELEASED}{released}: the fixed tree's "
                                  "checks hold too")
    return wrong


def mode_summary(mode, data, wrong):
    """The summary's lines for one mode of a run: how many of the fixed
    tree's scenarios are right (``wrong``: :func:`evaluate`'s count), and
    the reproducer's observations that are no verdict, that are
    ``unexpected``, or that it cannot play (declared), if any."""
    fixed = len(data[FIXED][SCENARIOS_KEY])
    lines = [f"{mode} mode: fixed tree {fixed - wrong} of {fixed} scenarios right"]
    for wanted, what in ((ERROR, 'with no verdict'),
                         (UNEXPECTED, 'unexpected'),
                         (NOT_PLAYABLE, 'not playable there (declared)')):
        names = [o['scenario'] for o in data[REPRODUCER][SCENARIOS_KEY]
                 if verdict_kind(o.get('verdict')) == wanted]
        if names:
            lines.append(f"reproducer tree: {len(names)} scenario(s) {what} "
                         f"({', '.join(names)})")
    return lines


def bug_reasons(obs, table=None):
    """The fixed tree's outcome checks (not log lines) that fail on this
    observation: why it shows the bug (empty: it does not), the
    scenario's ``bug`` checks (its symptom) first (``table``: as
    :func:`problems_of`'s)."""
    return problems_of(obs['scenario'], FIXED, obs, outcome_only=True,
                       table=table)
