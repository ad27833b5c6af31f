"""The benchmark's report: tables and problems from the runners' records.

The records (keys: ``bench_table.RECORD``) come from both trees'
runners, R runs per spec; everything here is arithmetic on them (no Nova
needed). The tables are reStructuredText simple tables, so that
doc/main-job.rst can quote a run as it was printed.
"""

from novaseries.scenarios import bench_table
from novaseries.scenarios.bench_table import median, percentile

#: The goal for a healthy build's cost, fixed / reproducer.
COST_RATIO_GOAL = 1.02


def group(data):
    """{spec text: {tree: [record, ...]}}, specs in the order they ran."""
    specs = {}
    for tree in ('reproducer', 'fixed'):
        for rec in data.get(tree, {}).get('bench', []):
            specs.setdefault(rec['spec'], {}).setdefault(tree, []).append(
                rec)
    return specs


def _fmt(value, digits=2):
    if value is None:
        return '-'
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _spread(values, digits=0):
    """``median (min-max)`` of per-run values, or the value if all equal."""
    values = [v for v in values if v is not None]
    if not values:
        return '-'
    m = median(values)
    if min(values) == max(values):
        return _fmt(m, digits) if digits else f"{m:g}"
    text = _fmt(m, digits) if digits else f"{m:g}"
    return f"{text} ({min(values):g}-{max(values):g})"


def _pct(values, digits):
    """``p50 / p95 / max`` of pooled values."""
    values = [v for v in values if v is not None]
    if not values:
        return '-'
    return ' / '.join(_fmt(percentile(values, q), digits)
                      for q in (50, 95, 100))


def _rst(header, rows):
    """A reStructuredText simple table (list of lines)."""
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows)]
    rule = '  '.join('=' * w for w in widths)
    line = lambda cells: '  '.join(  # noqa: E731
        str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()
    return [rule, line(header), rule] + [line(r) for r in rows] + [rule]


def spec_k(text):
    return bench_table.parse(text).k


def _spec_cells(text):
    """[N:S:K, settings] of a spec."""
    spec = bench_table.parse(text)
    return ['%d:%d:%d' % spec[:3], spec.settings]


def _count(rec, status):
    return rec.get('outcome', {}).get(status, 0)


def _torn_down_end(rec, status):
    return sum(1 for t in rec.get('torn_down', []) if t['final'] == status)


def end_state_table(specs):
    """Servers at the end, where the torn-down builds ended, wall time and
    Ironic calls (medians over the runs; ranges in brackets)."""
    rows = []
    for text, trees in specs.items():
        for tree, recs in trees.items():
            rows.append([
                *_spec_cells(text), tree, len(recs),
                ' / '.join(_spread([_count(r, s) for r in recs])
                           for s in ('ACTIVE', 'ERROR', 'BUILD')),
                _spread([sum(t['state'] == 'wait call-back'
                             for t in r.get('torn_down', []))
                         for r in recs]),
                ' / '.join(_spread([_torn_down_end(r, s) for r in recs])
                           for s in ('ACTIVE', 'ERROR', 'BUILD')),
                _spread([r.get('wall_seconds') for r in recs], 1),
                _spread([r.get('ironic_calls_total') for r in recs]),
                _fmt(median([r['ironic_calls_total'] / r['n'] for r in recs
                             if 'ironic_calls_total' in r]), 1),
                sum(len(r.get('inconsistencies', [])) +
                    bool(r.get('error')) for r in recs)])
    return _rst(['N:S:K', 'settings', 'tree', 'runs',
                 'servers ACTIVE / ERROR / BUILD',
                 'torn down in wait',
                 'torn down -> ACTIVE / ERROR / BUILD', 'wall s',
                 'Ironic calls', 'calls/build', 'inconsistencies'], rows)


def torn_down_table(specs):
    """Per torn-down build (pooled over the runs), from the undeploy on:
    driver polls and seconds until the driver gave up on the lost node,
    polls (with those of a reschedule's deploy) and seconds until the
    server was ACTIVE or ERROR (p50 / p95 / max)."""
    rows = []
    for text, trees in specs.items():
        for tree, recs in trees.items():
            torn = [t for r in recs for t in r.get('torn_down', [])]
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
    """A run's costs, in the order of _COSTS: the median wall time (of the
    build attempt) and Ironic calls of its healthy builds, and the run's
    wall and CPU seconds per server."""
    builds = rec.get('healthy', [])
    per_server = [None if rec.get(k) is None else rec[k] / rec['n']
                  for k in ('wall_seconds', 'cpu_seconds')]
    return (median([b['wall_seconds'] for b in builds]),
            median([b['ironic_calls'] for b in builds]), *per_server)


#: cost() keys of _run_costs' values, in order.
_COSTS = ('wall', 'calls', 'run_wall', 'cpu')


def cost(trees):
    """Healthy-build cost of one spec.

    :returns: dict: per tree, the median over the runs of each run's median
        attempt wall time (``wall``) and Ironic calls (``calls``) per
        healthy build and of the run's wall and CPU seconds per server
        (``run_wall``, ``cpu``); the fixed /
        reproducer ratio of each (``wall_ratio``, ...: median over the
        runs, run i of one tree against run i of the other); the number of
        runs paired; the range of calls per poll over every healthy build.
    """
    per_tree = {tree: {r['run']: _run_costs(r) for r in recs
                       if r.get('healthy')}
                for tree, recs in trees.items()}
    rep = per_tree.get('reproducer', {})
    fix = per_tree.get('fixed', {})
    runs = sorted(set(rep) & set(fix))
    result = {
        'builds': {t: median([len(r.get('healthy', [])) for r in recs])
                   for t, recs in trees.items()},
        'paired_runs': len(runs),
    }
    for j, name in enumerate(_COSTS):
        result[name] = {t: median([c[j] for c in v.values()])
                        for t, v in per_tree.items()}
        result[name + '_ratio'] = median([
            fix[i][j] / rep[i][j] for i in runs
            if rep[i][j] and fix[i][j] is not None])
    per_poll = [b['calls_per_poll'] for recs in trees.values()
                for r in recs for b in r.get('healthy', [])
                if b['calls_per_poll'] is not None]
    result['calls_per_poll'] = (min(per_poll), max(per_poll)) \
        if per_poll else None
    return result


def _range(pair):
    if pair is None:
        return '-'
    return f"{pair[0]:g}" if pair[0] == pair[1] else f"{pair[0]:g}-{pair[1]:g}"


def healthy_table(specs):
    """Healthy builds (deployed once, went ACTIVE): the run's wall and CPU
    time per server, the median build attempt's wall time, Ironic calls
    per build and per poll; fixed / reproducer."""
    rows = []
    both = ('reproducer', 'fixed')
    for text, trees in specs.items():
        c = cost(trees)
        cells = [*_spec_cells(text),
                 ' / '.join(_fmt(c['builds'].get(t), 0) for t in both)]
        for name, digits in (('run_wall', 3), ('cpu', 3), ('wall', 3),
                             ('calls', 1)):
            cells += [' / '.join(_fmt(c[name].get(t), digits) for t in both),
                      _fmt(c[name + '_ratio'], 3)]
        rows.append(cells + [_range(c['calls_per_poll'])])
    return _rst(['N:S:K', 'settings', 'builds rep / fixed',
                 'run wall s/server rep / fixed', 'ratio',
                 'run CPU s/server rep / fixed', 'ratio',
                 'attempt wall s rep / fixed', 'ratio',
                 'calls/build rep / fixed', 'ratio', 'calls/poll'], rows)


def problems(specs):
    """What makes the benchmark's result wrong (list of strings): a runner
    error, a run that did not settle, a fixed tree with an inconsistency or
    a server in BUILD, a reproducer tree that does not show exactly the K
    torn-down builds in BUILD (then it does not measure the bug)."""
    found = []
    for text, trees in specs.items():
        for tree, recs in trees.items():
            for r in recs:
                where = f"{text} run {r['run']} ({tree})"
                if r.get('error'):
                    found.append(f"{where}: runner error: "
                                 f"{r['error'].strip().splitlines()[-1]}")
                    continue
                if not r.get('settled'):
                    found.append(f"{where}: did not settle")
                torn = {t['server'] for t in r.get('torn_down', [])}
                stuck = set(r.get('stuck_in_build', []))
                if tree == 'fixed':
                    found += [f"{where}: {p}" for p in
                              r.get('inconsistencies', [])]
                    if stuck:
                        found.append(f"{where}: {len(stuck)} server(s) in "
                                     "BUILD")
                elif stuck != torn or len(torn) != r['k']:
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
             'End state (median over the runs; range in brackets):']
    lines += end_state_table(specs)
    lines += ['', 'Torn-down builds (all runs; p50 / p95 / max):']
    lines += torn_down_table(specs)
    lines += ['', 'Healthy builds (deployed once, ACTIVE; medians over the '
              'runs; ratio: fixed / reproducer, median of the paired runs):']
    lines += healthy_table(specs)
    goals = []
    for text, trees in specs.items():
        c = cost(trees)
        if spec_k(text) or c['wall_ratio'] is None:
            continue
        goals.append(
            f"healthy-build cost, fixed / reproducer, {text} (no teardown: "
            f"both trees do the same work; median of {c['paired_runs']} "
            f"paired runs): wall per server {_fmt(c['run_wall_ratio'], 3)}, "
            f"CPU per server {_fmt(c['cpu_ratio'], 3)}, Ironic calls per "
            f"build {c['calls_ratio']:.3f} (goal <= {COST_RATIO_GOAL}); "
            f"Ironic calls per healthy poll: {_range(c['calls_per_poll'])} "
            f"(goal: exactly 1); median attempt wall {c['wall_ratio']:.3f}")
    if goals:
        lines += [''] + goals
    found = problems(specs)
    details = [f"{text} run {r['run']} (reproducer): {p}"
               for text, trees in specs.items()
               for r in trees.get('reproducer', [])
               for p in r.get('inconsistencies', [])]
    if details:
        lines += ['', 'reproducer tree, as released (not counted):'] + \
            [f"  {d}" for d in details]
    return lines, found
