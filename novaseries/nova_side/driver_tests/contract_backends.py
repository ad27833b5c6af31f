"""The two Ironics a contract scenario runs against.

``RealBackend`` drives a real Ironic (``novaseries.ironic.service``) through
openstacksdk, as Nova's driver would (no auth, endpoint override).
``FakeBackend`` drives ``nova.tests.fixtures.ironic.IronicFixture``: the
driver-side calls through its SDK proxy, the operator actions through its
operator controls.
"""

import collections
import time

import fixtures
from openstack import connection
from openstack import exceptions as sdk_exc

import nova.conf
from nova import utils as nova_utils

from novaseries.ironic import rest, service
from novaseries.scenarios.scenario import DEPLOY_LOOP

import contract_scenarios

#: Fake delays of the real Ironic: 1 s per fake power and boot action, so that
#: ``deploying`` (about 3 s) and ``deleting`` (about 4 s) last long enough for
#: an operator action or a second request to hit them.
FAKE_DELAYS = 1

#: ``[fake] deploy_delay``: 2 s per call of the ``fake`` deploy interface,
#: which only the nodes that ask for it use (``deploy_interface=fake``; the
#: others deploy with ``direct``): such a node stays ``deploying``, with its
#: lock held, for about 4 s (prepare, then deploy) before it goes
#: ``active``, and its tear-down (``deleting``) takes about 4 s.  For the
#: delete-while-deploying tests of test_e2e.py (bug 2169776).
FAKE_DEPLOY_DELAY = 2


def ironic():
    """The test run's real Ironic (started once per process)."""
    return service.shared(
        fake_delays=FAKE_DELAYS,
        extra_conf=service.fake_deploy_conf(FAKE_DEPLOY_DELAY))


class RealIronicFixture(fixtures.Fixture):
    """A real Ironic of its own for one test (not the shared one).

    ``kwargs`` go to :class:`novaseries.ironic.service.RealIronic`; the
    started instance is the fixture's ``ironic`` attribute; it is stopped
    at the test's cleanup.
    """

    def __init__(self, **kwargs):
        super().__init__()
        self.kwargs = kwargs
        self.ironic = None

    def _setUp(self):
        self.ironic = service.RealIronic(**self.kwargs)
        self.addCleanup(self.ironic.stop)
        self.ironic.start()


def sdk_connection(url, record=None, retries=None):
    """An openstacksdk Connection to ``url`` without auth.

    :param record: optional list; every request is appended to it as
        ``(method, path, X-OpenStack-Ironic-API-Version header)``.
    :param retries: ``baremetal_status_code_retries``; None keeps the SDK's
        default (5: a 409 NodeLocked or 503 is retried after 0.5, 1, 2, 4
        and 8 s before the SDK raises).
    """
    kwargs = {}
    if retries is not None:
        kwargs['baremetal_status_code_retries'] = retries
    conn = connection.Connection(
        auth_type='none', auth={'endpoint': url},
        baremetal_endpoint_override=url, **kwargs)
    if record is not None:
        _record(conn.session, record)
    return conn


def _record(ksa_session, record):
    """Append (method, path, microversion header) of each request."""
    rsession = ksa_session.session
    send = rsession.send

    def recording_send(request, **kwargs):
        record.append((request.method, request.path_url,
                       request.headers.get('X-OpenStack-Ironic-API-Version')))
        return send(request, **kwargs)
    rsession.send = recording_send


def nova_proxy(url, record=None):
    """The baremetal proxy exactly as Nova's driver builds it.

    ``nova.utils.get_sdk_adapter('baremetal', admin=True,
    check_service=True)`` with ``[ironic] auth_type = none`` and
    ``endpoint_override = url`` (the overrides are removed again; the proxy
    keeps its settings).
    """
    conf = nova.conf.CONF
    conf.set_override('auth_type', 'none', group='ironic')
    conf.set_override('endpoint_override', url, group='ironic')
    try:
        proxy = nova_utils.get_sdk_adapter('baremetal', admin=True,
                                           check_service=True)
    finally:
        conf.clear_override('endpoint_override', group='ironic')
        conf.clear_override('auth_type', group='ironic')
    if record is not None:
        _record(proxy.session, record)
    return proxy


def actions(real):
    """The operator actions the steps of ``contract_scenarios.SCENARIOS``
    name (``real`` False: without the ``real_only`` steps, which the fake
    skips)."""
    kinds = (contract_scenarios.Act, contract_scenarios.Refuse)
    return {step.action for scn in contract_scenarios.SCENARIOS
            for step in scn.steps if isinstance(step, kinds)
            and (real or not getattr(step, 'real_only', False))}


def check_backend(cls):
    """``cls.ACTIONS`` has exactly the actions the scenarios' steps name on
    such a backend (:func:`actions` of ``cls.real``), each a method of
    ``cls`` of the same name.

    :raises RuntimeError: they do not match (the backend cannot play the
        scenarios).
    """
    wrong = sorted(cls.ACTIONS ^ actions(cls.real)) + sorted(
        a for a in cls.ACTIONS if not callable(getattr(cls, a, None)))
    if wrong:
        raise RuntimeError('%s does not match the contract scenarios: %s'
                           % (cls.__name__, ', '.join(wrong)))


class RealBackend(contract_scenarios.Backend):
    name = 'real Ironic'
    real = True
    max_polls = 100000  # bounded by deadline() instead

    def __init__(self, service=None):
        self.service = service or ironic()
        self.sent = []
        # what the driver's calls go through: Nova's own connection
        self.proxy = nova_proxy(self.service.url, record=self.sent)
        # the operator's single API calls: a refusal is not retried
        self.operator_proxy = sdk_connection(
            self.service.url, record=self.sent, retries=0).baremetal
        self.client = rest.Client(self.service.url)

    def new_node(self):
        return self.client.create_available_node()

    def image(self, bad):
        # An http image needs a checksum (Nova sends a Glance UUID, which
        # would need Glance and Keystone): added to instance_info here.
        return (self.service.missing_image_url if bad else
                self.service.image_url,
                {'image_os_hash_algo': 'sha256',
                 'image_os_hash_value': self.service.image_sha256})

    ACTIONS = frozenset(['driver_clear_instance', 'undeploy', 'delete',
                         'maintenance', 'abort_sdk', 'abort'])

    def driver_clear_instance(self, node):
        # IronicDriver._remove_instance_info_from_node(), through Nova's
        # connection
        self.proxy.update_node(node, instance_id=None, instance_info={})

    def undeploy(self, node):
        self.operator_proxy.set_node_provision_state(node, 'deleted')

    def delete(self, node):
        self.operator_proxy.delete_node(node, ignore_missing=False)

    def maintenance(self, node):
        self.operator_proxy.set_node_maintenance(node, reason='contract test')

    def abort_sdk(self, node):
        self.operator_proxy.set_node_provision_state(node, 'abort')

    def abort(self, node):
        # what `openstack baremetal node abort` (ironicclient) sends: the
        # SDK cannot go above its microversion.
        method, path, body, version = rest.abort_request(node)
        resp = self.operator_proxy.request(path, method, json=body,
                                           microversion=version,
                                           raise_exc=False)
        sdk_exc.raise_from_response(resp)

    def pause(self):
        time.sleep(0.02)

    def snapshot(self, node):
        try:
            return contract_scenarios.snapshot_of(self.operator_proxy.get_node(node))
        except sdk_exc.NotFoundException:
            return None

    def deadline(self):
        return time.monotonic() + 60

    def microversions(self):
        """{(method, path pattern): {versions}} of the requests sent."""
        out = collections.defaultdict(set)
        for method, path, version in self.sent:
            parts = path.split('?')[0].split('/')
            parts = ['<uuid>' if len(p) == 36 and p.count('-') == 4 else p
                     for p in parts]
            out[(method, '/'.join(parts))].add(version)
        return dict(out)


class FakeBackend(contract_scenarios.Backend):
    name = 'fake Ironic'
    max_polls = 60

    def __init__(self, fixture):
        self.fixture = fixture
        self.proxy = fixture.proxy

    def new_node(self):
        return self.fixture.create_node()

    def image(self, bad):
        name = service.MISSING_IMAGE if bad else service.IMAGE
        return ('http://127.0.0.1:1/%s' % name,
                {'image_os_hash_algo': 'sha256',
                 'image_os_hash_value': '0' * 64})

    def snapshot(self, node):
        return contract_scenarios.snapshot_of(self.fixture.get(node))

    def after_deploy_request(self, node, bad_image):
        if bad_image:
            # Ironic fails in prepare (HEAD of the image answers 404): the
            # first poll still sees ``deploying``.
            self.fixture.after_polls(
                1, lambda n: self.fixture.fail_deploy(
                    n, 'Failed to prepare to deploy: Validation of image '
                       'href failed'), node=node)

    def poll(self, node, instance):
        # as the driver's deploy wait loop polls, for the fixture's poll
        # count (after_polls)
        with self.fixture._polling(DEPLOY_LOOP, instance):
            return super().poll(node, instance)

    ACTIONS = frozenset(['driver_clear_instance', 'undeploy', 'delete',
                         'maintenance', 'abort'])

    def driver_clear_instance(self, node):
        self.proxy.update_node(node, instance_id=None, instance_info={})

    def undeploy(self, node):
        self.fixture.undeploy(node)

    def delete(self, node):
        self.fixture.delete_node(node)

    def maintenance(self, node):
        self.fixture.set_maintenance(node, reason='contract test')

    def abort(self, node):
        self.fixture.abort(node)


check_backend(RealBackend)
check_backend(FakeBackend)
