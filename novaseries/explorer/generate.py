"""Cases of the explorer, as Hypothesis strategies over the declared
table ``scenarios/explore_space.py`` (:func:`cases`).  Hypothesis shrinks
a failing case towards the first choice of each table entry and the
least of each bound: fewer steps, fewer nodes and attempts, a new build.
"""

from hypothesis import strategies as st

from novaseries.scenarios import explore_space as space

#: ``after_polls`` of a case without steps (Scenario's field; unused).
NO_STEP_POLLS = 2


def _int(bounds):
    return st.integers(*bounds)


@st.composite
def steps(draw):
    """A later step: ``[polls, action]`` or ``[polls, action, loop]``."""
    polls = draw(_int(space.STEP_POLL))
    action = draw(st.sampled_from(space.STEP_ACTIONS))
    loop = draw(st.sampled_from(space.STEP_LOOP_CHOICES))
    return [polls, action] + ([loop] if loop else [])


@st.composite
def cases(draw):
    """A case: a dict of ``explore_space.CASE_FIELDS`` that
    ``explore_space.check`` accepts."""
    kind = draw(st.sampled_from(list(space.STARTS)))
    action = draw(st.sampled_from(space.STARTS[kind]))
    then = draw(st.lists(steps(), min_size=space.STEPS[0],
                         max_size=space.STEPS[1])) if action else []
    return {
        'kind': kind,
        'action': action,
        'after_polls': (draw(_int(space.FIRST_POLL)) if action
                        else NO_STEP_POLLS),
        'then': then,
        'nodes': draw(_int(space.NODES)),
        'max_attempts': draw(_int(space.MAX_ATTEMPTS)),
        'delete_on_reschedule': draw(st.booleans()),
        'port': draw(st.booleans()),
        'deploying_reads': draw(_int(space.DEPLOYING_READS)),
        'deleting_reads': draw(_int(space.DELETING_READS)),
        'api_max_retries': draw(st.sampled_from(space.API_MAX_RETRIES)),
    }
