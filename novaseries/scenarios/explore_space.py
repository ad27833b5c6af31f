"""What the explorer draws its cases from (a declared table): the
starting points and the events each may begin with (:data:`STARTS`), the
events a later step may be (:data:`STEP_ACTIONS`), the loops a step may
count the polls of, and the bounds of every number.  A case is a
``scenario.Scenario`` of the player's fields (:data:`CASE_FIELDS`); the
harness's Hypothesis strategies (``novaseries.explorer.generate``) build
cases from this table and the player plays them like the main job's
scenarios.  :func:`check` refuses a case outside the table.

Standard library only: the player imports it in Nova's virtualenv.
"""

from novaseries.scenarios.scenario import (
    ACTIONS, DEPLOY_LOOP, KINDS, MAIN_THREAD_DELETE_ACTIONS, Scenario,
    STEP_LOOPS)

#: Starting point (a kind of ``scenario.KINDS``) -> the events (actions of
#: ``scenario.ACTIONS``) its first step may be; None: no step at all.
#: ``build``: a new build, the steps during its deploy (and what follows:
#: its clean-up, a reschedule's deploy); ``rebuild``: an ACTIVE server
#: rebuilt, the steps during the rebuild's deploy; ``build-delete`` and
#: ``undeploy-active-delete``: an ACTIVE server the user deletes (an
#: operator's undeploy first); ``outage-delete``: the Bare Metal API down
#: from the first step until the build has settled, then the user's delete.
#: Left out: the kinds of one bug's fixed steps (``reap``, ``recovery``,
#: the rebuild of an ERROR server or at the newest microversion,
#: ``cleanup-fail-delete``), and events only the first step can be
#: (``user-delete`` and the outages hold the deploy for the player).
STARTS = {
    'build': (None, 'undeploy', 'maintenance-delete', 'fail', 'abort',
              'reassociate', 'delete', 'undeploy-delete', 'lock-briefly',
              'user-delete', 'api-blip'),
    'rebuild': ('undeploy', 'maintenance-delete', 'fail', 'abort', 'delete',
                'undeploy-delete', 'lock-briefly'),
    'outage-delete': ('api-down', 'api-down-delete'),
    'build-delete': (None,),
    'undeploy-active-delete': (None,),
}
#: How often, relative to the others, a case starts at each point and a
#: step is each event (1 unless named; the strategy repeats an entry as
#: often as its weight, so Hypothesis still shrinks towards the first):
#: the new build has the most events and every wait (its deploy, its
#: clean-up's tear-down, a reschedule's deploy); the events that end a
#: deploy (the operator's tear-downs, a failure, an abort) and the user's
#: delete come twice as often as a lock, a blip or no event, so that an
#: undeploy in ``wait call-back`` whose tear-down outlasts the deploy
#: wait, or a delete during a failed build's clean-up, comes within some
#: 130 cases (doc/main-job.rst, the planted defects).
START_WEIGHTS = {'build': 6, 'rebuild': 2}
EVENT_WEIGHTS = {'undeploy': 2, 'maintenance-delete': 2, 'reassociate': 2,
                 'undeploy-delete': 2, 'delete': 2, 'fail': 2, 'abort': 2}
#: The first events that need the deploy in ``wait call-back`` (the API's
#: return releases the deploy the fake holds there): their poll comes
#: after the ``deploying_reads`` polls of ``deploying``.
CALLBACK_STARTS = frozenset(['api-blip'])
#: The events a step after the first may be (at its poll of the deploy,
#: or of the wait for the tear-down).
STEP_ACTIONS = ('undeploy', 'maintenance-delete', 'fail', 'abort',
                'reassociate', 'delete', 'undeploy-delete', 'lock-briefly')
#: The events a later step in the wait for a tear-down is drawn from
#: (:func:`check` takes any of STEP_ACTIONS, for ``--replay``): those
#: Ironic and the API take while the node is ``deleting`` (Ironic refuses
#: an undeploy, a failure, an abort or a reassociation's undeploy of a
#: node it is tearing down).
TEARDOWN_STEP_ACTIONS = ('delete', 'undeploy-delete', 'maintenance-delete',
                         'lock-briefly')
#: The loops a later step counts the polls of (None: the deploy's).
STEP_LOOP_CHOICES = (None,) + STEP_LOOPS
#: ``(least, most)`` of each number of a case.  The first step's poll is
#: one the first deploy always reaches (it takes ``deploying_reads`` +
#: ``scenario.CALLBACK_READS`` polls); a later step's may never come (then
#: it does not run: ``hooks_fired`` says what ran).
NODES = (1, 3)
MAX_ATTEMPTS = (1, 3)
FIRST_POLL = (1, 3)
STEP_POLL = (1, 6)
STEPS = (0, 3)
DEPLOYING_READS = (1, 2)
DELETING_READS = (0, 3)
#: ``(least, most)`` poll of a step in the wait for a tear-down (within
#: STEP_POLL): the wait lasts DELETING_READS polls and one more.
TEARDOWN_STEP_POLL = (1, DELETING_READS[1] + 1)
#: How often, relative to the others, a poll is drawn (1 unless named):
#: a first event in ``wait call-back`` (after the ``deploying_reads``
#: polls of ``deploying``: Ironic's tear-down is Ironic's there, not a
#: 409) twice as often as one in ``deploying``; a step at the first two
#: polls of a tear-down's wait (which every tear-down reaches) twice as
#: often as at a later one.
CALLBACK_POLL_WEIGHT = 2
TEARDOWN_POLL_WEIGHTS = {1: 2, 2: 2}
#: How often, relative to the others, each number of reads of
#: ``deleting`` is drawn (1 unless named): the most, three times as
#: often; with ``api_max_retries`` 0 or 1 it outlasts every wait of
#: Nova's for a tear-down Ironic started (Nova then leaves it to Ironic).
DELETING_READS_WEIGHTS = {DELETING_READS[1]: 3}
#: How often a delete at the reschedule (``delete_on_reschedule``) is
#: drawn, and how often not: it ends the story of every reschedule.
DELETE_ON_RESCHEDULE_WEIGHTS = {True: 1, False: 2}
#: ``[ironic] api_max_retries`` of a case (None: Nova's default).
API_MAX_RETRIES = (None, 0, 1, 2)
#: The Scenario fields a case sets (the rest are the expectations, which
#: the explorer does not write: ``universal.problems`` judges every case).
CASE_FIELDS = ('kind', 'action', 'after_polls', 'then', 'nodes',
               'max_attempts', 'delete_on_reschedule', 'port',
               'deploying_reads', 'deleting_reads', 'api_max_retries')

assert set(STARTS) <= set(KINDS)
assert set(START_WEIGHTS) <= set(STARTS)
assert set(EVENT_WEIGHTS) <= set(STEP_ACTIONS) | {
    a for starts in STARTS.values() for a in starts} - {None}
assert set(TEARDOWN_STEP_ACTIONS) <= set(STEP_ACTIONS)


def span(bounds):
    """The numbers from ``bounds[0]`` to ``bounds[1]``, both included."""
    return range(bounds[0], bounds[1] + 1)


assert set(TEARDOWN_POLL_WEIGHTS) <= set(span(TEARDOWN_STEP_POLL))
assert set(DELETING_READS_WEIGHTS) <= set(span(DELETING_READS))
assert set(DELETE_ON_RESCHEDULE_WEIGHTS) <= {False, True}
assert STEP_POLL[0] <= TEARDOWN_STEP_POLL[0] <= TEARDOWN_STEP_POLL[1] \
    <= min(STEP_POLL[1], DELETING_READS[1] + 1)
assert CALLBACK_STARTS <= set(STARTS['build'])
assert DEPLOYING_READS[1] < FIRST_POLL[1]
assert {a for starts in STARTS.values() for a in starts} - {None} \
    | set(STEP_ACTIONS) <= set(ACTIONS)
assert not MAIN_THREAD_DELETE_ACTIONS & set(STEP_ACTIONS)
assert DEPLOY_LOOP not in STEP_LOOP_CHOICES


#: The compute manager's methods of a server's build (the build thread's
#: entry, which build_and_run_instance starts, and its body), and their
#: file: a save made under one of them is the build's
#: (``saved_over_delete``).  The conductor's saves are not judged: when a
#: reschedule fails there it sets ERROR with no guard (Nova's
#: scheduler_utils.set_vm_state_and_notify), and the API's delete of an
#: instance without a host destroys it all the same.
BUILD_METHODS = frozenset(['_locked_do_build_and_run_instance',
                           '_do_build_and_run_instance'])
COMPUTE_MANAGER = 'nova/compute/manager.py'


def build_saver(frames):
    """Who saved, if the save is the build's: the innermost method of
    :data:`COMPUTE_MANAGER` in ``frames`` when one of
    :data:`BUILD_METHODS` is among them, else None.  ``frames``: a stack,
    outermost first, of frames with ``filename`` and ``name``
    (``traceback.extract_stack()``); a save from another thread (a
    looping call's, a hook's) has none of them."""
    names = [frame.name for frame in frames
             if frame.filename.endswith(COMPUTE_MANAGER)]
    return names[-1] if BUILD_METHODS.intersection(names) else None


def _within(value, bounds):
    return isinstance(value, int) and bounds[0] <= value <= bounds[1]


def check(case):
    """Why ``case`` (a dict of :data:`CASE_FIELDS`) is outside the table,
    or None."""
    unknown = sorted(set(case) - set(CASE_FIELDS))
    if unknown:
        return 'unknown field(s): %s' % ', '.join(unknown)
    lacking = [field for field in CASE_FIELDS if field not in case]
    if lacking:
        return 'no %s (a case gives every field)' % ', '.join(lacking)
    for field in ('port', 'delete_on_reschedule'):
        if not isinstance(case[field], bool):
            return '%s %r is not true or false' % (field, case[field])
    if not isinstance(case['then'], (list, tuple)) or not all(
            isinstance(step, (list, tuple)) and 2 <= len(step) <= 3
            for step in case['then']):
        return 'then %r is not a list of [polls, action(, loop)]' % (
            case['then'],)
    kind, action = case.get('kind'), case.get('action')
    if kind not in STARTS:
        return 'kind %r is not a starting point (%s)' % (kind, ', '.join(STARTS))
    if action not in STARTS[kind]:
        return 'a %s case does not start with %r' % (kind, action)
    then = case.get('then') or ()
    if then and action is None:
        return 'steps without a first step'
    if not _within(len(then), STEPS):
        return '%d steps (at most %d)' % (len(then), STEPS[1])
    for step in then:
        polls, act, *loop = step
        if act not in STEP_ACTIONS or not _within(polls, STEP_POLL) or \
                (loop and loop[0] not in STEP_LOOPS) or len(loop) > 1:
            return 'step %r outside the table' % (step,)
    for field, bounds in (('nodes', NODES), ('max_attempts', MAX_ATTEMPTS),
                          ('deploying_reads', DEPLOYING_READS),
                          ('deleting_reads', DELETING_READS)):
        if not _within(case.get(field), bounds):
            return '%s %r outside %s' % (field, case.get(field), bounds)
    if action is not None and not _within(case.get('after_polls'), FIRST_POLL):
        return 'after_polls %r outside %s' % (case.get('after_polls'), FIRST_POLL)
    if action in CALLBACK_STARTS and \
            case['after_polls'] <= case['deploying_reads']:
        return '%s at poll %d, before wait call-back (deploying_reads %d)' % (
            action, case['after_polls'], case['deploying_reads'])
    if case.get('api_max_retries') not in API_MAX_RETRIES:
        return 'api_max_retries %r' % (case.get('api_max_retries'),)
    return None


#: What every case sets beyond the table: Ironic's conductor finishes its
#: pending work before the end is recorded (``Scenario.finish_ironic_work``:
#: the fake moves on by reads, and a tear-down Nova leaves to Ironic is
#: polled by nobody; a real Ironic ends it by itself).
CASE_SETTINGS = {'finish_ironic_work': True}
#: The observation's key of what a second delete left, for a server the
#: user deleted that ended in ERROR (the player deletes it again once
#: everything has settled): an observation of its own.
SECOND_DELETE = 'after_second_delete'
#: How the player (``play --serve``) says it has written a case's
#: observation: a line of its output, this then the file's path.
SERVE_DONE = 'explore-done '


def scenario_of(name, case):
    """The ``scenario.Scenario`` that plays ``case`` (a dict of
    :data:`CASE_FIELDS`), called ``name``.

    :raises ValueError: a case outside the table (:func:`check`), or one
        Scenario refuses.
    """
    problem = check(case)
    if problem:
        raise ValueError('case %s: %s' % (name, problem))
    return Scenario(name=name, title='a case of the explorer',
                    source='novaseries explore', **dict(case, **CASE_SETTINGS))
