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
    outcome check that fails on it, e.g. ``status BUILD, expected ERROR``)
    or ``as on <released>: the fixed tree's checks hold too``.  On either
    tree, an observation that is no verdict (the runner failed, the server
    did not settle, a step never happened: ``scenario_table.
    scenario_error``) is ``error: <why>``; on the fixed tree it counts as
    wrong.  Against a real Ironic, ``unchecked`` lists what the fixed
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
            if broken:
                obs['verdict'] = 'error: ' + broken
                wrong += label == 'fixed'
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
    the reproducer's observations that are no verdict, if any."""
    fixed = len(data['fixed']['scenarios'])
    lines = [f"{mode} mode: fixed tree {fixed - wrong} of {fixed} scenarios right"]
    errors = [o['scenario'] for o in data['reproducer']['scenarios']
              if o.get('verdict', '').startswith('error: ')]
    if errors:
        lines.append(f"reproducer tree: {len(errors)} scenario(s) with no verdict "
                     f"({', '.join(errors)})")
    return lines


def bug_reasons(obs):
    """The fixed tree's outcome checks (not log lines) that fail on this
    observation: why it shows the bug (empty: it does not)."""
    return judge(obs['scenario'], 'fixed', obs, outcome_only=True)
