"""The benchmark's specs, suites, record keys and statistics.

Standard library only: the in-venv runner (``nova_scenarios.py``) imports
this module from its folder, the harness (``novaseries.mainjob``) as
``novaseries.scenarios.bench_table``.

A spec is ``N:S:K[:option=value,...]``: N servers created at once on one
nova-compute that manages N + S Ironic nodes; the operator undeploys K of
the deploys while each waits in ``wait call-back`` (DEPLOYWAIT); the
options are Nova configuration options that the run sets (``OPTIONS``).
"""

import collections
import math
import re

#: The Nova options a spec may set: name -> (group, type). Group None is
#: ``[DEFAULT]``.
OPTIONS = {
    # nova/conf/compute.py: the build semaphore of one nova-compute; 0 is
    # "unlimited" (deprecated; 1000 in eventlet mode)
    'max_concurrent_builds': (None, int),
    # nova/scheduler/manager.py _get_sorted_hosts: shuffle the hosts of
    # equal best weight (every free node of a flavor weighs the same)
    'shuffle_best_same_weighed_hosts': ('filter_scheduler', bool),
    # ... then choose the host at random among the first host_subset_size
    'host_subset_size': ('filter_scheduler', int),
    # one host and max_attempts - 1 alternates per build
    'max_attempts': ('scheduler', int),
}

#: Nova's defaults of OPTIONS (what a spec without the option runs with).
DEFAULTS = {'max_concurrent_builds': 10,
            'shuffle_best_same_weighed_hosts': False,
            'host_subset_size': 1, 'max_attempts': 3}

#: Named sets of specs (``--bench scale``); "all" is every one.
SUITES = {
    'scale': ('10:2:2', '50:10:10', '100:20:20',
              '100:20:20:max_concurrent_builds=0'),
    'alternates': (
        '50:10:10',
        '50:10:10:shuffle_best_same_weighed_hosts=true',
        '50:10:10:host_subset_size=10',
        '50:10:10:max_attempts=5',
        '50:10:10:max_attempts=5,shuffle_best_same_weighed_hosts=true',
        '50:10:10:host_subset_size=10,max_attempts=5,'
        'shuffle_best_same_weighed_hosts=true',
    ),
}
#: No teardown: both trees do the same work, so their healthy builds'
#: cost compares the driver's wait loop alone.
SUITES['cost'] = ('50:0:0',)
SUITES['all'] = tuple(dict.fromkeys(
    SUITES['cost'] + SUITES['scale'] + SUITES['alternates']))

#: The keys of one run's record (what the runner writes per spec and run).
RECORD = {
    'spec': 'the spec, normalised (BenchSpec.text)',
    'run': 'the run of the spec, 1..R (seed = run)',
    'n': 'servers created', 's': 'spare nodes', 'k': 'builds torn down',
    'options': 'the Nova options set, {name: value}',
    'error': "the runner's traceback if the run failed, else None",
    'settled': 'False when the servers did not settle in time',
    'wall_seconds': 'from the first create request to the last build '
                    'attempt or final state',
    'cpu_seconds': 'CPU time of the runner process (all its threads) '
                   'over the same span',
    'ironic_calls_total': 'driver calls to Ironic during the run',
    'outcome': '{server status at the end: count}',
    'build_results': "{compute build attempt result: count}",
    'torn_down': 'per torn-down build: server, node, poll (of its wait '
                 'at which it was undeployed), state (the provision_state '
                 'then), polls_to_give_up (driver polls of the lost node '
                 'after it, until spawn() raised), seconds_to_give_up, '
                 'final (status at the end), polls_to_final (those and the '
                 'polls of its reschedules\' deploys), seconds_to_final '
                 '(both None if it never got to ACTIVE or ERROR), '
                 'attempts (their results)',
    'healthy': 'per build that deployed once and went ACTIVE: '
               'wall_seconds (of its build attempt), ironic_calls '
               '(about its node, in the attempt), polls, calls_per_poll '
               '(calls between its first and last poll / polls)',
    'stuck_in_build': 'servers in BUILD at the end',
    'inconsistencies': 'what the end state gets wrong (see CONSISTENCY)',
}

#: What the runner checks at the end of every run (its inconsistencies).
CONSISTENCY = (
    'every torn-down build was undeployed in wait call-back, K of them',
    'every ACTIVE server is on an active node associated with it',
    'every ERROR server has a fault',
    'no allocation is left for a server that is not ACTIVE',
    'no node is associated with a server that is not ACTIVE on it',
)

_SPEC = re.compile(r'([1-9]\d*):(\d+):(\d+)(?::(.+))?')


class BenchSpec(collections.namedtuple('BenchSpec', 'n s k options')):
    """One benchmark configuration; ``options`` is a sorted tuple of
    (name, value) pairs of OPTIONS."""

    @property
    def text(self):
        """The normalised spec, e.g. ``50:10:10:max_attempts=5``."""
        base = '%d:%d:%d' % (self.n, self.s, self.k)
        if not self.options:
            return base
        return base + ':' + ','.join(
            '%s=%s' % (k, str(v).lower() if isinstance(v, bool) else v)
            for k, v in self.options)

    @property
    def settings(self):
        """The options that differ from Nova's defaults, or 'defaults'."""
        return ', '.join('%s=%s' % kv for kv in self.options) or 'defaults'

    def flags(self):
        """[(name, value, group)] to set for this run."""
        return [(k, v, OPTIONS[k][0]) for k, v in self.options]


def _value(name, text):
    kind = OPTIONS[name][1]
    if kind is bool:
        if text.lower() not in ('true', 'false'):
            raise ValueError('%s takes true or false, not %r' % (name, text))
        return text.lower() == 'true'
    if not re.fullmatch(r'\d+', text):
        raise ValueError('%s takes an integer >= 0, not %r' % (name, text))
    return int(text)


def parse(text):
    """Parse one spec.

    :returns: BenchSpec.
    :raises ValueError: not ``N:S:K[:option=value,...]`` with N >= 1,
        K <= N and known options (the message says which part is wrong).
    """
    m = _SPEC.fullmatch(text)
    if not m:
        raise ValueError('%r: expected N:S:K[:option=value,...] with N >= 1 '
                         'builds, S spare nodes, K torn down' % text)
    n, s, k = (int(x) for x in m.groups()[:3])
    if k > n:
        raise ValueError('%r: K (%d torn down) > N (%d builds)' % (text, k, n))
    options = {}
    for item in (m.group(4) or '').split(',') if m.group(4) else ():
        name, sep, value = item.partition('=')
        if not sep or name not in OPTIONS:
            raise ValueError('%r: unknown option %r (known: %s)' % (
                text, item, ', '.join(sorted(OPTIONS))))
        if name in options:
            raise ValueError('%r: %s given twice' % (text, name))
        options[name] = _value(name, value)
    if options.get('max_attempts') == 0 or \
            options.get('host_subset_size') == 0:
        raise ValueError('%r: max_attempts and host_subset_size are >= 1'
                         % text)
    # a default given explicitly is the same run as without it
    options = {k: v for k, v in options.items() if DEFAULTS[k] != v}
    return BenchSpec(n, s, k, tuple(sorted(options.items())))


def expand(items):
    """Specs and suite names -> [BenchSpec], in order, each once.

    :raises ValueError: from ``parse``.
    """
    specs = []
    for item in items:
        for text in SUITES.get(item, (item,)):
            spec = parse(text)
            if spec not in specs:
                specs.append(spec)
    return specs


def percentile(values, q):
    """The q-th percentile (0 < q <= 100) by nearest rank; None if empty."""
    values = sorted(v for v in values if v is not None)
    if not values:
        return None
    return values[max(0, math.ceil(q / 100.0 * len(values)) - 1)]


def median(values):
    """The median (mean of the middle two for an even count); None if
    empty."""
    values = sorted(v for v in values if v is not None)
    if not values:
        return None
    mid = len(values) // 2
    if len(values) % 2:
        return values[mid]
    return (values[mid - 1] + values[mid]) / 2.0
