"""Contract tests: the fake Ironic behaves like the real Ironic of pins/ironic.txt.

For each scenario of ``contract_scenarios.SCENARIOS`` (undeploy in wait call-back,
maintenance + delete, delete refused while associated, undeploy refused
while deploying or available, abort, deploy failure):

* ``test_real_*`` runs it against a real Ironic and checks the recorded
  expectations (so a change of Ironic shows up here);
* ``test_fake_*`` runs it against ``IronicFixture`` and compares with the
  real run: the collapsed poll sequence (provision_state,
  target_provision_state, associated?) and the exception class and status
  code of every refusal.  A difference fails the test and names the step.
"""

import _guard

try:
    from nova import monkey_patch
    monkey_patch.patch()
    import fixtures
    import openstack.version
    import testtools
except ImportError as e:  # pragma: no cover
    _guard.skip_or_raise('Nova and openstacksdk are needed', e)

try:
    from nova.tests.fixtures import ironic as ironic_fixture
    # the contract scenarios are timed by reads
    from novaseries.nova_side.player import counting_ironic
except ImportError as e:
    ironic_fixture = counting_ironic = None
    FIXTURE_MISSING = e
else:
    FIXTURE_MISSING = None

import os  # noqa: E402
import threading  # noqa: E402

from novaseries.ironic import run_env  # noqa: E402

import contract_backends  # noqa: E402
import contract_scenarios  # noqa: E402

# Without the fake Ironic patch in the tree (a fix-only tree), the fake side
# is skipped; REALIRONIC_NEED_FIXTURE=1 makes that an error instead.
FIXTURE_MISSING_IS_ERROR = os.environ.get(run_env.NEED_FIXTURE) == '1'

#: {scenario name: contract_scenarios.Run} of the real Ironic, shared by the tests.
_REAL = {}
_REAL_BACKEND = []


def real_backend():
    if not _REAL_BACKEND:
        _REAL_BACKEND.append(contract_backends.RealBackend())
    return _REAL_BACKEND[0]


def real_run(scn):
    """The real Ironic's Run of ``scn``.

    The first call runs every scenario at once (one node each, in threads:
    the real Ironic works on several nodes in parallel, and each scenario
    mostly waits for it); a scenario that failed re-raises its error.
    """
    if not _REAL:
        backend = real_backend()

        def one(s):
            try:
                _REAL[s.name] = contract_scenarios.run(backend, s)
            except Exception as e:  # noqa: BLE001 - re-raised per test
                _REAL[s.name] = e

        threads = [threading.Thread(target=one, args=(s,))
                   for s in contract_scenarios.SCENARIOS]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    result = _REAL[scn.name]
    if isinstance(result, Exception):
        raise result
    return result


class TestRealIronic(testtools.TestCase):
    """The real Ironic still behaves as recorded."""

    def test_sdk_microversion(self):
        """openstacksdk (pinned) talks baremetal 1.109 to the real Ironic."""
        backend = contract_backends.RealBackend()
        node = backend.new_node()
        list(backend.proxy.nodes(instance_id=node, fields=contract_scenarios.NOVA_FIELDS))
        backend.proxy.get_node(node, fields=contract_scenarios.NOVA_FIELDS)
        backend.proxy.patch_node(node, [{'op': 'add', 'path': '/extra/x',
                                         'value': 'y'}])
        self.assertRaises(openstack.exceptions.BadRequestException,
                          backend.proxy.set_node_provision_state, node,
                          'deleted')
        backend.proxy.delete_node(node, ignore_missing=False)
        sent = backend.microversions()
        print('openstacksdk %s sent: %s' % (
            openstack.version.__version__,
            sorted((k, sorted(v, key=str)) for k, v in sent.items())))
        for key in [('GET', '/v1/nodes'), ('GET', '/v1/nodes/<uuid>'),
                    ('PATCH', '/v1/nodes/<uuid>'),
                    ('PUT', '/v1/nodes/<uuid>/states/provision'),
                    ('DELETE', '/v1/nodes/<uuid>')]:
            self.assertEqual({'1.109'}, sent[key], key)


class TestBackendActions(testtools.TestCase):
    """A backend plays exactly the contract scenarios' actions."""

    def backend(self, actions, real=False):
        ns = {'real': real, 'ACTIONS': frozenset(actions)}
        ns.update((a, lambda self, node, a=a: self.done.append((a, node)))
                  for a in contract_backends.actions(real))
        return type('Probe', (contract_scenarios.Backend,), ns)

    def test_each_backend_matches(self):
        for cls in (contract_backends.RealBackend,
                    contract_backends.FakeBackend):
            self.assertEqual(contract_backends.actions(cls.real), cls.ACTIONS)

    def test_missing_or_extra_action_refused(self):
        played = contract_backends.actions(False)
        for actions in (played - {'undeploy'}, played | {'rebuild'}):
            e = self.assertRaises(RuntimeError, contract_backends.check_backend,
                                  self.backend(actions))
            self.assertIn('Probe does not match', str(e))

    def test_action_without_method_refused(self):
        cls = self.backend(contract_backends.actions(False))
        del cls.undeploy
        e = self.assertRaises(RuntimeError, contract_backends.check_backend, cls)
        self.assertIn('undeploy', str(e))

    def test_operator_calls_the_action_method(self):
        backend = self.backend(contract_backends.actions(False))()
        backend.done = []
        backend.operator('undeploy', 'n1')
        self.assertEqual([('undeploy', 'n1')], backend.done)
        self.assertRaises(ValueError, backend.operator, 'abort_sdk', 'n1')


class TestFakeMatchesReal(testtools.TestCase):
    """IronicFixture answers like the real Ironic, step by step."""

    def stub_out(self, old, new):
        """What ``nova.test.TestCase.stub_out`` does (used by the fixture)."""
        self.useFixture(fixtures.MonkeyPatch(old, new))

    def setUp(self):
        super().setUp()
        if ironic_fixture is None:
            if _guard.REQUIRED and FIXTURE_MISSING_IS_ERROR:
                raise FIXTURE_MISSING
            self.skipTest('nova.tests.fixtures.ironic is not in this tree: '
                          '%s' % FIXTURE_MISSING)
        # (one thread polls and acts: a held deploy's poll has nothing to
        # wait for)
        self.fixture = self.useFixture(
            counting_ironic.CountingIronicFixture(
                self, callback_reads=None, held_poll_wait=0))


def _make_tests(scn):
    def test_real(self):
        result = real_run(scn)
        problems = contract_scenarios.match_expected(scn, result)
        self.assertEqual([], problems, '\n' + contract_scenarios.describe(result))

    def test_fake(self):
        fake = contract_scenarios.run(contract_backends.FakeBackend(self.fixture), scn)
        real = real_run(scn)
        problems = (contract_scenarios.match_expected(scn, fake) +
                    contract_scenarios.compare(scn, real, fake))
        print('\n%s\n%s' % (contract_scenarios.describe(real),
                            contract_scenarios.describe(fake)))
        for line in contract_scenarios.detail_differences(real, fake):
            print('  detail difference (not failing): %s' % line)
        self.assertEqual([], problems, '\n%s\n%s' % (
            contract_scenarios.describe(real), contract_scenarios.describe(fake)))

    test_real.__doc__ = 'Real Ironic: %s as recorded.' % scn.name
    test_fake.__doc__ = 'Fake Ironic matches real Ironic: %s.' % scn.name
    setattr(TestRealIronic, 'test_%s' % scn.name, test_real)
    setattr(TestFakeMatchesReal, 'test_%s' % scn.name, test_fake)


for _scn in contract_scenarios.SCENARIOS:
    _make_tests(_scn)
