"""Printing the main job's results and writing them: the lines of the
command's result (:func:`put`), the verdict table (:func:`table`), what a
real Ironic could not check (:func:`unchecked_note`), the scenario list
(``run --list``, :func:`scenario_list`) and the ONE writer of the main
job's JSON files (:func:`write_json`, atomic).
"""

import json
import os
import pathlib
import re
import textwrap

from novaseries.scenarios import invariant, scenario_table
from novaseries.scenarios.scenario import FIXED, REPRODUCER, SCENARIOS_KEY, TREES

#: Nova's default ``[ironic] api_retry_interval`` (s): one driver poll of
#: the fake run (which polls at 0), to give its polls as seconds (a real
#: run's own interval: ``real_backend.API_RETRY_INTERVAL``).
DEFAULT_API_RETRY_INTERVAL = 2


def put(text=''):
    """A line of the command's result (the verdict table, the scenario
    list, the summary): printed whatever the log level (``-q``)."""
    print(text, flush=True)


#: A server left in one of these never ends (the bug).
STUCK = ('BUILD', 'REBUILD')


def _wait_text(obs, interval=DEFAULT_API_RETRY_INTERVAL):
    if obs.get('status') in STUCK:
        return 'never'
    polls = obs.get('polls_after_action')
    if polls is None:
        return '-'
    return f"{polls} ({polls * interval}s)"


def _wall_text(obs):
    """Wall time from the action to the end (the column's title says at
    which poll interval: ``table``'s ``wall``)."""
    if obs.get('status') in STUCK:
        return 'never'
    wall = obs.get('wall_seconds_after_action')
    return '-' if wall is None else f"{wall:.1f}s"


#: Width of the fault and log lines under a row (they are wrapped, not cut).
TEXT_WIDTH = 100
#: Column where those lines start.
TEXT_INDENT = 41


#: The wall-time column's title of a fake run (its polls come at once:
#: the wall time at a poll interval of 0).
WALL_AT_ZERO = 'wall@0'


def table(data, interval=DEFAULT_API_RETRY_INTERVAL, wall=WALL_AT_ZERO,
          by_name=None):
    """Rows of the verdict table, as a list of strings.

    One row per scenario and tree: status/task, the first node's state,
    polls and wall time after the action, calls per poll, how many things
    the server left behind (``leftovers``: "none", or "N (below)") and the
    verdict with its reason.  Under it, wrapped, never cut: what was left
    (placement usage, allocations, nodes not ``available`` or keeping the
    instance, its instance_info or VIFs, a port still bound), under the
    fixed row the parts of the end-state invariant the scenario does not
    check and why (``not checked:``), the fault in full and the ironic
    driver's WARNING lines.

    :param interval: seconds per poll for ``polls (wait)``: the default
        ``[ironic] api_retry_interval`` for the fake run (which polls at
        0), the real run's own interval for ``--ironic real``.
    :param wall: the wall-time column's title (``wall@0``: at interval 0).
    :param by_name: the scenarios by name (default: the main table's).
    """
    by_name = by_name or scenario_table.BY_NAME
    rows = []
    head = (f"{'scenario':30} {'tree':10} {'status/task':16} "
            f"{'node state':11} {'polls (wait)':13} {wall:7} "
            f"{'calls/poll':10} {'leftovers':10} {'verdict'}")
    rows.append(head)
    rows.append('-' * len(head))
    names = [o['scenario'] for o in data[FIXED][SCENARIOS_KEY]]
    for name in names:
        for label in TREES:
            obs = _find(data[label], name)
            first = next((n for n in obs.get('nodes', [])
                          if n['id'] == obs.get('first_node')), {})
            node_state = ('deleted' if first.get('deleted')
                          else first.get('provision_state', '?'))
            st = f"{obs.get('status')}/{obs.get('task_state') or '-'}"
            left = _leftovers(obs, label, by_name)
            rows.append(f"{name if label == REPRODUCER else '':30} "
                        f"{label:10} {st:16} {node_state:11} "
                        f"{_wait_text(obs, interval):13} "
                        f"{_wall_text(obs):7} "
                        f"{str(obs.get('calls_per_poll')):10} "
                        f"{f'{len(left)} (below)' if left else 'none':10} "
                        f"{obs['verdict']}")
            if left:
                rows += _wrapped('left:  ', '; '.join(left))
            if label == FIXED:
                for part, why in sorted(_waived(name, by_name).items()):
                    rows += _wrapped('not checked: ', f"{part}: {why}")
            if obs.get('fault'):
                rows += _wrapped('fault: ', obs['fault'])
            for line in obs.get('driver_warnings') or []:
                # what Ironic showed, for the operator (compute log)
                rows += _wrapped('log:   ', _no_instance(line))
    return rows


def _leftovers(obs, label=REPRODUCER, by_name=None):
    """``invariant.leftovers`` of an observation (none for a scenario that
    did not run); on the fixed tree with the scenario's own form of the
    end-state invariant (its claim kept or not), waived parts included:
    what is left, checked or not."""
    if obs.get('error'):
        return []
    sc = (by_name or scenario_table.BY_NAME).get(obs.get('scenario'))
    kept = bool(sc and sc.claim_kept and label == FIXED)
    return invariant.leftovers(obs, claim_kept=kept)


def _waived(name, by_name=None):
    """``{part: why}``: the parts of the end-state invariant scenario
    ``name`` does not check."""
    sc = (by_name or scenario_table.BY_NAME).get(name)
    return sc.waive if sc else {}


def _wrapped(prefix, text):
    """``text`` under a row: ``prefix`` on the first line, wrapped at
    :data:`TEXT_WIDTH` and indented, never cut."""
    lines = textwrap.wrap(text, TEXT_WIDTH - len(prefix), break_long_words=True,
                          break_on_hyphens=False) or ['']
    pad = ' ' * TEXT_INDENT
    more = [pad + ' ' * len(prefix) + line for line in lines[1:]]
    return [pad + prefix + lines[0]] + more


def _no_instance(line):
    """A log message without oslo.log's ``[instance: <uuid>] `` prefix."""
    return re.sub(r'^\[instance: [0-9a-f-]+\] ', '', line)


def _find(tree_data, name):
    for obs in tree_data[SCENARIOS_KEY]:
        if obs['scenario'] == name:
            return obs
    return {'scenario': name, 'error': 'not run', 'verdict': 'not run'}


def unchecked_note(data):
    """Lines saying what the checks could not check (``--ironic real``),
    once for all scenarios: a heading and each text (none against the
    fake Ironic)."""
    seen = []
    for obs in data[FIXED][SCENARIOS_KEY]:
        for text in obs.get('unchecked') or ():
            if text not in seen:
                seen.append(text)
    return ['not checked against a real Ironic:'] + [
        '  - ' + text for text in seen] if seen else []


def scenario_list(scenarios=None):
    """``run --list``: every scenario (of ``scenarios``, pike's for
    ``--release pike``: all played against a real Ironic; default the
    main table's), what it does, what the fixed tree must show, and the
    real-Ironic test that also plays it (lines of text)."""
    lines = []
    main = scenarios is None
    for sc in scenario_table.SCENARIOS if main else scenarios:
        lines.append(f"{sc.name}: {sc.title}")
        lines.append(f"    fixed tree must: {'; '.join(sc.expectations(FIXED))}")
        lines.append(f"    as released: {'; '.join(sc.expectations(REPRODUCER))}")
        for part, why in sorted(sc.waive.items()):
            lines.append(f"    not checked (end state): {part}: {why}")
        if sc.bug:
            symptom = '; '.join(getattr(c, 'text', c.__name__) for c in sc.bug)
            lines.append("    the bug's symptom (checked first on the released "
                         f"tree): {symptom}")
        if not main:
            continue
        lines.append("    real Ironic (run --ironic real): " + (
            'plays it' if sc.real_unplayable is None
            else f"not played: {sc.real_unplayable}"))
        if sc.real_ironic:
            lines.append("    real Ironic, driver level (ironic driver-tests): "
                         f"novaseries/nova_side/driver_tests/test_e2e.py {sc.real_ironic}")
    return lines


#: Keys of the main job's JSON (``run.json``, ``tree.json``): the modes,
#: in order; ``{mode: {tree label: the player's output, BENCH_PROBLEMS_KEY:
#: [...]}}`` (the player's keys: ``scenario.SCENARIOS_KEY``,
#: ``scenario.BENCH_KEY``); the benchmark's problems (per mode, and of the
#: whole run); the real-Ironic run's id (its requests' folder:
#: ``backends.real_outdir``).
MODES_KEY = 'modes'
BY_MODE_KEY = 'by_mode'
BENCH_PROBLEMS_KEY = 'bench_problems'
RUNID_KEY = 'runid'


def write_json(path, data):
    """Write JSON through a temporary file and a rename: a reader never
    sees half of it, and two runs never mix theirs."""
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
    os.replace(tmp, path)
