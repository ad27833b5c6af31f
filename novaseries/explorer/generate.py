"""Cases of the explorer, as a Hypothesis strategy over the declared
table ``scenarios/explore_space.py`` (:func:`cases`).  Hypothesis shrinks
a failing case towards the first choice of each table entry and the
least of each bound: fewer steps, fewer nodes and attempts, a new build.
Entries are drawn as often as the table's weights say
(``START_WEIGHTS``, ``EVENT_WEIGHTS``, ``CALLBACK_POLL_WEIGHT``,
``TEARDOWN_POLL_WEIGHTS``, ``DELETING_READS_WEIGHTS``,
``DELETE_ON_RESCHEDULE_WEIGHTS``).

Hypothesis is the ``explore`` extra of pyproject.toml: without it this
module imports, and :func:`need_hypothesis` says what to install.
"""

from novaseries.scenarios import explore_space as space
from novaseries.util import HarnessError

try:
    from hypothesis import strategies as st
except ImportError:  # the explore extra
    st = None

#: ``after_polls`` of a case without steps (Scenario's field; unused).
NO_STEP_POLLS = 2


def need_hypothesis():
    """:raises HarnessError: Hypothesis is not installed (the message says
    how to install it)."""
    if st is None:
        raise HarnessError("the explorer needs Hypothesis, the explore extra: "
                           "pip install -e '.[explore]'")


def _int(bounds):
    return st.integers(*bounds)


def repeated(entries, weights):
    """``entries`` in their order, each as many times as its weight in
    ``weights`` (1 if absent): what a draw samples from."""
    return [entry for entry in entries for _ in range(weights.get(entry, 1))]


def _weighted(entries, weights):
    return st.sampled_from(repeated(entries, weights))


def first_poll_weights(action, deploying_reads):
    """``{poll: weight}`` of the first event's polls (FIRST_POLL): a poll
    in ``wait call-back`` (after ``deploying_reads``) weighs
    CALLBACK_POLL_WEIGHT, one in ``deploying`` 1, or 0 for an action of
    CALLBACK_STARTS."""
    return {poll: (space.CALLBACK_POLL_WEIGHT if poll > deploying_reads
                   else 0 if action in space.CALLBACK_STARTS else 1)
            for poll in space.span(space.FIRST_POLL)}


def _step(draw):
    loop = draw(st.sampled_from(space.STEP_LOOP_CHOICES))
    action = draw(_weighted(
        space.TEARDOWN_STEP_ACTIONS if loop else space.STEP_ACTIONS,
        space.EVENT_WEIGHTS))
    if loop:
        polls = draw(_weighted(space.span(space.TEARDOWN_STEP_POLL),
                               space.TEARDOWN_POLL_WEIGHTS))
    else:
        polls = draw(_int(space.STEP_POLL))
    return [polls, action] + ([loop] if loop else [])


def _case(draw):
    kind = draw(_weighted(list(space.STARTS), space.START_WEIGHTS))
    action = draw(_weighted(space.STARTS[kind], space.EVENT_WEIGHTS))
    # (as many steps as a drawn number, not st.lists, whose draws are
    # mostly empty)
    then = [draw(st.composite(_step)())
            for _ in range(draw(_int(space.STEPS)))] if action else []
    deploying_reads = draw(_int(space.DEPLOYING_READS))
    first = first_poll_weights(action, deploying_reads)
    return {
        'kind': kind,
        'action': action,
        'after_polls': draw(_weighted(space.span(space.FIRST_POLL), first))
        if action else NO_STEP_POLLS,
        'then': then,
        'nodes': draw(_int(space.NODES)),
        'max_attempts': draw(_int(space.MAX_ATTEMPTS)),
        'delete_on_reschedule': draw(_weighted(
            (False, True), space.DELETE_ON_RESCHEDULE_WEIGHTS)),
        'port': draw(st.booleans()),
        'deploying_reads': deploying_reads,
        'deleting_reads': draw(_weighted(space.span(space.DELETING_READS),
                                         space.DELETING_READS_WEIGHTS)),
        'api_max_retries': draw(st.sampled_from(space.API_MAX_RETRIES)),
    }


def cases():
    """The strategy of the explorer's cases: dicts of
    ``explore_space.CASE_FIELDS`` that ``explore_space.check`` accepts,
    each step ``[polls, action]`` or ``[polls, action, loop]``.

    :raises HarnessError: Hypothesis is not installed.
    """
    need_hypothesis()
    return st.composite(_case)()
