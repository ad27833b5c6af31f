"""The explorer's side of the player: :class:`ExploreScenarioTest` plays
a generated case against the fake Ironic, and :func:`serve` plays the
cases the harness sends, one at a time, in one process
(``play --serve``; the harness's end: ``novaseries.explorer.player``).

A generated schedule may ask for what Ironic refuses: an undeploy of a
node already being torn down, an abort outside ``wait call-back``, a
deploy failure of a node that is not deploying, anything on a node an
earlier step deleted; or a user's delete of a server already gone.  As
for an operator or a user, the request is refused and nothing happens:
the step is recorded in ``refused`` (with Ironic's or the API's answer)
and the case goes on.  An operator's tear-down that would come after the
deploy's wait has ended (the node ``active``) is not played
(:data:`AFTER_DEPLOY_UNPLAYED`).  A server the user deleted that ends in ERROR is
deleted again once everything has settled; what that second delete
leaves is recorded too (``explore_space.SECOND_DELETE``).  Each save of
the server by its build in nova-compute that replaces the task state of
the user's delete is recorded (``saved_over_delete``).
"""

import functools
import json
import traceback

# The test package applies Nova's monkey patching; it must come first.
import nova.tests.functional  # noqa: F401  isort:skip
import nova.conf  # noqa: E402
from nova.compute import task_states  # noqa: E402
from nova.compute import vm_states  # noqa: E402
from nova.conductor import api as conductor_api  # noqa: E402
from nova.db.main import api as db_api  # noqa: E402
from nova.tests.fixtures import ironic_api  # noqa: E402
from nova.tests.functional.api import client  # noqa: E402
from openstack import exceptions as sdk_exc  # noqa: E402

from novaseries.nova_side.player.play_fake import FakeScenarioTest  # noqa: E402
from novaseries.nova_side.player.scenario_case import run_scenario  # noqa: E402
from novaseries.scenarios.explore_space import (  # noqa: E402
    SECOND_DELETE, SERVE_DONE, build_saver, scenario_of)
from novaseries.scenarios.universal import user_deleted  # noqa: E402

#: What a refused step raises: Ironic's refusals (openstacksdk's HTTP
#: errors), the fake's for an event its node's state has no transition
#: for (a deploy failure of a node not deploying) or for a node deleted,
#: and the compute API's 404 for a server already deleted.
REFUSALS = (sdk_exc.HttpException, ironic_api.InvalidFixtureUse,
            client.OpenStackApiNotFoundException)


#: The operator's events that tear a node down, and the provision state
#: in which the deploy's wait has ended (the server is ACTIVE): after
#: that no wait of Nova's polls the node, and the tear-down of an ACTIVE
#: server's node is no longer the build's (the kind
#: ``undeploy-active-delete`` plays it with the user's delete); such an
#: event is not played then, and recorded in ``refused`` so.
AFTER_DEPLOY_UNPLAYED = frozenset(['undeploy', 'maintenance-delete',
                                   'reassociate'])
DEPLOY_OVER = 'active'
NOT_PLAYED_AFTER_DEPLOY = 'not played: the deploy is over (node active)'
#: How much of a refusal's answer ``refused`` keeps (characters).
REFUSAL_CHARS = 120


class ExploreScenarioTest(FakeScenarioTest):
    """FakeScenarioTest whose steps may be refused (recorded in
    ``refused``: ``action: answer``, in the order they came)."""

    def setUp(self):
        super().setUp()
        self._watch_reschedules()
        self._watch_saves_over_delete()

    def _watch_reschedules(self):
        """Record, each time the compute manager hands a failed build back
        to the conductor for a reschedule, the nodes that still carry the
        server then, as ``[node, provision_state]`` (``at_reschedule``)."""
        self.at_reschedule = []
        real = conductor_api.ComputeTaskAPI.build_instances
        test = self

        def build_instances(api, context, instances, *args, **kwargs):
            carrying = []
            for node_id in test.node_ids:
                node = test.ironic.get(node_id)
                if node is not None and node.instance_id == instances[0].uuid:
                    carrying.append([node_id, node.provision_state])
            test.at_reschedule.append(carrying)
            return real(api, context, instances, *args, **kwargs)

        self.stub_out('nova.conductor.api.ComputeTaskAPI.build_instances',
                      build_instances)

    def _watch_saves_over_delete(self):
        """Record each save by a server's build in nova-compute
        (``explore_space.build_saver``) that replaced the task state
        DELETING of the user's delete, other than the delete's own end
        (vm_state DELETED), as ``(uuid, 'vm_state V, task_state T by METHOD')``."""
        self.saved_over_delete = []
        real = db_api.instance_update_and_get_original
        test = self

        def update(context, instance_uuid, values, *args, **kwargs):
            old, new = real(context, instance_uuid, values, *args, **kwargs)
            if old['task_state'] == task_states.DELETING and \
                    new['task_state'] != task_states.DELETING and \
                    new['vm_state'] != vm_states.DELETED:
                saver = build_saver(traceback.extract_stack())
                if saver:
                    test.saved_over_delete.append((instance_uuid, (
                        'vm_state %s, task_state %s by %s' % (
                            new['vm_state'], new['task_state'], saver))))
            return old, new

        self.stub_out('nova.db.main.api.instance_update_and_get_original',
                      update)

    def _refusable(self, action, play, node_id, server_id):
        node = self.ironic.get(node_id)
        if action in AFTER_DEPLOY_UNPLAYED and node is not None and \
                node.provision_state == DEPLOY_OVER:
            self._acted.setdefault('refused', []).append(
                '%s: %s' % (action, NOT_PLAYED_AFTER_DEPLOY))
            return
        try:
            play(node_id, server_id)
        except REFUSALS as e:
            answer = str(e).strip()
            self._acted.setdefault('refused', []).append('%s: %s' % (
                action, answer.splitlines()[0][:REFUSAL_CHARS] if answer
                else type(e).__name__))

    def _act(self, action, node_id, server_id):
        self._refusable(action, functools.partial(super()._act, action),
                        node_id, server_id)

    def _act_undeploy_delete(self, node_id, server_id):
        # each half on its own: a refused undeploy still deletes
        self._refusable('undeploy', self._act_undeploy, node_id, server_id)
        self._act_delete(node_id, server_id)

    def _record(self, sc, rec, server, final, settled, *args):
        super()._record(sc, rec, server, final, settled, *args)
        rec['refused'] = list(self._acted.get('refused', []))
        rec['api_max_retries'] = nova.conf.CONF.ironic.api_max_retries
        rec['at_reschedule'] = [list(nodes) for nodes in self.at_reschedule]
        rec['saved_over_delete'] = [saved for uuid, saved in
                                    self.saved_over_delete
                                    if uuid == server['id']]
        if rec['status'] == 'ERROR' and user_deleted(
                dict(rec, definition=sc.describe())):
            # The user's delete left the server in ERROR: the user deletes
            # it again, and what that leaves is recorded too.
            try:
                self.api.delete_server(server['id'])
            except REFUSALS as e:
                rec['refused'].append('second delete: %s' % e)
            final, settled, _ = self._settle(server['id'])
            self.ironic.settle()
            second = {'scenario': rec['scenario'], 'error': None,
                      'definition': sc.describe()}
            super()._record(sc, second, server, final, settled, *args)
            second.pop('log', None)
            rec[SECOND_DELETE] = second


def serve(requests, replies):
    """Play each request of ``requests`` (lines of JSON: ``{"name",
    "case", "out"}``, ``case`` a dict of ``explore_space.CASE_FIELDS``):
    write the observation (``scenario_table.OBSERVATION``) to ``out``,
    then the line ``SERVE_DONE + out`` to ``replies``.  Returns at the
    end of ``requests``.

    :raises ValueError: a request that is not JSON or a case outside the
        explorer's table (``explore_space.scenario_of``).
    """
    for line in requests:
        if not line.strip():
            continue
        request = json.loads(line)
        rec = run_scenario(scenario_of(request['name'], request['case']),
                           ExploreScenarioTest)
        with open(request['out'], 'w') as f:
            json.dump(rec, f, sort_keys=True, default=str)
        print(SERVE_DONE + request['out'], file=replies, flush=True)
