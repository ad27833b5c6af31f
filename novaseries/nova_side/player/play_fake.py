"""Playing a scenario against the fake Ironic (the series'
``nova.tests.fixtures.IronicFixture``, timed by reads:
``counting_ironic``): :class:`FakeScenarioTest`, the backend-specific
part of ``scenario_case.ScenarioTest``.
"""

# The test package applies Nova's monkey patching; it must come first.
import nova.tests.functional  # noqa: F401  isort:skip

from novaseries.nova_side.player import counting_ironic  # noqa: E402
from novaseries.nova_side.player.scenario_case import ScenarioTest  # noqa: E402
from novaseries.scenarios.checks import API_UP_AT_REFUSAL, API_UP_SETTLED  # noqa: E402

#: How long a scenario against the fake Ironic may take to settle, and a
#: step to come, in seconds (wall clock): the fake's tear-downs and
#: reschedules take reads, not time (a real Ironic's:
#: ``play_real.REAL_SETTLE_TIMEOUT``).
FAKE_SETTLE_TIMEOUT = 30.0


class FakeScenarioTest(ScenarioTest):
    """ScenarioTest against the fake Ironic."""

    SETTLE_TIMEOUT = FAKE_SETTLE_TIMEOUT

    def setUp(self):
        super().setUp()
        self._count_held_polls()

    def _start_ironic(self):
        # the scenario table is timed by reads (counting_ironic)
        counting_ironic.install(self)
        super()._start_ironic()

    def _count_held_polls(self):
        """Record, for each poll of a held deploy (``wait call-back``
        that no read ends) that sees the state its previous poll saw (the
        fake Ironic makes such a poll wait up to ``held_poll_wait``
        seconds for a change: ``CountingIronicFixture._held_as_polled``),
        the length of the call log when it started. How many of those a
        scenario sees depends on how soon Nova's threads get to the
        test's action, not on the series: the bound on the polls after
        the action leaves them out (``bounds.polls_at_most``)."""
        self.held_polls = []
        fake = self.ironic
        held_as_polled = fake._held_as_polled

        def spy(node_id):
            result = held_as_polled(node_id)
            if result:
                self.held_polls.append(len(fake.call_log))
            return result

        fake._held_as_polled = spy

    def _api_outage(self, node_id, answer, back, user_delete=False):
        """The Bare Metal API becomes unreachable for nova-compute
        (``IronicFixture.api_down(answer)``; the node stays held in ``wait
        call-back``).  With ``back``, it comes back right after the
        driver's first call of ``nodes`` about the node that it refused,
        and the deploy's callback comes (``release``): the event, not a
        count of reads.  Else it stays down until :meth:`_api_up`; with
        ``user_delete`` (action ``api-down-delete``), right after that
        first refused call the user deletes the server
        (:meth:`_delete_at_refusal`)."""
        fired = self._acted.setdefault('fired', [])
        self.ironic.api_down(answer)
        if back:
            def api_back(node):
                fired.append(API_UP_AT_REFUSAL)
                self.ironic.api_up()
                self.ironic.release(node)

            self.ironic.on_call('nodes', api_back, node=node_id)
        elif user_delete:
            self.ironic.on_call('nodes', lambda node: self._delete_at_refusal(),
                                node=node_id)

    def _api_up(self):
        """End the outage of ``api-down`` (kind ``outage-delete``)."""
        self._acted.setdefault('fired', []).append(API_UP_SETTLED)
        self.ironic.api_up()
