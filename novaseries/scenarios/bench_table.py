"""The benchmark's specs, suites, record keys and statistics.

Standard library only: the scenario player in Nova's venv
(``novaseries.nova_side.player.play``) and the harness (``novaseries.mainjob``)
import it as ``novaseries.scenarios.bench_table``.

A spec is ``N:S:K[:option=value,...]``: N servers created at once on one
nova-compute that manages N + S Ironic nodes; the operator undeploys K of
the deploys while each waits in ``wait call-back`` (DEPLOYWAIT); the
options are Nova configuration options that the run sets (``OPTIONS``).
"""

import collections
import math
import re

#: The Nova options a spec may set: name -> (group, type, Nova's default).
#: Group None is ``[DEFAULT]``.
OPTIONS = {
    # nova/conf/compute.py: the build semaphore of one nova-compute; 0 is
    # "unlimited" (deprecated; 1000 in eventlet mode)
    'max_concurrent_builds': (None, int, 10),
    # nova/scheduler/manager.py _get_sorted_hosts: shuffle the hosts of
    # equal best weight (every free node of a flavor weighs the same)
    'shuffle_best_same_weighed_hosts': ('filter_scheduler', bool, False),
    # ... then choose the host at random among the first host_subset_size
    'host_subset_size': ('filter_scheduler', int, 1),
    # one host and max_attempts - 1 alternates per build
    'max_attempts': ('scheduler', int, 3),
}

#: Named sets of specs (``--bench scale``); "all" is every one.
BENCH_SUITES = {
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
BENCH_SUITES['cost'] = ('50:0:0',)
BENCH_SUITES['all'] = tuple(dict.fromkeys(
    BENCH_SUITES['cost'] + BENCH_SUITES['scale'] + BENCH_SUITES['alternates']))

#: Polls a healthy deploy is answered ``wait call-back`` before its agent
#: calls back (the bench holds every deploy there: the fixture's
#: ``callback_reads=None``); a torn-down build is undeployed after a random
#: one of these polls.
HEALTHY_WAIT_POLLS = 3

#: The keys of one run's record (what the player writes per spec and run).
RECORD = {
    'spec': 'the spec, normalised (BenchSpec.text)',
    'run': 'the run of the spec, 1..R (seed = run)',
    'n': 'servers created', 's': 'spare nodes', 'k': 'builds torn down',
    'options': 'the Nova options set, {name: value}',
    'error': "the player's traceback if the run failed, else None",
    'settled': 'False when the servers did not settle in time',
    'wall_seconds': 'from the first create request to the last build '
                    'attempt or final state',
    'cpu_seconds': 'CPU time of the player process (all its threads) '
                   'over the same span',
    'ironic_calls_total': 'driver calls to Ironic during the run',
    'outcome': '{server status at the end: count}',
    'build_results': "{compute build attempt result: count}",
    'torn_down': 'per torn-down build: TORN_DOWN_FIELDS',
    'healthy': 'per build that was not torn down, deployed once and went '
               'ACTIVE: HEALTHY_FIELDS',
    'rescheduled': 'builds with a rescheduled attempt and where they ended: '
                   'rescheduled()',
    'stuck_in_build': 'servers in BUILD at the end',
    'inconsistencies': 'what the end state gets wrong (see CONSISTENCY)',
}

#: The fields of a torn-down build's entry.
TORN_DOWN_FIELDS = {
    'server': 'its server', 'node': 'the node undeployed',
    'poll': 'the poll of its wait after which it was undeployed '
            f'(1..{HEALTHY_WAIT_POLLS})',
    'state': 'the provision_state then (wait call-back)',
    'polls_to_give_up': "driver polls of the lost node after the undeploy, "
                        "until spawn() raised",
    'seconds_to_give_up': 'and the seconds until then',
    'final': 'server status at the end (missing: not in the API)',
    'polls_to_final': "driver polls of the lost node after the undeploy "
                      "(spawn()'s and destroy()'s) and of its reschedules' "
                      "deploys; None if it never got to ACTIVE or ERROR",
    'seconds_to_final': 'seconds from the undeploy to ACTIVE or ERROR; None '
                        'if it never got there',
    'attempts': 'the results of its build attempts',
}

#: The fields of a healthy build's entry.
HEALTHY_FIELDS = {
    'wall_seconds': 'wall time of its build attempt',
    'ironic_calls': 'driver calls about its node during the attempt',
    'polls': 'its polls (nodes(instance_id=...)) among them',
    'calls_per_poll': 'calls between its first and last poll / polls',
}

#: What the player checks at the end of every run (inconsistencies()).
CONSISTENCY = (
    'K builds were undeployed, each in wait call-back',
    'every build that was not torn down deployed once and is ACTIVE',
    'every server is in the API',
    'every ACTIVE server is on an active node associated with it and '
    'holds exactly that node\'s allocation',
    'every ERROR server has a fault',
    'no allocation is left for a server that is not ACTIVE',
    'no node is associated with a server that is not ACTIVE on it, and '
    'every other node is available (once Ironic finished its work)',
)

#: Build attempt results (nova.compute.build_results) after which the
#: conductor tries an alternate host.
RESCHEDULED = ('rescheduled', 'rescheduled_by_policy')

_SPEC = re.compile(r'([1-9]\d*):(\d+):(\d+)(?::(.+))?')


class BenchSpec(collections.namedtuple('BenchSpec', 'n s k options')):
    """One benchmark configuration; ``options`` is a sorted tuple of
    (name, value) pairs of OPTIONS."""

    def _options(self):
        return ['%s=%s' % (k, str(v).lower() if isinstance(v, bool) else v)
                for k, v in self.options]

    @property
    def text(self):
        """The normalised spec, e.g. ``50:10:10:max_attempts=5``."""
        base = '%d:%d:%d' % (self.n, self.s, self.k)
        if self.options:
            base += ':' + ','.join(self._options())
        return base

    @property
    def settings(self):
        """The options that differ from Nova's defaults, or 'defaults'."""
        return ', '.join(self._options()) or 'defaults'

    def flags(self):
        """[(name, value, group)] to set for this run."""
        return [(k, v, OPTIONS[k][0]) for k, v in self.options]


def record_head(spec, run):
    """The keys of a run's record (:data:`RECORD`) that its spec and run
    give: ``spec`` (its text), ``run``, ``n``, ``s``, ``k``.

    :param spec: a :class:`BenchSpec`.
    :param run: the run of the spec, 1..R.
    """
    return {'spec': spec.text, 'run': run, 'n': spec.n, 's': spec.s,
            'k': spec.k}


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
    for item in m.group(4).split(',') if m.group(4) else ():
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
    options = {k: v for k, v in options.items() if OPTIONS[k][2] != v}
    return BenchSpec(n, s, k, tuple(sorted(options.items())))


def expand(items):
    """Specs and suite names -> [BenchSpec], in order, each once.

    :raises ValueError: from ``parse``.
    """
    specs = []
    for item in items:
        for text in BENCH_SUITES.get(item, (item,)):
            spec = parse(text)
            if spec not in specs:
                specs.append(spec)
    return specs


def percentile(values, q):
    """The q-th percentile (0 < q <= 100) by nearest rank of the values
    that are not None; None if there are none.

    :raises ValueError: q outside (0, 100].
    """
    if not 0 < q <= 100:
        raise ValueError('percentile %r is not in (0, 100]' % q)
    values = sorted(v for v in values if v is not None)
    if not values:
        return None
    return values[max(0, math.ceil(q / 100.0 * len(values)) - 1)]


def median(values):
    """The median of the values that are not None (the mean of the middle
    two for an even count); None if there are none."""
    values = sorted(v for v in values if v is not None)
    if not values:
        return None
    mid = len(values) // 2
    if len(values) % 2:
        return values[mid]
    return (values[mid - 1] + values[mid]) / 2.0


def settled(views, attempts):
    """Whether every server has reached its end.

    :param views: {server id: {'status': ...} or None (not in the API)}.
    :param attempts: {server id: [result of each ended build attempt]}.
    :returns: True if each server is ACTIVE or ERROR, or in BUILD with a
        last attempt that ended without a reschedule (the bug: nothing will
        move it again).
    """
    for sid, view in views.items():
        if view is not None and view['status'] in ('ACTIVE', 'ERROR'):
            continue
        done = attempts.get(sid)
        if not done or done[-1] in RESCHEDULED:
            return False
    return True


def healthy_build(calls, node):
    """The Ironic calls of one build attempt about its node.

    :param calls: [(method, node id)] the driver made during the attempt
        (the fake Ironic's call log; ``nodes`` with an instance is a poll).
    :param node: the attempt's node.
    :returns: {'ironic_calls', 'polls', 'calls_per_poll'} (HEALTHY_FIELDS;
        calls_per_poll None without polls).
    """
    mine = [m for m, n in calls if n == node]
    polls = [i for i, m in enumerate(mine) if m == 'nodes']
    window = len(mine[polls[0]:polls[-1] + 1]) if polls else 0
    return {'ironic_calls': len(mine), 'polls': len(polls),
            'calls_per_poll': round(window / len(polls), 3)
            if polls else None}


def rescheduled(views, attempts):
    """Servers with a rescheduled build attempt and where they ended.

    :returns: {'builds': n, 'ACTIVE': n, 'ERROR': n, 'BUILD': n,
        'missing': n}.
    """
    counts = dict.fromkeys(('builds', 'ACTIVE', 'ERROR', 'BUILD',
                            'missing'), 0)
    for sid, results in attempts.items():
        if not any(r in RESCHEDULED for r in results):
            continue
        counts['builds'] += 1
        view = views.get(sid)
        status = 'missing' if view is None else view['status']
        counts[status] = counts.get(status, 0) + 1
    return counts


def inconsistencies(k, victims, views, nodes, allocations, attempts):
    """The end of a run against CONSISTENCY.

    :param k: the builds to tear down.
    :param victims: {server id: {'state': provision_state at the undeploy,
        or None if it never came}} of the torn-down builds.
    :param views: {server id: None (not in the API) or {'status', 'node'
        (hypervisor_hostname), 'fault' (its message or None)}}.
    :param nodes: {node id: None (deleted) or {'provision_state',
        'instance_id'}}.
    :param allocations: {server id: {resource provider: {class: amount}}}.
    :param attempts: {server id: [result of each ended build attempt]}.
    :returns: [str], one per problem (empty: consistent).
    """
    found = []
    in_wait = [s for s, v in victims.items() if v.get('state') ==
               'wait call-back']
    if len(victims) != k or len(in_wait) != k:
        found.append('%d of %d builds torn down in wait call-back (%s)' % (
            len(in_wait), k, ', '.join(
                '%s: %s' % (s, v.get('state') or 'never')
                for s, v in sorted(victims.items()) if s not in in_wait)
            or 'no others'))
    for sid, view in sorted(views.items()):
        status = 'missing' if view is None else view['status']
        if view is None:
            found.append('server %s is not in the API' % sid)
        if sid not in victims and (attempts.get(sid) != ['active'] or
                                   status != 'ACTIVE'):
            found.append('server %s was not torn down but its build '
                         'attempts were %s and it is %s' % (
                             sid, attempts.get(sid), status))
        held = allocations.get(sid) or {}
        if status == 'ACTIVE':
            node = nodes.get(view['node'])
            if node is None or (node['provision_state'], node['instance_id'])\
                    != ('active', sid):
                found.append('ACTIVE server %s: node %s is %s' % (
                    sid, view['node'], 'deleted' if node is None else
                    '%s with instance %s' % (node['provision_state'],
                                             node['instance_id'])))
            if held != {view['node']: {'CUSTOM_BAREMETAL': 1}}:
                found.append('ACTIVE server %s holds %s, not its node\'s '
                             'CUSTOM_BAREMETAL: 1' % (sid, held))
        elif held:
            found.append('%s server %s keeps an allocation: %s' % (
                status, sid, held))
        if status == 'ERROR' and not view.get('fault'):
            found.append('ERROR server %s has no fault' % sid)
    for node_id, node in sorted(nodes.items()):
        if node is None:
            continue
        owner = node['instance_id']
        if owner is None:
            if node['provision_state'] != 'available':
                found.append('node %s has no instance but is %s' % (
                    node_id, node['provision_state']))
            continue
        view = views.get(owner)
        if view is None or view['status'] != 'ACTIVE' or \
                view['node'] != node_id:
            found.append('node %s (%s) is associated with %s, which is %s'
                         % (node_id, node['provision_state'], owner,
                            'not a server of the run' if owner not in views
                            else 'missing' if view is None else
                            '%s on %s' % (view['status'], view['node'])))
    return found


def torn_down(victim, view, spawns, destroys, final_at, attempts):
    """A torn-down build's entry (TORN_DOWN_FIELDS).

    :param victim: {'server', 'node', 'poll', and once undeployed 'state',
        'at' (monotonic seconds), 'polls_at' (the node's poll count then)}.
    :param view: the server as ``inconsistencies`` takes it, or None.
    :param spawns: [{'node', 'polls' (the node's poll count when spawn()
        ended, or None), 'end' (monotonic seconds)}] in order.
    :param destroys: [{'node', 'polls'}] of its destroy() calls, likewise.
    :param final_at: when it went ACTIVE or ERROR (monotonic), or None.
    :param attempts: the results of its build attempts.
    :returns: the entry; a count or time that cannot be known is None.
    """
    at = victim.get('at')
    final = view is not None and view['status'] in ('ACTIVE', 'ERROR')
    lost = next((i for i, s in enumerate(spawns)
                 if s['node'] == victim['node']), None)

    def polls_on(node):
        # the node's count for its current deploy: no other deploy can
        # reuse the lost node before destroy() returns (the build still
        # holds its allocation then)
        counts = [r['polls'] for r in spawns + destroys
                  if r['node'] == node and r['polls'] is not None]
        return max(counts) if counts else None

    give_up = to_final = None
    if at is not None and lost is not None and \
            spawns[lost]['polls'] is not None:
        give_up = spawns[lost]['polls'] - victim['polls_at']
        later = [polls_on(s['node']) for s in spawns[lost + 1:]]
        if final and None not in later:
            to_final = polls_on(victim['node']) - victim['polls_at'] + \
                sum(later)
    return {
        'server': victim['server'], 'node': victim['node'],
        'poll': victim['poll'], 'state': victim.get('state'),
        'polls_to_give_up': give_up,
        'seconds_to_give_up': None if give_up is None else
        round(spawns[lost]['end'] - at, 3),
        'final': 'missing' if view is None else view['status'],
        'polls_to_final': to_final,
        'seconds_to_final': None if final_at is None or at is None or
        not final else round(final_at - at, 3),
        'attempts': list(attempts),
    }
