"""The scenario player: the scenario matrix, run inside a prepared Nova tree.

It runs in the target's virtualenv, not in the harness: ``novaseries run``
starts it as ``python -m novaseries.nova_side.player.play`` with the target's
virtualenv Python, the working directory a Nova tree that has the series
applied (up to the reproducer commit, or whole) and ``PYTHONPATH`` that
tree and the harness's checkout (for ``novaseries.scenarios``). It uses
the tree's functional-test framework
(``nova.tests.functional.ironic.base.IronicTestBase``: real API, conductor,
scheduler, placement and compute services, the real ``IronicDriver`` and the
``IronicFixture`` fake Ironic that the series adds), runs each scenario once
and writes what it observed as JSON (the keys: ``scenario_table.OBSERVATION``).
It records; it does not judge: the scenarios and the expected outcomes are
defined in ``scenario_table.py``.

Which module does what: ``scenario_case`` plays a scenario, whatever the
Ironic; ``play_fake`` against the fake Ironic, ``play_real`` against a real
Ironic (``real_backend``,
``request_log``), ``play_bench`` is the benchmark, ``watch`` watches the
builds; this module reads the command line and writes the JSON.

Usage (what ``novaseries run`` does for each tree)::

    cd <tree>; PYTHONPATH=<tree>:<checkout> <venv>/bin/python \\
        -m novaseries.nova_side.player.play --out results.json [--scenario NAME ...]
    cd <tree>; PYTHONPATH=<tree>:<checkout> <venv>/bin/python \\
        -m novaseries.nova_side.player.play --out results.json \\
        --bench N:S:K[:option=value,...] RUN [--deadline S]

``--serve`` plays the explorer's cases (``novaseries explore``), one
JSON request per line of stdin, until its end (``play_explore.serve``).

``--bench`` makes one run (number RUN, its seed) of one benchmark spec
(``bench_table.parse``); the harness starts a process for each run. A run
prints a progress line every ``play_bench.BENCH_PROGRESS_EVERY`` seconds on
stderr; one that has not ended after ``--deadline`` seconds writes its
threads' stacks, who holds Nova's test database locks and the end of
Nova's log there, a record with an ``error``, and exits 3 (see
``play_bench.Watchdog``); SIGUSR1 dumps the stacks (faulthandler) at any
time.
"""

import argparse
import faulthandler
import json
import os
import signal
import sys

# The test package applies Nova's monkey patching; it must come first.
import nova.tests.functional  # noqa: F401  isort:skip

from novaseries.ironic import real_backend  # noqa: E402
from novaseries.nova_side.player import play_bench, play_explore  # noqa: E402
from novaseries.nova_side.player.play_fake import FakeScenarioTest  # noqa: E402
from novaseries.nova_side.player.play_real import RealScenarioTest  # noqa: E402
from novaseries.nova_side.player.scenario_case import run_scenario  # noqa: E402
from novaseries.scenarios import bench_table  # noqa: E402
from novaseries.scenarios.scenario import (  # noqa: E402
    BENCH_KEY, PROGRESS_PREFIX, SCENARIOS_KEY)
from novaseries.scenarios.scenario_table import BY_NAME, SCENARIOS  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--out')
    parser.add_argument('--serve', action='store_true',
                        help="play the explorer's cases, read from stdin "
                        '(play_explore.serve), until its end')
    parser.add_argument('--scenario', action='append', default=[])
    parser.add_argument('--bench', nargs=2, metavar=('N:S:K[:opt=val,...]',
                                                     'RUN'))
    parser.add_argument('--list', action='store_true')
    parser.add_argument('--ironic', choices=('fake', 'real'), default='fake')
    parser.add_argument('--ironic-info', metavar='JSON',
                        help='--ironic real: the real Ironic (a JSON file: '
                        '%s)' % ', '.join(real_backend.INFO_KEYS))
    parser.add_argument('--requests-dir', metavar='DIR',
                        help='--ironic real: where each scenario\'s '
                        'requests go (<scenario>.requests.jsonl)')
    parser.add_argument('--deadline', type=float, default=0, metavar='S',
                        help='a benchmark run that has not ended after S '
                        'seconds (if S > 0) dumps its threads and locks to '
                        'stderr, writes a record with an error and exits 3')
    args = parser.parse_args(argv)
    if args.serve:
        # the replies on a stdout of their own; what Nova prints goes to
        # stderr, the player's log
        replies = os.fdopen(os.dup(1), 'w')
        os.dup2(2, 1)
        play_explore.serve(sys.stdin, replies)
        return 0
    if not args.out and not args.list:
        parser.error('--out is required (but with --serve or --list)')
    if args.list:
        json.dump([s.describe() for s in SCENARIOS], sys.stdout, indent=1)
        return 0
    names = args.scenario or ([] if args.bench else list(BY_NAME))
    if not args.bench:
        # (a benchmark run's watchdog registers its own)
        faulthandler.register(signal.SIGUSR1, file=os.fdopen(
            os.dup(2), 'w', buffering=1), all_threads=True)
    out = {'nova_file': nova.__file__, SCENARIOS_KEY: [], BENCH_KEY: []}
    base, attrs = FakeScenarioTest, {}
    if args.ironic == 'real':
        if not args.ironic_info or args.bench:
            parser.error('--ironic real needs --ironic-info and runs '
                         'scenarios only')
        with open(args.ironic_info) as f:
            attrs = {'INFO': json.load(f),
                     'REQUESTS_DIR': args.requests_dir}
        base = RealScenarioTest
        out['ironic'] = 'real'
    for i, name in enumerate(names, 1):
        rec = run_scenario(BY_NAME[name], base, **attrs)
        out[SCENARIOS_KEY].append(rec)
        print('%s%d/%d] %-32s %s%s (%.1fs)' % (
            PROGRESS_PREFIX, i, len(names), name, rec.get('status'),
            ' ERROR IN PLAYER' if rec.get('error') else '',
            rec.get('test_seconds', 0)), file=sys.stdout, flush=True)
    if args.bench:
        # One run of one spec per process: Nova's database fixture does
        # not survive many runs in one process (its transaction factory
        # loses its configuration and every later run fails).
        spec, run = args.bench
        parsed = bench_table.parse(spec)
        watchdog = play_bench.Watchdog(
            args.out, bench_table.record_head(parsed, int(run)), args.deadline)
        rec = play_bench.run_bench(parsed, int(run), watchdog)
        out[BENCH_KEY].append(rec)
    with open(args.out, 'w') as f:
        json.dump(out, f, indent=1, sort_keys=True, default=str)
    return 0


if __name__ == '__main__':
    sys.exit(main())
