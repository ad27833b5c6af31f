"""What a scenario of the main job is: :class:`Scenario` (one named case,
validated as it is built) and the vocabulary its fields take: the kinds
(:data:`KINDS`), the actions (:data:`ACTIONS`) and the steps' loops
(:data:`STEP_LOOPS`), with the defaults of the fake Ironic's timing.

Standard library only: the scenario player imports it inside Nova's
virtualenv, and the scenario table (``scenario_table.py``) builds its
rows with it.
"""

import dataclasses
import types
import typing

from novaseries.scenarios.bounds import (
    DEFAULT_MAX_POLLS, polls_at_most, real_seconds, seconds_at_most)
from novaseries.scenarios.checks import (
    fired_action, no_foreign_uuid, USER_DELETE_AT_REFUSAL)
from novaseries.scenarios.invariant import end_state, END_STATE

#: The main job's two trees, by label: nova as released with the series'
#: reproducers, and with the whole series.  Each label is also the
#: Scenario field holding that tree's checks.
REPRODUCER = 'reproducer'
FIXED = 'fixed'
TREES = (REPRODUCER, FIXED)
#: Keys of the scenario player's output (a JSON per tree, which the main
#: job's JSON holds under the tree's label): the scenarios' observations
#: and the benchmark's records.
SCENARIOS_KEY = 'scenarios'
BENCH_KEY = 'bench'

#: How each progress line the player prints begins (``<prefix>i/n] name
#: status``): the harness echoes those lines of its output.
PROGRESS_PREFIX = '  ['

#: What a scenario's ``kind`` plays: kind -> what (the player's method
#: for each: ``play_kinds.KIND_PLAYERS``; an unknown kind is refused).
KINDS = {
    'build': 'boot, and act during the deploy',
    'rebuild': 'boot, then act during the rebuild of the ACTIVE server',
    'rebuild-newest': 'rebuild the ACTIVE server with another image at the '
                      'newest compute API microversion (bug KKKKKKK)',
    'rebuild-error': 'rebuild a server an admin reset to ERROR',
    'reap': "LP 2169200: the ACTIVE server is deleted while its "
            "nova-compute is down, nova-compute restarts, then the periodic "
            "_cleanup_running_deleted_instances runs once with "
            "running_deleted_instance_action = reap",
    'reap-log': 'the same with running_deleted_instance_action = log',
    'build-delete': 'a normal build, then the user deletes the ACTIVE server',
    'undeploy-active-delete': 'a normal build, then an operator undeploys '
                              'the node and the user deletes the server '
                              'while Ironic holds the node in deleting',
    'outage-delete': 'bug BBBBBBB: the action takes the Bare Metal API '
                     'down; once the build has settled it comes back, the '
                     'player records the server (at_api_back) and the user '
                     'deletes it',
    'cleanup-fail-delete': "LP 2169779: the action fails the deploy, "
                           "Ironic's API refuses the clean-up's tear-down "
                           "request once with 503, then the user deletes "
                           "the server in ERROR",
    'recovery': 'a build (as build), then the operator recovery steps',
}
#: The kinds whose action comes during the rebuild of a server booted
#: ACTIVE, not during its first deploy: against a real Ironic the boot
#: deploys to the end, then the node waits in ``wait call-back`` for the
#: rebuild's step (``direct`` deploy interface).
ACT_IN_REBUILD_KINDS = frozenset(['rebuild'])
assert ACT_IN_REBUILD_KINDS <= set(KINDS)

#: What an action (a scenario's ``action``, or a step of ``then``) does,
#: right after its poll, to the node being deployed: action -> what (the
#: player's method for each: ``scenario_case.ACTION_PLAYERS``).
ACTIONS = {
    'undeploy': 'the operator undeploys the node',
    'maintenance-delete': 'the operator sets maintenance and deletes the '
                          'node',
    'fail': 'the deploy fails (deploy failed)',
    'abort': 'the operator aborts the deploy',
    'reassociate': "undeploy; once Ironic's tear-down is over another "
                   "deploy claims the node for another instance",
    'user-delete': "the player's main thread deletes the server as soon as "
                   "it can (the deploy waits in wait call-back meanwhile)",
    'delete': "the user's delete lands right there, before the driver's "
              "next read",
    'undeploy-delete': 'undeploy, then that delete',
    'api-blip': 'the Bare Metal API answers nova-compute 503 from then on '
                "and comes back right after the driver's first read it "
                "refused; then the deploy's callback comes",
    'api-down': "the API refuses nova-compute's connections from then on, "
                'until the build has settled (kind outage-delete)',
    'api-down-delete': 'the API answers nova-compute 503 from then on, '
                       "until the build has settled, and right after the "
                       "driver's first read it refused the player's main "
                       'thread deletes the server (kind outage-delete)',
    'lock-briefly': "Ironic's conductor holds the node's lock for a moment "
                    '(a heartbeat, the power state sync): the next change '
                    'requested of the node is refused with 409 (the fake '
                    "Ironic only: the explorer's)",
}

#: The actions that take the Bare Metal API down (against a real Ironic,
#: Nova's connection then goes through ``api_proxy.ApiProxy``).
OUTAGE_ACTIONS = frozenset(['api-blip', 'api-down', 'api-down-delete'])
#: The actions whose deploy the fake holds in ``wait call-back`` (no read
#: ends it): the player's main thread acts (``user-delete``), or the API
#: goes down (``api-blip``: its callback comes once the API is back;
#: ``api-down`` and ``api-down-delete``: it never comes).
HELD_ACTIONS = OUTAGE_ACTIONS | {'user-delete'}
#: The actions that fail the deploy: against a real Ironic the deploy
#: fails by itself from its start (its image answers 404), not when the
#: step comes.
DEPLOY_FAIL_ACTIONS = frozenset(['fail'])
#: The actions a real Ironic plays during a deploy that ends by itself
#: (the ``fake`` deploy interface, not ``direct``: nothing completes a
#: real ``wait call-back``): the step comes at the deploy's first poll,
#: during its ``deploying``, and the deploy goes ``active`` meanwhile.
ENDING_DEPLOY_ACTIONS = frozenset(['api-blip'])
#: The actions after which a scenario with ``deleting_reads = 0`` lets
#: the driver see only the tear-down's aftermath: against a real Ironic
#: the player holds the driver's thread, right after the action, until
#: Ironic has cleared the node's association.
AFTERMATH_ACTIONS = frozenset(['undeploy'])
#: The actions whose user delete the player's main thread makes once the
#: driver's thread has signalled it (``user-delete``: at the action's
#: poll; ``api-down-delete``: at the first read the API refused).
MAIN_THREAD_DELETE_ACTIONS = frozenset(['user-delete', 'api-down-delete'])
#: The actions after which the node carries another instance
#: (``scenario_table.OTHER_INSTANCE``, which the observation then names).
OTHER_INSTANCE_ACTIONS = frozenset(['reassociate'])
assert HELD_ACTIONS | DEPLOY_FAIL_ACTIONS | ENDING_DEPLOY_ACTIONS | \
    AFTERMATH_ACTIONS | MAIN_THREAD_DELETE_ACTIONS | OTHER_INSTANCE_ACTIONS <= set(ACTIONS)
# (the ``hooks_fired`` label of the user's delete at the API's first
# refusal names a main-thread delete)
assert fired_action(USER_DELETE_AT_REFUSAL) in MAIN_THREAD_DELETE_ACTIONS

#: Driver reads a deploy stays in ``deploying`` (the conductor holds the
#: node's lock: a tear-down is refused with 409), unless a scenario says.
DEPLOYING_READS = 1
#: Driver reads a deploy of a scenario stays in ``wait call-back`` before
#: the agent's callback comes, unless the action holds it there.
CALLBACK_READS = 3
#: Driver reads a scenario's tear-down stays in ``deleting`` (still
#: associated, locked by the conductor) after an undeploy, unless the
#: scenario says (``Scenario.deleting_reads``).
DELETING_READS = 3
#: Driver reads the fake Ironic keeps a node in each state of a tear-down
#: (``deleting``, ``cleaning``) that nothing times: ``cleaning`` always,
#: ``deleting`` outside a scenario (the contract tests).  One: a read
#: sees the state, the next read what follows it.
UNTIMED_TEARDOWN_READS = 1

#: The name (in the series' fake Ironic, ``LOOPS``) of the driver's wait
#: for a deploy (``_wait_for_active``): the loop whose polls a scenario's
#: ``after_polls`` and its steps count unless a step names another.
DEPLOY_LOOP = 'deploy'
#: The name (in the series' fake Ironic, ``LOOPS``) of the driver's wait
#: for the tear-down (``_wait_for_teardown``, or ``_unprovision`` on a tree
#: without it).
TEARDOWN_LOOP = 'teardown'
#: The loops a step of ``then`` may name as its third item: after its Nth
#: poll of that loop, not of the deploy.
STEP_LOOPS = (TEARDOWN_LOOP,)


@dataclasses.dataclass(frozen=True, eq=False)
class Scenario:
    """One named case of the matrix (immutable; :meth:`__post_init__`
    refuses what the player or the judge cannot take).

    :param name: short identifier (used on the command line and in JSON).
    :param title: one-line description for the table.
    :param nodes: Ironic nodes managed by the compute service (1 or more).
    :param action: what happens during the first deploy: a key of
        :data:`ACTIONS`, or None.  With ``api-blip``, ``api-down`` and
        ``api-down-delete`` the fake holds the deploy in ``wait
        call-back`` until then; against a real Ironic (``--ironic real``)
        a proxy in front of its API plays the outage (``api_proxy.py``).
    :param after_polls: the action runs right after the driver's Nth poll
        of the first deploy (of the rebuild, for ``kind='rebuild'``).
    :param then: more ``(polls, action)`` steps on the same node (actions
        of :data:`ACTIONS`), after its Nth poll of the deploy, or
        ``(polls, action, 'teardown')`` after the Nth poll of the
        driver's wait for the tear-down (:data:`STEP_LOOPS`: a step whose
        poll never comes does not run: see ``hooks_fired`` in the
        observation).
    :param delete_on_reschedule: after the action, the user deletes the
        server at the moment the compute manager removes the build's
        allocation (what it does right before handing a failed build back
        to the conductor for a reschedule).
    :param deploying_reads: driver reads a deploy stays in ``deploying``
        (locked by the conductor: Ironic refuses a tear-down with 409).
    :param deleting_reads: driver reads that observe the node in
        ``deleting`` (still associated, locked by the conductor) after an
        undeploy; 0 means the driver only sees the aftermath (association
        cleared, ``cleaning``/``available``).
    :param port: boot with a Neutron port (a VIF on the node).
    :param max_attempts: ``[scheduler] max_attempts`` (1 or more).
    :param api_max_retries: ``[ironic] api_max_retries`` (None: default).
    :param finish_ironic_work: let Ironic's conductor finish its pending work
        (``IronicFixture.settle``) before the nodes are recorded, for a
        tear-down nobody polls to its end.
    :param kind: what the scenario plays: a key of :data:`KINDS`.
    :param source: where the case comes from (bug report, control).
    :param reproducer: checks (functions of the observation, below) that
        hold on the reproducer tree: Nova as released, measured.
    :param fixed: checks that must hold on the fixed tree.  Every
        scenario also gets the end-state invariant (``invariant.end_state``:
        nothing left behind; listing it here is refused), the bound on
        the driver's polls (``max_polls``), the bound on the wall time
        against a real Ironic (``max_seconds``) and
        :func:`no_foreign_uuid`, in that order, after these.
    :param claim_kept: the server ends in ERROR keeping its claim for its
        delete: the end-state invariant's claim-kept form.
    :param waive: ``{part: why}``: parts of the end-state invariant
        (``invariant.END_STATE_PARTS``) this scenario does not check, each
        with its reason; an unknown part is refused.  Kept read-only
        (a ``types.MappingProxyType``; empty when None).
    :param bug: the fixed-tree checks whose failure on the reproducer tree
        is the bug's symptom (:data:`END_STATE` for the end-state
        invariant): they come first in ``fixed``, so that the reproducer's
        verdict opens with them; outcome checks only (no log lines).
    :param reproducer_unplayable: why the scenario cannot be played on
        the reproducer tree (a step of it never comes there), or None;
        then its ``reproducer`` column is empty, and a step that never
        came there is the verdict ``not playable``, not an error.
    :param real_ironic: the end-to-end test of ``novaseries/nova_side/
        driver_tests/test_e2e.py`` that plays the scenario at the driver level against
        a real Ironic (``novaseries ironic driver-tests``), or None.
    :param real_unplayable: why ``novaseries run --ironic real`` cannot
        play the scenario through Nova's whole stack against a real Ironic
        (``real_backend.py``), or None: it plays it.
    :param max_polls: the fixed tree's driver polls from the action to
        the end (``polls_after_action``), at most (:func:`polls_at_most`,
        added to ``fixed``); default :data:`DEFAULT_MAX_POLLS`.
    :param max_seconds: against a real Ironic, the fixed tree's wall time
        from the action to the end, at most (``bounds.seconds_at_most``,
        added to ``fixed``); default ``bounds.real_seconds(max_polls)``.
    :ivar end_state: the end-state invariant check of ``fixed``, built
        from ``claim_kept`` and ``waive`` (not a parameter).
    :raises ValueError: a definition the player or the judge cannot take
        (an unknown kind, action, step or loop, no node, no attempt, an
        unknown or unexplained waiver, the end-state invariant listed by
        hand, a log check as the bug, a reproducer column for a scenario
        that cannot be played there, a blank reason a tree or a real
        Ironic cannot play it).
    """

    name: str
    title: str
    nodes: int = 1
    action: typing.Optional[str] = None
    after_polls: int = 2
    deleting_reads: int = DELETING_READS
    port: bool = False
    max_attempts: int = 3
    kind: str = 'build'
    deploying_reads: int = DEPLOYING_READS
    source: str = ''
    then: tuple = ()
    delete_on_reschedule: bool = False
    api_max_retries: typing.Optional[int] = None
    finish_ironic_work: bool = False
    reproducer: tuple = ()
    fixed: tuple = ()
    real_ironic: typing.Optional[str] = None
    real_unplayable: typing.Optional[str] = None
    max_polls: int = DEFAULT_MAX_POLLS
    claim_kept: bool = False
    waive: typing.Optional[typing.Mapping[str, str]] = None
    bug: tuple = ()
    reproducer_unplayable: typing.Optional[str] = None
    max_seconds: typing.Optional[float] = None
    end_state: typing.Optional[typing.Callable] = dataclasses.field(
        init=False, default=None, repr=False)

    def __post_init__(self):
        name = self.name
        if self.kind not in KINDS:
            raise ValueError('scenario %s: unknown kind %r (kinds: %s)'
                             % (name, self.kind, ', '.join(KINDS)))
        if self.action is not None and self.action not in ACTIONS:
            raise ValueError('scenario %s: unknown action %r (actions: %s)'
                             % (name, self.action, ', '.join(ACTIONS)))
        then = tuple(tuple(step) for step in self.then)
        for step in then:
            if not (2 <= len(step) <= 3 and isinstance(step[0], int)
                    and step[0] >= 0 and step[1] in ACTIONS
                    and step[2:] in ((), *((loop,) for loop in STEP_LOOPS))):
                raise ValueError('scenario %s: a step of then is (polls, '
                                 'action) or (polls, action, loop) with an '
                                 'action of ACTIONS and a loop of '
                                 'STEP_LOOPS, not %r' % (name, step))
        if self.nodes < 1 or self.max_attempts < 1:
            raise ValueError('scenario %s: nodes and max_attempts are 1 or '
                             'more' % name)
        if self.reproducer_unplayable is not None and (
                self.reproducer or not str(self.reproducer_unplayable).strip()):
            raise ValueError('scenario %s: a scenario that cannot be played '
                             'on the reproducer tree says why, and has no '
                             'reproducer column' % name)
        if self.real_unplayable is not None and not (
                isinstance(self.real_unplayable, str)
                and self.real_unplayable.strip()):
            raise ValueError('scenario %s: a scenario a real Ironic cannot '
                             'play says why (a text)' % name)
        if any(getattr(c, 'end_state', False) for c in self.fixed):
            raise ValueError('scenario %s: the end-state invariant is added '
                             'to every fixed column (claim_kept=, waive=)'
                             % name)
        try:
            invariant = end_state(self.claim_kept, self.waive)
        except ValueError as e:
            raise ValueError('scenario %s: %s' % (name, e)) from None
        bug = tuple(invariant if c == END_STATE else c for c in self.bug)
        if any(getattr(c, 'detail', False) for c in bug):
            raise ValueError('scenario %s: a log check is not the bug'
                             % name)
        max_seconds = (real_seconds(self.max_polls) if self.max_seconds is None
                       else self.max_seconds)
        fixed = bug + tuple(c for c in self.fixed if c not in bug) + tuple(
            c for c in (invariant,) if c not in bug) + (
                polls_at_most(self.max_polls), seconds_at_most(max_seconds),
                no_foreign_uuid)
        for field, value in (('then', then), ('end_state', invariant),
                             ('waive', types.MappingProxyType(
                                 dict(invariant.waive))), ('bug', bug),
                             ('max_seconds', max_seconds),
                             ('reproducer', tuple(self.reproducer)),
                             ('fixed', fixed)):
            object.__setattr__(self, field, value)

    #: What the player reads (the rest are the expectations).
    PLAYER_FIELDS = ('name', 'title', 'nodes', 'action', 'after_polls', 'then',
                     'delete_on_reschedule', 'deleting_reads',
                     'deploying_reads', 'port',
                     'max_attempts', 'api_max_retries', 'finish_ironic_work',
                     'kind', 'source')

    def describe(self):
        """The player's parameters, JSON-ready (the observation's
        ``definition``)."""
        return {field: [list(step) for step in self.then] if field == 'then'
                else getattr(self, field) for field in self.PLAYER_FIELDS}

    def expectations(self, tree):
        """What the checks of ``tree`` (a label of :data:`TREES`) say,
        as short texts (the reproducer's: why it cannot be played there,
        for such a scenario)."""
        if tree == REPRODUCER and self.reproducer_unplayable:
            return ['not playable: ' + self.reproducer_unplayable]
        return [getattr(check, 'text', check.__name__)
                for check in getattr(self, tree)]


assert {field.name for field in dataclasses.fields(Scenario)} >= set(TREES)
