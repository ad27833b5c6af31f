"""The real-Ironic backend of the scenario player (run --ironic real),
without Nova and without Ironic: request classification, the deploy
interfaces, the image patch, poll counting and hooks, the history."""

import ast
import json
import threading
import time
import unittest

from novaseries.mainjob import backends, report
from novaseries.ironic import real_backend as rb, real_deploy, request_log
from novaseries.scenarios import scenario, scenario_table as table
from novaseries.util import HarnessError
from tests import helpers

NODE = '4ede133e-3045-4aef-b270-8a3f25e2739b'
INST = '534338fc-e51b-4e01-afb3-f9cb23490cd0'
#: The series' patch that adds the fake Ironic fixture, which declares
#: READ_METHODS (the player's reads: play_record, ``only_reads``).
FIXTURE_PATCH = (helpers.REPO / 'patches' / 'master' /
                 '0002-tests-Add-a-fake-Ironic-fixture.patch')


def series_read_methods():
    """The fixture's ``READ_METHODS`` as the series declares it (the
    ``frozenset([...])`` its patch adds)."""
    lines = FIXTURE_PATCH.read_text().splitlines()
    start = lines.index(next(line for line in lines
                             if line.startswith('+READ_METHODS = ')))
    source = ''
    for line in lines[start:]:
        source += line[1:] + '\n'
        if source.count('(') == source.count(')'):
            break
    call = ast.parse(source).body[0].value
    return frozenset(ast.literal_eval(call.args[0]))


class ClassifyTest(unittest.TestCase):

    def test_table(self):
        cases = [
            ('GET', '/', (), ('discovery', None)),
            ('GET', '/v1', (), ('discovery', None)),
            ('GET', f'/v1/nodes?instance_uuid={INST}&fields=uuid', (),
             ('nodes', None)),
            ('GET', '/v1/nodes/detail?associated=True', (), ('nodes', None)),
            ('GET', f'/v1/nodes/{NODE}?fields=uuid', (), ('get_node', NODE)),
            ('GET', f'/v1/nodes/{NODE}/validate', (),
             ('validate_node', NODE)),
            ('PATCH', f'/v1/nodes/{NODE}', ('spawn', '_add_instance_info_to_node'),
             ('patch_node', NODE)),
            ('PATCH', f'/v1/nodes/{NODE}',
             ('destroy', '_cleanup_deploy', '_remove_instance_info_from_node'),
             ('update_node', NODE)),
            ('PUT', f'/v1/nodes/{NODE}/states/provision', (),
             ('set_node_provision_state', NODE)),
            ('PUT', f'/v1/nodes/{NODE}/states/power', (),
             ('set_node_power_state', NODE)),
            ('POST', f'/v1/nodes/{NODE}/vifs', (),
             ('attach_vif_to_node', NODE)),
            ('DELETE', f'/v1/nodes/{NODE}/vifs/abc', (),
             ('detach_vif_from_node', NODE)),
            ('GET', '/v1/ports?node_uuid=x', (), ('ports', None)),
            ('GET', '/v1/portgroups?node=x', (), ('port_groups', None)),
            ('DELETE', f'/v1/nodes/{NODE}', (), ('delete_node', NODE)),
            ('POST', '/v1/nodes', (), ('create_node', None)),
            ('GET', '/v1/chassis', (), ('request', None)),
        ]
        for method, path, frames, want in cases:
            with self.subTest(method=method, path=path):
                self.assertEqual(want, request_log.classify(method, path, frames))

    def test_every_read_is_a_read(self):
        # the player counts what is not in the series' READ_METHODS as a
        # write (writes_after_action, only_reads): each GET the driver
        # sends of a node must classify as one of them
        reads = series_read_methods()
        self.assertIn('volume_targets', reads)
        for path in ('/v1/nodes?instance_uuid=x', f'/v1/nodes/{NODE}',
                     f'/v1/nodes/{NODE}/validate', '/v1/ports?node=x',
                     '/v1/portgroups?node=x', '/v1/volume/targets?node=x'):
            with self.subTest(path):
                self.assertIn(request_log.classify('GET', path)[0], reads)
        for method, path in (('PUT', f'/v1/nodes/{NODE}/states/provision'),
                             ('PATCH', f'/v1/nodes/{NODE}'),
                             ('DELETE', f'/v1/nodes/{NODE}/vifs/x')):
            self.assertNotIn(request_log.classify(method, path)[0], reads)
        # version discovery is no proxy method, so no read; it is about no
        # node, and writes_after_action takes only the first node's calls
        for path in ('/', '/v1'):
            self.assertEqual(('discovery', None), request_log.classify('GET', path))
            self.assertNotIn('discovery', reads)


class DeployInterfaceTest(unittest.TestCase):

    def test_actions_wait_others_end(self):
        by = table.BY_NAME
        self.assertEqual(['direct'], real_deploy.deploy_interfaces(
            by['undeploy-deleting'], 1))
        self.assertEqual(['direct', 'direct'], real_deploy.deploy_interfaces(
            by['undeploy-deleting-reschedule'], 2))
        self.assertEqual(['fake'], real_deploy.deploy_interfaces(by['normal-build'], 1))
        # a rebuild boots to ACTIVE first
        self.assertEqual(['fake'], real_deploy.deploy_interfaces(
            by['rebuild-newest-microversion'], 1))
        # a short API outage needs a deploy that ends by itself (nothing
        # completes a real wait call-back); a long one waits in it
        self.assertEqual(['fake'], real_deploy.deploy_interfaces(
            by['api-outage-within-retries'], 1))
        self.assertEqual(['direct'], real_deploy.deploy_interfaces(
            by['api-outage-outlasts-retries'], 1))
        self.assertEqual(['direct'], real_deploy.deploy_interfaces(
            by['api-outage-user-delete'], 1))


class ImagePatchTest(unittest.TestCase):

    INFO = {'url': 'http://127.0.0.1:1', 'image_url': 'http://127.0.0.1:2/disk.img',
            'missing_image_url': 'http://127.0.0.1:2/missing.img',
            'image_sha256': 'ab' * 32}

    def test_image_source_and_checksum(self):
        backend = rb.RealIronicBackend(self.INFO, deploying_reads=1)
        patch = [{'op': 'add', 'path': '/instance_info/image_source',
                  'value': 'glance-uuid'},
                 {'op': 'add', 'path': '/instance_info/root_gb', 'value': '10'}]
        out = backend.image_patch(patch)
        self.assertEqual('http://127.0.0.1:2/disk.img?glance=glance-uuid',
                         out[0]['value'])
        self.assertEqual(patch[1], out[1])
        self.assertEqual([('/instance_info/image_os_hash_algo', 'sha256'),
                          ('/instance_info/image_os_hash_value', 'ab' * 32)],
                         [(op['path'], op['value']) for op in out[2:]])
        # the caller's patch is not changed; the id comes back
        self.assertEqual('glance-uuid', patch[0]['value'])
        self.assertEqual('glance-uuid', real_deploy.glance_id(out[0]['value']))
        self.assertEqual('other', real_deploy.glance_id('other'))

    def test_failing_deploy_once(self):
        backend = rb.RealIronicBackend(self.INFO, deploying_reads=1)
        backend.fail_next_deploy = True
        patch = [{'op': 'add', 'path': '/instance_info/image_source',
                  'value': 'glance-uuid'}]
        first = backend.image_patch(patch)[0]['value']
        # the 404 image, and no image id for Ironic's last_error to name
        self.assertEqual('http://127.0.0.1:2/missing.img', first)
        self.assertEqual('http://127.0.0.1:2/disk.img?glance=glance-uuid',
                         backend.image_patch(patch)[0]['value'])

    def test_boot_from_volume_unchanged(self):
        backend = rb.RealIronicBackend(self.INFO, deploying_reads=1)
        patch = [{'op': 'add', 'path': '/instance_info/root_gb', 'value': '10'}]
        backend.fail_next_deploy = True
        self.assertEqual(patch, backend.image_patch(patch))
        # no image sent: the next deploy's image still fails
        self.assertTrue(backend.fail_next_deploy)


class _Request:
    def __init__(self, method, path, body=None):
        self.method, self.path_url = method, path
        self.headers = {'X-OpenStack-Ironic-API-Version': '1.109'}
        self.body = json.dumps(body).encode() if body is not None else None


class _Response:
    def __init__(self, body, status=200):
        self.status_code = status
        self._body = body
        self.content = json.dumps(body).encode()

    def json(self):
        return self._body


class PollTest(unittest.TestCase):
    """Polls and hooks, fed with the driver's requests."""

    def setUp(self):
        self.backend = rb.RealIronicBackend(ImagePatchTest.INFO, deploying_reads=1)
        self.backend._history[NODE] = [('available', None)]
        self.backend._history_t0[NODE] = 0
        self.fired = []

    def tearDown(self):
        # (the recorder keeps its own failures instead of raising them)
        self.assertEqual([], self.backend.errors)

    def _deploy_request(self):
        self.backend._record_safely(
            _Request('PUT', f'/v1/nodes/{NODE}/states/provision',
                     {'target': 'active'}), _Response(None, 202), 202, 0)

    def _poll(self, state, target='active', loop=scenario.DEPLOY_LOOP, nodes=None):
        b = self.backend
        if loop == scenario.DEPLOY_LOOP:
            b._loop.deploy_instance = INST
        req = _Request('GET', f'/v1/nodes?instance_uuid={INST}&fields=uuid')
        body = {'nodes': [{'uuid': NODE, 'provision_state': state,
                           'target_provision_state': target}]
                if nodes is None else nodes}
        # as Nova's connection does: record, then run the steps fired
        b._run_hooks(b._record_safely(req, _Response(body), 200,
                                      time.monotonic()))
        b._loop.deploy_instance = None

    def test_first_step_waits_for_wait_callback(self):
        # The fake's poll 2 (deploying_reads=1): the first poll that sees
        # wait call-back, however long the real deploying lasted.
        b = self.backend
        b.after_polls(2, lambda n: self.fired.append(('undeploy', n)))
        self._deploy_request()
        for _ in range(3):
            self._poll('deploying')
        self.assertEqual([], self.fired)
        self._poll('wait call-back')
        self.assertEqual([('undeploy', NODE)], self.fired)
        self.assertEqual(4, b.polls(NODE))
        # a step at the fake's poll 3 comes one poll later
        b.after_polls(3, lambda n: self.fired.append(('delete', n)),
                      node=NODE)
        self._poll('deleting', 'available')
        self.assertEqual(('delete', NODE), self.fired[-1])
        self.assertEqual([('available', None), ('deploying', 'active'),
                          ('wait call-back', 'active'),
                          ('deleting', 'available')], b.history(NODE))

    def test_deploying_reads_shift_the_count(self):
        b = rb.RealIronicBackend(ImagePatchTest.INFO, deploying_reads=3)
        self.backend = b
        b.after_polls(4, lambda n: self.fired.append(n))
        self._deploy_request()
        self._poll('wait call-back')
        self.assertEqual([NODE], self.fired)

    def test_step_during_deploying(self):
        # user-delete-deploying: after_polls=1, deploying_reads=5: the
        # first poll, which sees the real deploying (locked)
        b = rb.RealIronicBackend(ImagePatchTest.INFO, deploying_reads=5)
        self.backend = b
        b.after_polls(1, lambda n: self.fired.append(n))
        self._deploy_request()
        self._poll('deploying')
        self.assertEqual([NODE], self.fired)

    def test_teardown_polls(self):
        b = self.backend
        b.after_polls(1, lambda n: self.fired.append(('td', n)),
                      loop=scenario.TEARDOWN_LOOP)
        self._poll('wait call-back')            # a deploy poll: node known
        # destroy()'s wait, from another thread than the deploy's
        b._teardowns[INST] += 1
        t = threading.Thread(target=self._poll, args=('deleting', 'available'),
                             kwargs={'loop': scenario.TEARDOWN_LOOP})
        t.start()
        t.join()
        self.assertEqual([('td', NODE)], self.fired)
        self.assertEqual(1, b.polls(NODE, scenario.TEARDOWN_LOOP))
        # a lost node: the poll is still the node's (last known)
        self._poll(None, nodes=[])
        self.assertEqual(2, b.polls(NODE))
        self.assertEqual(['nodes', 'nodes', 'nodes'],
                         [c.method for c in b.call_log])
        self.assertEqual([NODE] * 3, [c.node for c in b.call_log])

    def test_step_that_raises_is_kept_not_passed_on(self):
        b = self.backend
        called = []
        b.on_error = lambda: called.append(True)

        def bad(node):
            raise RuntimeError('409 from the undeploy')

        b.after_polls(2, bad)
        b.after_polls(2, lambda n: self.fired.append(n))
        self._deploy_request()
        # what Nova's connection calls: the recorder, then the steps
        b._loop.deploy_instance = INST
        hooks = b._record_safely(
            _Request('GET', f'/v1/nodes?instance_uuid={INST}'),
            _Response({'nodes': [{'uuid': NODE,
                                  'provision_state': 'wait call-back'}]}),
            200, 0)
        b._loop.deploy_instance = None
        b._run_hooks(hooks)             # does not raise
        self.assertEqual([NODE], self.fired)    # the next step still ran
        self.assertEqual([True], called)
        self.assertEqual(1, len(b.errors))
        self.assertIn('409 from the undeploy', b.errors[0])
        del b.errors[:]

    def test_recorder_failure_is_kept_not_passed_on(self):
        b = self.backend
        req = _Request('GET', '/v1/nodes')
        self.assertEqual([], b._record_safely(req, object(), 200, 0))
        self.assertEqual(1, len(b.errors))
        self.assertIn('recording GET /v1/nodes', b.errors[0])
        del b.errors[:]

    def test_reads_outside_the_loops_are_not_polls(self):
        b = self.backend
        b.after_polls(1, lambda n: self.fired.append(n), loop=scenario.TEARDOWN_LOOP)
        self._poll('wait call-back', loop=None)
        self.assertEqual(0, b.polls(NODE))
        self.assertEqual([], self.fired)
        recs = b.requests()
        self.assertEqual('nova', recs[-1]['actor'])
        self.assertIsNone(recs[-1]['loop'])

    def test_older_read_does_not_rewrite_history(self):
        b = self.backend
        b._observe(NODE, {'provision_state': 'deleting',
                          'target_provision_state': 'available'}, 10.0)
        # a read sent before that one, answered after it
        b._observe(NODE, {'provision_state': 'wait call-back',
                          'target_provision_state': 'active'}, 9.0)
        self.assertEqual([('available', None), ('deleting', 'available')],
                         b.history(NODE))


class PlayableTest(unittest.TestCase):

    def test_unplayable_says_why(self):
        for why in ('', ' ', True):
            with self.subTest(why=why), self.assertRaisesRegex(
                    ValueError, 'a real Ironic cannot play says why'):
                scenario.Scenario('x', 'x', real_unplayable=why)

    def test_unplayable_refused_with_reason(self):
        bad = [s for s in table.SCENARIOS if s.real_unplayable is not None]
        self.assertTrue(bad)
        self.assertNotIn(bad[0].name, backends.real_scenarios())
        with self.assertRaises(HarnessError) as e:
            backends.real_scenarios([bad[0].name])
        self.assertIn(bad[0].real_unplayable, str(e.exception))

    def test_ci_subset_is_playable(self):
        self.assertLessEqual(set(table.REAL_CI), set(backends.real_scenarios()))
        self.assertEqual(list(table.REAL_CI),
                         backends.real_scenarios(table.REAL_CI))

    def test_table_interval(self):
        obs = {'scenario': 'undeploy-deleting', 'status': 'ERROR',
               'polls_after_action': 5, 'wall_seconds_after_action': 7.0,
               'verdict': 'ok', 'nodes': []}
        data = {'reproducer': {'scenarios': [obs]},
                'fixed': {'scenarios': [obs]}}
        self.assertIn('5 (10s)', report.table(data)[2])
        rows = report.table(data, interval=backends.real_backend.API_RETRY_INTERVAL,
                            wall='wall')
        self.assertIn('5 (5s)', rows[2])
        self.assertIn(' wall ', rows[0])


if __name__ == '__main__':
    unittest.main()
