"""The main job's bounds on the user's wait, as checks of one observation
(``checks``): the driver's polls after the action (against the fake
Ironic), the wall time from the action to the end (against a real one) and
the Ironic calls per poll.

Standard library only: the scenario player imports it in Nova's venv.
"""

from novaseries.scenarios.checks import missing


def one_call_per_poll(obs):
    """The driver sent one Ironic call per poll of the first deploy
    (``calls_per_poll``)."""
    if problem := missing(obs, 'calls_per_poll'):
        return problem
    if obs['calls_per_poll'] != 1.0:
        return '%s Ironic calls per poll' % obs['calls_per_poll']


one_call_per_poll.text = '1 Ironic call per poll'

#: The fixed tree's driver polls after the action, at most, unless a
#: scenario says otherwise (``max_polls``): enough for the longest fake
#: run (``deploy-failed-reschedule``: a failed deploy, its tear-down, the
#: reschedule's whole deploy), with a margin.
DEFAULT_MAX_POLLS = 16
#: Polls of a ``user-delete`` scenario: its first deploy is held in ``wait
#: call-back`` (a poll every ``held_poll_wait`` at most) until the player's main thread
#: has deleted the server, whenever it gets to it, so their number varies
#: with the machine's load: a wider bound.
HELD_MAX_POLLS = 24


def polls_at_most(limit):
    """The driver polled at most ``limit`` times from the action to the
    end (``polls_after_action``), polls of a held deploy aside
    (``held_polls_after_action``: the fake Ironic makes each wait for a
    change, so how many there are depends on how soon Nova's threads get
    to the test's action, not on the series): the fix must not make the
    user wait longer than it needs."""
    def check(obs):
        if problem := missing(obs, 'polls_after_action',
                              'held_polls_after_action'):
            return problem
        held = obs['held_polls_after_action']
        polls = obs['polls_after_action'] - held
        if polls > limit:
            aside = ' (%d of a held deploy aside)' % held if held else ''
            return '%s driver polls after the action%s, at most %d' % (
                polls, aside, limit)
    check.text = 'at most %d driver polls after the action' % limit
    check.fake_only = ("the bound on the driver's polls after the action: "
                       "a real Ironic's polls count its seconds, not the "
                       "fake's reads")
    return check


#: Seconds a real Ironic may take per driver poll that the fake run's
#: bound allows (``max_polls``): a fake poll stands for one real state of
#: the node or less (``deleting`` and ``deploying`` last several of the
#: harness's ``[fake]`` delays, ``real_backend.FAKE_DELAY``), polled
#: ``real_backend.API_RETRY_INTERVAL`` apart: 4 s per poll, on average,
#: leaves room for the longest of them.
REAL_SECONDS_PER_POLL = 4
#: ... and at least this many seconds (an operator's undeploy that waits
#: for Ironic's whole tear-down before it goes on, ``reassociate``, takes
#: a good part of it itself).
REAL_MIN_SECONDS = 30


def real_seconds(max_polls):
    """The default bound of :func:`seconds_at_most` for a scenario whose
    fake run may take ``max_polls`` driver polls after the action."""
    return max(REAL_MIN_SECONDS, REAL_SECONDS_PER_POLL * max_polls)


def seconds_at_most(limit):
    """Against a real Ironic, the wall time from the action to the end
    (``wall_seconds_after_action``) is at most ``limit`` seconds: the
    user's wait in real time, where the fake run bounds the driver's
    polls (:func:`polls_at_most`).  Not checked against the fake Ironic
    (``real_only``): at ``api_retry_interval = 0`` its wall time is the
    CPU and the threads' scheduling of the test process (several times
    longer in threading mode, and on a loaded machine), not Nova's
    waits; its polls are what it bounds, and a fake scenario that hangs
    does not settle, which is an error."""
    def check(obs):
        if problem := missing(obs, 'wall_seconds_after_action'):
            return problem
        wall = obs['wall_seconds_after_action']
        if wall > limit:
            return '%.1f s from the action to the end, at most %d s' % (
                wall, limit)
    check.text = ('at most %d s from the action to the end (real Ironic)'
                  % limit)
    check.real_only = ('the wall time from the action to the end: at '
                       "api_retry_interval 0 the fake's is the test "
                       "process's CPU and scheduling; its polls are "
                       'bounded instead')
    return check
