"""Judging the main job's observations against the scenario table
(``scenarios/scenario_table.py``): :func:`judge` one observation,
:func:`evaluate` a run (each observation's ``problems`` and ``verdict``;
the fixed tree's count of wrong scenarios), :func:`bug_reasons` (why the
reproducer tree shows the bug) and :func:`mode_summary` (the counts of a
mode, as the summary line says them).
"""

from novaseries.scenarios import scenario_table
from novaseries.util import HarnessError


def judge(name, tree, obs, outcome_only=False):
    """:func:`scenario_table.judge`, with an unknown scenario as a
    HarnessError."""
    if name not in scenario_table.BY_NAME:
        raise HarnessError(f"scenario {name} is not in "
                           "novaseries/scenarios/scenario_table.py")
    return scenario_table.judge(name, tree, obs, outcome_only)


def evaluate(data, released='the release'):
    """Add ``problems`` and ``verdict`` to each observation; return the
    number of scenarios the fixed tree got wrong.

    Fixed tree: ``ok`` or ``WRONG: <problems>``.  Reproducer tree (Nova as
    released): ``unexpected: <problems>`` when it did not do what its
    column says; otherwise ``bug reproduced: <why>`` (the first fixed-tree
    outcome check that fails on it, the scenario's ``bug`` checks first:
    :func:`bug_reasons`) or ``as on <released>: the fixed tree's checks
    hold too``.  On either tree, an observation that is no verdict (the
    player failed, the server did not settle, a step never happened:
    ``scenario_table.scenario_error``) is ``error: <why>``; on the fixed
    tree it counts as wrong.  A scenario that declares it cannot be played
    on the reproducer tree (``reproducer_unplayable``) is ``not playable
    on <released>: <why declared>`` there when a step of it never came
    (``scenario_table.unplayed``), and ``unexpected: ...`` when every
    step came.  Against a real Ironic, ``unchecked`` lists what the fixed
    tree's checks could not check (``scenario_table.unchecked``).

    :param released: what the reproducer tree is, e.g. ``nova 34.0.0``.
    """
    wrong = 0
    for label in scenario_table.TREES:
        for obs in data[label]['scenarios']:
            problems = judge(obs['scenario'], label, obs)
            obs['problems'] = problems
            broken = scenario_table.scenario_error(obs)
            unchecked = scenario_table.unchecked(obs['scenario'], obs)
            if unchecked:
                obs['unchecked'] = unchecked
            unplayable = label == 'reproducer' and scenario_table.BY_NAME[
                obs['scenario']].reproducer_unplayable
            if unplayable and broken and scenario_table.unplayed(obs):
                obs['verdict'] = f"not playable on {released}: {unplayable}"
            elif broken:
                obs['verdict'] = 'error: ' + broken
                wrong += label == 'fixed'
            elif unplayable:
                obs['verdict'] = (f"unexpected: declared not playable on "
                                  f"{released} ({unplayable}), but every "
                                  "step came")
            elif label == 'fixed':
                obs['verdict'] = 'ok' if not problems else 'WRONG: ' + \
                    '; '.join(problems)
                wrong += bool(problems)
            elif problems:
                obs['verdict'] = 'unexpected: ' + '; '.join(problems)
            else:
                bug = bug_reasons(obs)
                obs['verdict'] = (f"bug reproduced: {bug[0]}" if bug else
                                  f"as on {released}: the fixed tree's checks "
                                  "hold too")
    return wrong


def mode_summary(mode, data, wrong):
    """The summary's lines for one mode of a run: how many of the fixed
    tree's scenarios are right (``wrong``: :func:`evaluate`'s count), and
    the reproducer's observations that are no verdict, that are
    ``unexpected``, or that it cannot play (declared), if any."""
    fixed = len(data['fixed']['scenarios'])
    lines = [f"{mode} mode: fixed tree {fixed - wrong} of {fixed} scenarios right"]
    for prefix, what in (('error: ', 'with no verdict'),
                         ('unexpected: ', 'unexpected'),
                         ('not playable ', 'not playable there (declared)')):
        names = [o['scenario'] for o in data['reproducer']['scenarios']
                 if o.get('verdict', '').startswith(prefix)]
        if names:
            lines.append(f"reproducer tree: {len(names)} scenario(s) {what} "
                         f"({', '.join(names)})")
    return lines


def bug_reasons(obs):
    """The fixed tree's outcome checks (not log lines) that fail on this
    observation: why it shows the bug (empty: it does not), the
    scenario's ``bug`` checks (its symptom) first."""
    return judge(obs['scenario'], 'fixed', obs, outcome_only=True)
