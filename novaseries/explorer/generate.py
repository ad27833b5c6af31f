"""Cases of the explorer, as a Hypothesis strategy over the declared
table ``scenarios/explore_space.py`` (:func:`cases`).  Hypothesis shrinks
a failing case towards the first choice of each table entry and the
least of each bound: fewer steps, fewer nodes and attempts, a new build.

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


def _step(draw):
    polls = draw(_int(space.STEP_POLL))
    action = draw(st.sampled_from(space.STEP_ACTIONS))
    loop = draw(st.sampled_from(space.STEP_LOOP_CHOICES))
    return [polls, action] + ([loop] if loop else [])


def _case(draw):
    kind = draw(st.sampled_from(list(space.STARTS)))
    action = draw(st.sampled_from(space.STARTS[kind]))
    then = draw(st.lists(st.composite(_step)(), min_size=space.STEPS[0],
                         max_size=space.STEPS[1])) if action else []
    deploying_reads = draw(_int(space.DEPLOYING_READS))
    first = space.FIRST_POLL
    if action in space.CALLBACK_STARTS:
        first = (deploying_reads + 1, first[1])
    return {
        'kind': kind,
        'action': action,
        'after_polls': draw(_int(first)) if action else NO_STEP_POLLS,
        'then': then,
        'nodes': draw(_int(space.NODES)),
        'max_attempts': draw(_int(space.MAX_ATTEMPTS)),
        'delete_on_reschedule': draw(st.booleans()),
        'port': draw(st.booleans()),
        'deploying_reads': deploying_reads,
        'deleting_reads': draw(_int(space.DELETING_READS)),
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
