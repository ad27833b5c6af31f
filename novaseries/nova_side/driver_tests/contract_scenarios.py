"""Operator scenarios run the same way against a real Ironic and the fake.

A scenario is a list of steps.  Each step either does something (a Nova-like
deploy through the SDK proxy, or an operator action), expects a refusal
(the openstacksdk exception class and HTTP status code), or polls the node
as Nova's driver does until a condition holds.  Running a scenario against a
:class:`Backend` returns a :class:`Run`: the collapsed sequence of
``(provision_state, target_provision_state, associated)`` the poller
observed, each with the step it was first seen in, and the refusals.

The poller makes the calls ``IronicDriver._wait_for_active`` makes:
``nodes(instance_id=<inst>, fields=_NODE_FIELDS)``, and when that is empty
``get_node(<node>, fields=_NODE_FIELDS)`` (the fixed driver's
``_describe_lost_node``).  ``associated`` is True when the first call found
the node; a node that is gone (404) is observed as ``GONE``.

The expected sequences below were recorded against Ironic 39.0.0 with
``[fake] power_delay = boot_delay = 1`` (so ``deploying`` lasts about 3 s and
``deleting`` about 4 s) through openstacksdk 4.18.0 (baremetal microversion
1.109).  States the real Ironic passes through in a few milliseconds (so a
poller may or may not see them) are marked optional; everything else must be
seen, in this order, by both backends.
"""

import collections
import time
import uuid

from openstack import exceptions as sdk_exc

#: The fields Nova's ironic driver asks for (nova.virt.ironic.driver).
NOVA_FIELDS = ('uuid', 'power_state', 'target_power_state', 'provision_state',
               'target_provision_state', 'last_error', 'maintenance',
               'properties', 'instance_uuid', 'traits', 'resource_class')

#: Observation of a node that no longer exists (get_node -> 404).
GONE = ('<404>', None, False)

Obs = collections.namedtuple('Obs', 'state target associated')
Seen = collections.namedtuple('Seen', 'obs step')
Refusal = collections.namedtuple('Refusal', 'step exc status seconds',
                                 defaults=(None,))


class Exp(collections.namedtuple('Exp', 'obs optional')):
    """An expected observation; ``optional`` ones may be missed."""


def must(state, target, associated):
    return Exp(Obs(state, target, associated), False)


def may(state, target, associated):
    return Exp(Obs(state, target, associated), True)


class ScenarioError(AssertionError):
    """A step did not behave as the scenario says (names the step)."""


# --------------------------------------------------------------------------
# steps

class Step:
    name = None

    def __init__(self, name):
        self.name = name


class Deploy(Step):
    """Nova's spawn: associate, add instance_info, validate, deploy.

    ``bad_image``: the real backend deploys an image URL that answers 404
    (Ironic fails in ``prepare``); the fake fails the deploy after the first
    poll (``fail_deploy``).
    """

    def __init__(self, name='deploy', bad_image=False):
        super().__init__(name)
        self.bad_image = bad_image


class Act(Step):
    """An operator action that must succeed."""

    def __init__(self, name, action):
        super().__init__(name)
        self.action = action


class Refuse(Step):
    """An action that must be refused with ``exc``/``status``.

    Operator actions go through a connection that does not retry; the
    ``driver_*`` actions through the driver's (Nova's) connection.
    ``real_only``: a fact about the real Ironic that the fake does not
    model because Nova never sends the request (skipped on the fake).
    """

    def __init__(self, name, action, exc, status, real_only=False):
        super().__init__(name)
        self.action = action
        self.exc = exc
        self.status = status
        self.real_only = real_only


class PollUntil(Step):
    """Poll like Nova until ``pred(obs)`` holds (bounded)."""

    def __init__(self, name, pred):
        super().__init__(name)
        self.pred = pred


def state_is(*states):
    return lambda obs: obs.state in states


def settled_available(obs):
    return obs.state == 'available' and not obs.associated


Scenario = collections.namedtuple('Scenario', 'name steps expected refusals')


def _refusals(steps):
    return [Refusal(s.name, s.exc, s.status) for s in steps
            if isinstance(s, Refuse)]


def scenario(name, steps, expected):
    return Scenario(name, steps, expected, _refusals(steps))


_TEARDOWN = [
    must('deleting', 'available', True),
    # the end of ``deleting`` clears instance_uuid a moment before the
    # state changes; then ``cleaning`` lasts 15-60 ms (automated clean off)
    may('deleting', 'available', False),
    may('cleaning', 'available', False),
    must('available', None, False),
]

SCENARIOS = [
    scenario('undeploy_in_wait_callback', [
        Deploy(),
        Refuse('undeploy while deploying', 'undeploy',
               'ConflictException', 409),
        PollUntil('wait for wait call-back', state_is('wait call-back')),
        Act('undeploy in wait call-back', 'undeploy'),
        Refuse('undeploy again while deleting', 'undeploy',
               'ConflictException', 409),
        # what the driver's _remove_instance_info_from_node() sends if
        # destroy()/_cleanup_deploy() runs it during ``deleting`` (through
        # Nova's connection, which does not retry a 409)
        Refuse('driver clears instance_info while deleting',
               'driver_clear_instance', 'ConflictException', 409),
        PollUntil('wait for available', settled_available),
        Refuse('undeploy while available', 'undeploy',
               'BadRequestException', 400),
    ], [
        must('deploying', 'active', True),
        must('wait call-back', 'active', True),
    ] + _TEARDOWN),

    scenario('maintenance_and_delete', [
        Deploy(),
        PollUntil('wait for wait call-back', state_is('wait call-back')),
        Refuse('delete while associated', 'delete', 'ConflictException', 409),
        Act('maintenance on', 'maintenance'),
        PollUntil('poll in maintenance', state_is('wait call-back')),
        Act('delete in maintenance', 'delete'),
        PollUntil('wait for 404', state_is(GONE[0])),
        Refuse('undeploy deleted node', 'undeploy', 'NotFoundException',
               404),
    ], [
        must('deploying', 'active', True),
        must('wait call-back', 'active', True),
        must(*GONE),
    ]),

    scenario('abort_in_wait_callback', [
        Deploy(),
        PollUntil('wait for wait call-back', state_is('wait call-back')),
        # openstacksdk caps the microversion at 1.109; aborting a node in
        # wait call-back needs 1.110 (Ironic answers 406 Not Acceptable).
        Refuse('abort at the SDK microversion', 'abort_sdk', 'HttpException',
               406, real_only=True),
        Act('abort at 1.110', 'abort'),
        PollUntil('wait for deploy failed', state_is('deploy failed')),
        Refuse('delete while associated', 'delete', 'ConflictException', 409),
        Act('undeploy from deploy failed', 'undeploy'),
        PollUntil('wait for available', settled_available),
    ], [
        must('deploying', 'active', True),
        must('wait call-back', 'active', True),
        must('deploy failed', 'active', True),
    ] + _TEARDOWN),

    scenario('deploy_failure', [
        Deploy(bad_image=True),
        PollUntil('wait for deploy failed', state_is('deploy failed')),
        Refuse('delete while associated', 'delete',
               'ConflictException', 409),
        Act('undeploy from deploy failed', 'undeploy'),
        PollUntil('wait for available', settled_available),
    ], [
        must('deploying', 'active', True),
        must('deploy failed', 'active', True),
    ] + _TEARDOWN),
]


# --------------------------------------------------------------------------
# backends

class Backend:
    """What a scenario needs from an Ironic (real or fake).

    ``proxy``: an openstacksdk baremetal proxy (or the fixture's fake one).
    """

    name = None
    proxy = None
    #: a real Ironic (False: the fake, which skips ``real_only`` steps)
    real = False
    #: the steps' operator actions it plays, each by its method of that
    #: name, ``action(node)`` (``contract_backends.check_backend``)
    ACTIONS = frozenset()
    #: max polls for one PollUntil step
    max_polls = 60

    def new_node(self):
        raise NotImplementedError

    def image(self, bad):
        """instance_info for the image: (image_source, extra fields)."""
        raise NotImplementedError

    def after_deploy_request(self, node, bad_image):
        """Hook after the ``active`` request (fake: schedule the failure)."""

    def poll(self, node, instance):
        """One Nova-like poll of the deploy (:func:`poll`); an Obs."""
        return poll(self.proxy, node, instance)

    def operator(self, action, node):
        """Do the operator action ``action`` (:data:`ACTIONS`) on ``node``.

        :raises ValueError: an action this backend does not have.
        """
        if action not in self.ACTIONS:
            raise ValueError(action)
        getattr(self, action)(node)

    def pause(self):
        """Between two polls (real: a short sleep; fake: nothing)."""

    def snapshot(self, node):
        """snapshot_of() the full node, without counting as a driver read."""
        raise NotImplementedError

    def deadline(self):
        return None


def poll(proxy, node, instance):
    """One Nova-like poll; returns an Obs."""
    found = list(proxy.nodes(instance_id=instance, fields=NOVA_FIELDS))
    if found:
        n = found[0]
        return Obs(n.provision_state, n.target_provision_state, True)
    try:
        n = proxy.get_node(node, fields=NOVA_FIELDS)
    except sdk_exc.NotFoundException:
        return Obs(*GONE)
    return Obs(n.provision_state, n.target_provision_state,
               n.instance_id == instance)


Run = collections.namedtuple('Run',
                             'backend node instance seen refusals snapshots')


def deploy(backend, node, instance, bad_image=False):
    """Nova's prepare_for_spawn + spawn requests, up to the ``active`` verb."""
    proxy = backend.proxy
    proxy.update_node(node, instance_id=instance)
    image_source, extra = backend.image(bad_image)
    patch = [{'path': '/instance_info/image_source', 'op': 'add',
              'value': image_source}]
    for key, value in list(extra.items()) + [
            ('root_gb', '10'), ('swap_mb', '0'), ('display_name', 'contract'),
            ('vcpus', '1'), ('nova_host_id', 'compute'),
            ('memory_mb', '1024'), ('local_gb', '10')]:
        patch.append({'path': '/instance_info/%s' % key, 'op': 'add',
                      'value': value})
    proxy.patch_node(node, patch)
    checks = proxy.validate_node(node, required=None)
    for iface in ('deploy', 'power', 'storage'):
        if not checks[iface].result:
            raise ScenarioError('%s: validate_node: %s interface invalid: %s'
                                % (backend.name, iface, checks[iface].reason))
    proxy.set_node_provision_state(node, 'active')
    backend.after_deploy_request(node, bad_image)


def run(backend, scn):
    """Run scenario ``scn`` on ``backend``; returns a Run.

    :raises ScenarioError: a step could not be completed (an Act refused, a
        Refuse accepted, a PollUntil never satisfied), naming the step.
    """
    node = backend.new_node()
    instance = str(uuid.uuid4())
    seen = []
    refusals = []
    snapshots = []

    def observe(step):
        obs = backend.poll(node, instance)
        if not seen or seen[-1].obs != obs:
            seen.append(Seen(obs, step.name))
        return obs

    for step in scn.steps:
        where = '%s: scenario %s, step %r' % (backend.name, scn.name,
                                              step.name)
        if isinstance(step, Deploy):
            deploy(backend, node, instance, step.bad_image)
            # the first poll right after the request (Nova's looping call
            # starts with one)
            observe(step)
        elif isinstance(step, Act):
            try:
                backend.operator(step.action, node)
            except sdk_exc.SDKException as e:
                raise ScenarioError('%s: refused: %s %s: %s' % (
                    where, type(e).__name__, getattr(e, 'status_code', None),
                    e))
        elif isinstance(step, Refuse) and step.real_only and not backend.real:
            continue
        elif isinstance(step, Refuse):
            t0 = time.monotonic()
            try:
                backend.operator(step.action, node)
            except sdk_exc.SDKException as e:
                refusals.append(Refusal(step.name, type(e).__name__,
                                        getattr(e, 'status_code', None),
                                        round(time.monotonic() - t0, 3)))
            else:
                refusals.append(Refusal(step.name, None, None,
                                        round(time.monotonic() - t0, 3)))
        elif isinstance(step, PollUntil):
            polls = 0
            deadline = backend.deadline()
            while True:
                obs = observe(step)
                polls += 1
                if step.pred(obs):
                    snapshots.append((step.name, backend.snapshot(node)))
                    break
                if polls >= backend.max_polls or (
                        deadline is not None and time.monotonic() > deadline):
                    raise ScenarioError(
                        '%s: condition not reached after %d polls; last '
                        'observed %s; sequence %s' % (
                            where, polls, tuple(obs),
                            [tuple(s.obs) for s in seen]))
                backend.pause()
        else:
            raise TypeError(step)
    return Run(backend.name, node, instance, seen, refusals, snapshots)


#: Node details compared (not failing) at the end of each PollUntil step:
#: what else the driver reads from the node.
SNAPSHOT_FIELDS = ('power_state', 'target_power_state', 'is_maintenance',
                   'maintenance_reason', 'last_error', 'instance_id',
                   'instance_info_keys', 'reservation')


def snapshot_of(n):
    """The SNAPSHOT_FIELDS of an openstacksdk Node (None: gone)."""
    if n is None:
        return None
    out = {f: getattr(n, f, None) for f in SNAPSHOT_FIELDS
           if f != 'instance_info_keys'}
    out['last_error'] = bool(out['last_error'])
    out['instance_id'] = bool(out['instance_id'])
    out['instance_info_keys'] = sorted(n.instance_info or {})
    return out


def detail_differences(real, fake):
    """Differences (strings) in the node details at the end of each step."""
    out = []
    for (step, r), (_s, f) in zip(real.snapshots, fake.snapshots):
        if r is None or f is None:
            if (r is None) != (f is None):
                out.append('after %r: real %s, fake %s' % (step, r, f))
            continue
        for key in SNAPSHOT_FIELDS:
            if r[key] != f[key]:
                out.append('after %r: %s: real %r, fake %r' % (
                    step, key, r[key], f[key]))
    return out


# --------------------------------------------------------------------------
# comparison

def match_expected(scn, result):
    """Problems (strings) where ``result.seen`` does not fit ``scn.expected``.

    Every observation must be the next expected one (optional ones may be
    skipped); every non-optional one must be observed.
    """
    problems = []
    exp = scn.expected
    i = 0
    for seen in result.seen:
        j = i
        while j < len(exp) and exp[j].optional and exp[j].obs != seen.obs:
            j += 1
        if j == len(exp) or exp[j].obs != seen.obs:
            problems.append(
                '%s: step %r: observed %s, expected %s' % (
                    result.backend, seen.step, tuple(seen.obs),
                    ' or '.join(str(tuple(e.obs)) for e in exp[i:j + 1])
                    or 'nothing more'))
            return problems
        i = j + 1
    missing = [tuple(e.obs) for e in exp[i:] if not e.optional]
    if missing:
        last = result.seen[-1].step if result.seen else None
        problems.append('%s: after step %r: never observed %s' % (
            result.backend, last, missing))
    got_by_step = {r.step: r for r in result.refusals}
    real_only = {s.name for s in scn.steps
                 if isinstance(s, Refuse) and s.real_only}
    for want in scn.refusals:
        got = got_by_step.get(want.step)
        if got is None and want.step in real_only:
            continue
        if got is None:
            problems.append('%s: step %r was not run' % (result.backend,
                                                         want.step))
        elif (want.exc, want.status) != (got.exc, got.status):
            problems.append('%s: step %r: expected %s %s, got %s' % (
                result.backend, want.step, want.exc, want.status,
                'no error' if got.exc is None else
                '%s %s' % (got.exc, got.status)))
    return problems


def mandatory(scn, result):
    """The observations of ``result`` that are not optional in ``scn``."""
    optional = {e.obs for e in scn.expected if e.optional}
    return [s for s in result.seen if s.obs not in optional]


def compare(scn, real, fake):
    """Problems (strings) where the fake differs from the real Ironic."""
    problems = []
    r_seq, f_seq = mandatory(scn, real), mandatory(scn, fake)
    for k in range(max(len(r_seq), len(f_seq))):
        r = r_seq[k] if k < len(r_seq) else None
        f = f_seq[k] if k < len(f_seq) else None
        if r is None or f is None or r.obs != f.obs:
            problems.append(
                'step %r: real Ironic observed %s where the fake observed %s'
                ' (step %r)' % (r.step if r else None,
                                tuple(r.obs) if r else 'nothing',
                                tuple(f.obs) if f else 'nothing',
                                f.step if f else None))
            break
    fake_by_step = {f.step: f for f in fake.refusals}
    for r in real.refusals:
        f = fake_by_step.get(r.step)
        if f is not None and (r.exc, r.status) != (f.exc, f.status):
            problems.append('step %r: real Ironic refused with %s %s, the '
                            'fake with %s %s' % (r.step, r.exc, r.status,
                                                 f.exc, f.status))
    return problems


def describe(result):
    """Human-readable dump of a Run."""
    lines = ['%s (node %s, instance %s):' % (result.backend, result.node,
                                             result.instance)]
    for s in result.seen:
        lines.append('  %-40s %s' % (s.step, tuple(s.obs)))
    for r in result.refusals:
        lines.append('  refusal %-32s %s %s (%.3f s)' % (
            r.step, r.exc, r.status, r.seconds or 0))
    return '\n'.join(lines)
