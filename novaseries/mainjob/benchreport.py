"""The benchmark's report: tables and problems from the players' records.

The records (keys: ``bench_table.RECORD``) come from both trees' players,
R runs per spec; everything here is arithmetic on them (no Nova needed).
The tables are reStructuredText simple tables, to be pasted into a
document as a run printed them.

Statistics use the *valid* runs only: a run whose player failed or whose
servers did not settle is a problem, and its numbers are left out.
"""

from novaseries.mainjob.report import BY_MODE_KEY, MODES_KEY
from novaseries.scenarios import bench_table
from novaseries.scenarios.bench_table import median, percentile
from novaseries.scenarios.scenario import BENCH_KEY, FIXED, REPRODUCER, TREES

#: The goal for a healthy build's cost, fixed / reproducer.
COST_RATIO_GOAL = 1.02


def group(data):
    """{spec text: {tree: [record, ...]}}, specs in the order they ran."""
    specs = {}
    for tree in TREES:
        for rec in data.get(tree, {}).get(BENCH_KEY, []):
            specs.setdefault(rec['spec'], {}).setdefault(tree, []).append(
                rec)
    return specs


def valid(recs):
    """The records of runs that ran to the end (no error, settled)."""
    return [r for r in recs if not r.get('error') and r.get('settled')]


def spec_k(text):
    """K (builds torn down) of a spec text."""
    return bench_table.parse(text).k


def _spec_cells(text):
    """[N:S:K, settings] of a spec."""
    spec = bench_table.parse(text)
    return ['%d:%d:%d' % spec[:3], spec.settings]


def _fmt(value, digits=2):
    if value is None:
        return '-'
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _spread(values, digits=0):
    """``median (min-max)`` of per-run values, or the value if all equal,
    each with ``digits`` decimals; '-' without values."""
    values = [v for v in values if v is not None]
    if not values:
        return '-'

    def text(v):
        return _fmt(float(v), digits) if digits else f"{v:g}"
    m = text(median(values))
    if min(values) == max(values):
        return m
    return f"{m} ({text(min(values))}-{text(max(values))})"


def _pct(values, digits):
    """``p50 / p95 / max`` of pooled values, or '-'."""
    values = [v for v in values if v is not None]
    if not values:
        return '-'
    return ' / '.join(_fmt(float(percentile(values, q)), digits)
                      if digits else f"{percentile(values, q):g}"
                      for q in (50, 95, 100))


def _range(pair):
    if pair is None:
        return '-'
    return f"{pair[0]:g}" if pair[0] == pair[1] else f"{pair[0]:g}-{pair[1]:g}"


def _rst(header, rows):
    """A reStructuredText simple table: a list of lines."""
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows)]
    rule = '  '.join('=' * w for w in widths)

    def line(cells):
        return '  '.join(str(c).ljust(w)
                         for c, w in zip(cells, widths)).rstrip()
    return [rule, line(header), rule] + [line(r) for r in rows] + [rule]


def _runs(recs):
    ok = len(valid(recs))
    return str(ok) if ok == len(recs) else f"{ok} ({len(recs) - ok} failed)"


def end_state_table(specs):
    """Servers at the end, where the torn-down builds ended, wall time and
    Ironic calls (medians over the valid runs, ranges in brackets): a list
    of lines."""
    rows = []
    for text, trees in specs.items():
        for tree, recs in trees.items():
            ok = valid(recs)
            rows.append([
                *_spec_cells(text), tree, _runs(recs),
                ' / '.join(_spread([r['outcome'].get(s, 0) for r in ok])
                           for s in ('ACTIVE', 'ERROR', 'BUILD')),
                ' / '.join(_spread([sum(t['final'] == s
                                        for t in r['torn_down'])
                                    for r in ok])
                           for s in ('ACTIVE', 'ERROR', 'BUILD')),
                _spread([r['wall_seconds'] for r in ok], 1),
                _spread([r['ironic_calls_total'] for r in ok]),
                _fmt(median([r['ironic_calls_total'] / r['n'] for r in ok]),
                     1),
                sum(len(r['inconsistencies']) for r in ok)])
    return _rst(['N:S:K', 'settings', 'tree', 'runs',
                 'servers ACTIVE / ERROR / BUILD',
                 'torn down -> ACTIVE / ERROR / BUILD', 'wall s',
                 'Ironic calls', 'calls/server', 'inconsistencies'], rows)


def rescheduled_table(specs):
    """The fixed tree's rescheduled builds (any server with a rescheduled
    attempt) and where they ended, medians over the valid runs: a list of
    lines."""
    rows = []
    for text, trees in specs.items():
        ok = valid(trees.get(FIXED, []))
        if not ok:
            continue
        counts = [r['rescheduled'] for r in ok]
        rows.append([*_spec_cells(text), _spread([spec_k(text)] * len(ok)),
                     *(_spread([c[key] for c in counts])
                       for key in ('builds', 'ACTIVE', 'ERROR')),
                     _pct([t['seconds_to_final'] for r in ok
                           for t in r['torn_down']
                           if t['final'] == 'ACTIVE'], 2)])
    return _rst(['N:S:K', 'settings', 'torn down', 'rescheduled',
                 '-> ACTIVE', '-> ERROR',
                 's to ACTIVE (p50 / p95 / max)'], rows)


def torn_down_table(specs):
    """Per torn-down build (pooled over the valid runs), from the undeploy
    on: driver polls and seconds until the driver gave up on the lost node,
    polls (with destroy()'s of the lost node and those of a reschedule's
    deploy) and seconds until the
    server was ACTIVE or ERROR (p50 / p95 / max): a list of lines."""
    rows = []
    for text, trees in specs.items():
        for tree, recs in trees.items():
            torn = [t for r in valid(recs) for t in r['torn_down']]
            never = sum(1 for t in torn if t['seconds_to_final'] is None)
            rows.append([
                *_spec_cells(text), tree, len(torn),
                _pct([t['polls_to_give_up'] for t in torn], 0),
                _pct([t['seconds_to_give_up'] for t in torn], 3),
                _pct([t['polls_to_final'] for t in torn], 0),
                _pct([t['seconds_to_final'] for t in torn], 2) +
                (f" ({never} never)" if never else '')])
    return _rst(['N:S:K', 'settings', 'tree', 'builds', 'polls to give up',
                 's to give up', 'polls to final state',
                 's to final state'], rows)


def _run_costs(rec):
    """A run's costs, in the order of _COSTS: the median wall time of its
    healthy builds' attempts, their mean Ironic calls, the run's wall and
    CPU seconds per server."""
    builds = rec['healthy']
    return (median([b['wall_seconds'] for b in builds]),
            sum(b['ironic_calls'] for b in builds) / len(builds),
            rec['wall_seconds'] / rec['n'], rec['cpu_seconds'] / rec['n'])


#: cost() keys of _run_costs' values, in order.
_COSTS = ('wall', 'calls', 'run_wall', 'cpu')


def cost(trees):
    """Healthy-build cost of one spec, from its valid runs.

    :returns: dict: ``builds`` {tree: median healthy builds per run};
        ``wall``, ``calls``, ``run_wall``, ``cpu`` {tree: median over the
        runs of the run's median attempt wall time, mean Ironic calls per
        healthy build, wall and CPU seconds per server}; ``<key>_ratio``:
        fixed / reproducer of run i against run i, median over the runs
        (None without a pair); ``paired_runs``; ``spread`` {tree: (max -
        min) / median of its runs' wall per server, the noise a ratio is
        read against}; ``calls_per_poll``: (min, max) over every healthy
        build of both trees, or None.
    """
    per_tree = {tree: {r['run']: _run_costs(r) for r in valid(recs)
                       if r['healthy']}
                for tree, recs in trees.items()}
    rep = per_tree.get(REPRODUCER, {})
    fix = per_tree.get(FIXED, {})
    runs = sorted(set(rep) & set(fix))
    result = {
        'builds': {t: median([len(r['healthy']) for r in valid(recs)])
                   for t, recs in trees.items()},
        'paired_runs': len(runs),
        'spread': {},
    }
    for j, name in enumerate(_COSTS):
        result[name] = {t: median([c[j] for c in v.values()])
                        for t, v in per_tree.items()}
        result[name + '_ratio'] = median([fix[i][j] / rep[i][j]
                                          for i in runs if rep[i][j]])
    for tree, v in per_tree.items():
        walls = [c[2] for c in v.values()]
        result['spread'][tree] = ((max(walls) - min(walls)) / median(walls)
                                  if walls else None)
    per_poll = [b['calls_per_poll'] for recs in trees.values()
                for r in valid(recs) for b in r['healthy']
                if b['calls_per_poll'] is not None]
    result['calls_per_poll'] = (min(per_poll), max(per_poll)) \
        if per_poll else None
    return result


def healthy_table(specs):
    """Healthy builds (not torn down, deployed once, ACTIVE): the run's
    wall and CPU time per server, the median build attempt's wall time,
    Ironic calls per build and per poll; reproducer / fixed and their
    ratio: a list of lines."""
    rows = []
    both = TREES
    for text, trees in specs.items():
        c = cost(trees)
        cells = [*_spec_cells(text),
                 ' / '.join(_fmt(c['builds'].get(t), 0) for t in both)]
        for name, digits in (('run_wall', 3), ('cpu', 3), ('wall', 3),
                             ('calls', 2)):
            cells += [' / '.join(_fmt(c[name].get(t), digits) for t in both),
                      _fmt(c[name + '_ratio'], 3)]
        rows.append(cells + [_range(c['calls_per_poll'])])
    return _rst(['N:S:K', 'settings', 'builds rep / fixed',
                 'run wall s/server rep / fixed', 'ratio',
                 'run CPU s/server rep / fixed', 'ratio',
                 'attempt wall s rep / fixed', 'ratio',
                 'calls/build rep / fixed', 'ratio', 'calls/poll'], rows)


def goals(specs):
    """The healthy-build cost goals of each spec without teardown (where
    both trees do the same work): ([lines], [problems]).

    Counts are judged, on every spec: Ironic calls per healthy poll must be
    exactly 1 on the fixed tree and its calls per healthy build at most
    COST_RATIO_GOAL of the reproducer's (a healthy build's calls do not
    depend on timing). Times are reported as met or missed, with the runs'
    spread, not judged: on a shared machine their noise is larger than the
    goal.
    """
    lines, found = [], []
    for text, trees in specs.items():
        c = cost(trees)
        if c['calls_ratio'] is not None and \
                c['calls_ratio'] > COST_RATIO_GOAL:
            found.append(f"{text}: the fixed tree's healthy builds make "
                         f"{c['calls_ratio']:.3f} x the reproducer's Ironic "
                         f"calls (goal <= {COST_RATIO_GOAL})")
        if spec_k(text):
            continue
        if not c['paired_runs']:
            found.append(f"{text}: no pair of valid runs to compare")
            continue

        def verdict(ratio):
            if ratio is None:
                return '(no value)'
            return 'met' if ratio <= COST_RATIO_GOAL else 'MISSED'
        lines.append(f"healthy-build cost, fixed / reproducer, {text} "
                     f"(median of {c['paired_runs']} paired runs; goal <= "
                     f"{COST_RATIO_GOAL}; times are reported, not judged):")
        for name, what in (('calls', 'Ironic calls per healthy build'),
                           ('run_wall', 'wall time per server'),
                           ('cpu', 'CPU time per server'),
                           ('wall', 'median build attempt wall time')):
            ratio = c[name + '_ratio']
            lines.append(f"  {what}: {_fmt(ratio, 3)} {verdict(ratio)}")
        lines.append("  spread of the runs' wall time per server: " + ', '.join(
            f"{t} {_fmt(None if s is None else 100 * s, 1)} %"
            for t, s in c['spread'].items()))
    for text, trees in specs.items():
        per_poll = [b['calls_per_poll'] for r in valid(trees.get(FIXED, []))
                    for b in r['healthy'] if b['calls_per_poll'] != 1.0]
        if per_poll:
            found.append(f"{text}: {len(per_poll)} healthy build(s) of the "
                         f"fixed tree made {sorted(set(per_poll))} Ironic "
                         "calls per poll (goal: exactly 1)")
    per_poll = [b['calls_per_poll'] for trees in specs.values()
                for recs in trees.values() for r in valid(recs)
                for b in r['healthy']]
    if per_poll:
        lines.append(f"Ironic calls per healthy poll, every healthy build "
                     f"of every valid run: {_range((min(per_poll), max(per_poll)))}"
                     " (goal: exactly 1)")
    return lines, found


def problems(specs):
    """What makes the benchmark's result wrong (list of strings): a player
    error, a run that did not settle, an inconsistency (on either tree: the
    bug leaves the torn-down servers in BUILD and nothing else wrong), a
    fixed tree with a server in BUILD, a reproducer tree that does not show
    exactly the K torn-down builds in BUILD."""
    found = []
    for text, trees in specs.items():
        for tree, recs in trees.items():
            for r in recs:
                where = f"{text} run {r['run']} ({tree})"
                if r.get('error'):
                    last = r['error'].strip().splitlines() or ['(empty)']
                    found.append(f"{where}: player error: {last[-1]}")
                    continue
                if not r.get('settled'):
                    found.append(f"{where}: did not settle")
                torn = {t['server'] for t in r['torn_down']}
                stuck = set(r['stuck_in_build'])
                if tree == FIXED:
                    found += [f"{where}: {p}" for p in r['inconsistencies']]
                    if stuck:
                        found.append(f"{where}: {len(stuck)} server(s) in "
                                     "BUILD")
                    continue
                # (the bug leaves a server in BUILD and nothing else wrong)
                found += [f"{where}: {p}" for p in r['inconsistencies']]
                if stuck != torn or len(torn) != r['k']:
                    found.append(
                        f"{where}: {len(stuck)} in BUILD, {len(torn)} torn "
                        f"down, expected the {r['k']} torn down in BUILD")
    return found


def report(data):
    """The benchmark's section of ``novaseries run --bench``.

    :returns: (lines, problems).
    """
    specs = group(data)
    if not specs:
        return [], []
    lines = ['benchmark: N builds on N + S nodes, K deploys undeployed in '
             'wait call-back', '',
             'End state (median over the valid runs; range in brackets):']
    lines += end_state_table(specs)
    lines += ['', 'Rescheduled builds, fixed tree (median over the valid '
              'runs; range in brackets):']
    lines += rescheduled_table(specs)
    lines += ['', 'Torn-down builds (all valid runs; p50 / p95 / max):']
    lines += torn_down_table(specs)
    lines += ['', 'Healthy builds (medians over the valid runs; ratio: '
              'fixed / reproducer, median of the paired runs):']
    lines += healthy_table(specs)
    goal_lines, found = goals(specs)
    if goal_lines:
        lines += [''] + goal_lines
    found = problems(specs) + found
    return lines, found


def compare_modes(result):
    """The benchmark in Nova's two concurrency modes side by side, per spec
    and tree (``run --bench ... --mode both``): valid runs, ACTIVE / ERROR /
    BUILD, the run's wall time, the healthy builds' wall time per server
    and per attempt, Ironic calls per healthy build and per healthy poll,
    and the healthy-build cost ratio (fixed / reproducer) of each mode.

    :param result: the run's JSON (``MODES_KEY``, ``BY_MODE_KEY`` of
        :mod:`~novaseries.mainjob.report`).
    :returns: a list of lines ([] without benchmark records).
    """
    per_mode = {mode: group(result[BY_MODE_KEY][mode])
                for mode in result[MODES_KEY]}
    specs = [text for mode in result[MODES_KEY] for text in per_mode[mode]]
    rows = []
    for text in dict.fromkeys(specs):
        for tree in TREES:
            for mode in result[MODES_KEY]:
                trees = per_mode[mode].get(text)
                if not trees or tree not in trees:
                    continue
                ok = valid(trees[tree])
                c = cost(trees)
                per_poll = [b['calls_per_poll'] for r in ok for b in r['healthy']
                            if b['calls_per_poll'] is not None]
                rows.append([
                    *_spec_cells(text), tree, mode, _runs(trees[tree]),
                    ' / '.join(_spread([r['outcome'].get(s, 0) for r in ok])
                               for s in ('ACTIVE', 'ERROR', 'BUILD')),
                    _spread([r['wall_seconds'] for r in ok], 1),
                    _fmt(c['run_wall'].get(tree), 3), _fmt(c['wall'].get(tree), 3),
                    _fmt(c['calls'].get(tree), 2),
                    _range((min(per_poll), max(per_poll)) if per_poll else None),
                    _fmt(c['run_wall_ratio'], 3) if tree == FIXED else ''])
    if not rows:
        return []
    return ['Both modes, same specs (medians over the valid runs; cost ratio: '
            'fixed / reproducer wall time per healthy server, per mode):'] + _rst(
        ['N:S:K', 'settings', 'tree', 'mode', 'runs', 'ACTIVE / ERROR / BUILD',
         'run wall s', 'wall s/server', 'attempt wall s', 'calls/build',
         'calls/poll', 'cost ratio'], rows)
