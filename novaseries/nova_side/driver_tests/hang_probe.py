"""What a Bare Metal API that accepts a connection and never answers does
to a read of Nova's ironic driver, with and without ``[ironic] timeout``.
Not a test module: ``novaseries ironic hang-probe``
(:mod:`novaseries.ironic.hang_probe_run`) runs it as a script in Nova's test
venv, with a Nova tree and the project on PYTHONPATH.

It starts a real Ironic (``pins/ironic.txt``) on 127.0.0.1 (:mod:`novaseries.ironic.service`),
enrols a node associated with an instance uuid, and puts the harness's API
proxy (:mod:`novaseries.ironic.api_proxy`) in front of it.  Each read
goes through the baremetal proxy that Nova's driver uses:
``nova.utils.get_sdk_adapter('baremetal', admin=True, check_service=True)``
(openstacksdk on a keystoneauth session loaded from the ``[ironic]``
options: ``auth_type = none``, ``endpoint_override`` = the API proxy, and
the ``timeout`` and retries of the case), built while the API
answers, then one read as the driver's waits poll
(``nodes(instance_id=<uuid>, fields=<the driver's fields>)``) with the
proxy down in ``'hang'`` mode:

* ``[ironic] timeout = T``: what the read raises and after how long, what
  the series' ``_api_unreachable()`` says about it (when the tree has
  it), how many requests reached the proxy (keystoneauth's and
  openstacksdk's retries each send one), and whether the client closed
  its connection; then the same with ``[ironic] connect_retries = N``
  and ``status_code_retries = N`` (only the first applies: a hang gives
  no status to retry on);
* ``[ironic] timeout`` unset (``--unset-for S`` > 0): whether the read is
  still waiting after S seconds; then the outage ends (the proxy closes
  the held connection without an answer) and it says what the read got.

Prints ``hang-probe: ...`` lines; exit status 0 when each case behaved
as expected (ConnectTimeout after T to T + 2 s, one request per attempt;
still waiting after S s), else 1.
"""

from nova import monkey_patch
monkey_patch.patch()

import argparse  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
import uuid  # noqa: E402

from keystoneauth1 import exceptions as ks_exc  # noqa: E402

import nova.conf  # noqa: E402
from nova import utils as nova_utils  # noqa: E402
from nova.virt.ironic import driver as ironic_driver  # noqa: E402

from novaseries.ironic import api_proxy, rest, service  # noqa: E402
from novaseries.ironic import layout as ironic_layout  # noqa: E402

CONF = nova.conf.CONF
#: The fields the driver's waits read (nova 34.0.0's ``_NODE_FIELDS``).
FIELDS = getattr(ironic_driver, '_NODE_FIELDS', ('uuid', 'provision_state'))
#: The series' classification of a failed read (None: a tree without it).
API_UNREACHABLE = getattr(ironic_driver, '_api_unreachable', None)
#: How much later than ``[ironic] timeout`` (per attempt) a read may end.
SLACK = 2.0


def say(text):
    print('hang-probe: %s' % text, flush=True)


def baremetal(url, timeout=None, retries=None):
    """The baremetal proxy as Nova's driver builds it (``ironic_connection``),
    from these ``[ironic]`` options (``retries``: ``connect_retries`` and
    ``status_code_retries``; the overrides are removed again, the proxy
    keeps its settings)."""
    opts = {'auth_type': 'none', 'endpoint_override': url,
            'timeout': timeout, 'connect_retries': retries,
            'status_code_retries': retries}
    for name, value in opts.items():
        CONF.set_override(name, value, group='ironic')
    try:
        return nova_utils.get_sdk_adapter('baremetal', admin=True,
                                          check_service=True)
    finally:
        for name in opts:
            CONF.clear_override(name, group='ironic')


def read(conn, instance):
    """One read of the driver's waits; returns (result, error, seconds)."""
    t0 = time.monotonic()
    try:
        nodes = list(conn.nodes(instance_id=instance, fields=FIELDS))
    except Exception as e:
        return None, e, time.monotonic() - t0
    return [n.id for n in nodes], None, time.monotonic() - t0


def describe(error):
    name = '%s.%s' % (type(error).__module__, type(error).__name__)
    verdict = ''
    if API_UNREACHABLE is not None:
        verdict = '; _api_unreachable(): %s' % API_UNREACHABLE(error)
    return '%s: %s%s' % (name, error, verdict)


def settings(conn):
    return ('session timeout %s, connect_retries %s, status_code_retries %s '
            '(retriable %s)' % (
                conn.session.timeout, conn.connect_retries,
                conn.status_code_retries,
                getattr(conn, 'retriable_status_codes', None)))


def timed_case(proxy, instance, timeout, retries):
    """``[ironic] timeout`` set: the read must raise ConnectTimeout after
    about ``(retries + 1) x timeout``, one request per attempt."""
    label = '[ironic] timeout = %g, connect_retries = status_code_retries' \
        ' = %s' % (timeout, 'unset' if retries is None else retries)
    conn = baremetal(proxy.url, timeout, retries)
    nodes, error, seconds = read(conn, instance)
    say('%s: read while the API answers: %s in %.2f s (%s)' % (
        label, nodes or error, seconds, settings(conn)))
    refused = proxy.stats['refused']
    proxy.down('hang')
    try:
        nodes, error, seconds = read(conn, instance)
        attempts = proxy.stats['refused'] - refused
        closed = proxy.wait_held(0, 5)
    finally:
        proxy.up()
    if error is None:
        say('%s: read with the API hung returned %s after %.2f s' % (
            label, nodes, seconds))
        return False
    say('%s: read with the API hung raised %s after %.2f s; %d request(s) '
        'reached the API proxy; the client %s its connection' % (
            label, describe(error), seconds, attempts,
            'closed' if closed else 'did NOT close'))
    tries = 1 + (retries or 0)
    return (isinstance(error, ks_exc.ConnectTimeout) and attempts == tries
            and tries * timeout <= seconds <= tries * (timeout + SLACK))


def unset_case(proxy, instance, unset_for):
    """``[ironic] timeout`` unset: the read must still wait after
    ``unset_for`` seconds."""
    conn = baremetal(proxy.url)
    nodes, error, seconds = read(conn, instance)
    say('[ironic] timeout unset: read while the API answers: %s in %.2f s '
        '(%s)' % (nodes or error, seconds, settings(conn)))
    refused = proxy.stats['refused']
    proxy.down('hang')
    result = []
    thread = threading.Thread(target=lambda: result.append(
        read(conn, instance)), daemon=True)
    t0 = time.monotonic()
    thread.start()
    thread.join(unset_for)
    waited = time.monotonic() - t0
    hung = thread.is_alive()
    say('[ironic] timeout unset: after %.1f s the read is %s; the API proxy '
        'holds %d connection(s), %d request(s) reached it' % (
            waited, 'still waiting' if hung else 'over: %r' % result,
            proxy.held, proxy.stats['refused'] - refused))
    proxy.up()
    thread.join(30)
    if result:
        nodes, error, seconds = result[0]
        say('[ironic] timeout unset: the outage ended (the proxy closed the '
            'held connection without an answer) after %.1f s; the read %s '
            'after %.2f s' % (waited, 'raised ' + describe(error) if error
                              else 'returned %s' % nodes, seconds))
    else:
        say('[ironic] timeout unset: the read still waits 30 s after the '
            'outage ended')
    return hung


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    # each given by novaseries.ironic.hang_probe_run, which has the defaults
    parser.add_argument('--timeout', type=float, required=True)
    parser.add_argument('--retries', type=int, required=True)
    parser.add_argument('--unset-for', type=float, required=True)
    args = parser.parse_args(argv)
    CONF([], project='nova', default_config_files=[])
    t0 = time.monotonic()
    ok = []
    with service.RealIronic(workdir=ironic_layout.workdir(),
                            log=lambda m: None) as ironic:
        say('Ironic %s at %s, started in %.1f s' % (
            service.IRONIC_VERSION, ironic.url, time.monotonic() - t0))
        client = rest.Client(ironic.url)
        instance = str(uuid.uuid4())
        node = client.create_available_node(deploy_interface='fake')
        client.ok('PATCH', '/nodes/%s' % node, [
            {'op': 'add', 'path': '/instance_uuid', 'value': instance}])
        say('node %s associated with instance %s; the driver reads %s' % (
            node, instance, ', '.join(FIELDS)))
        with api_proxy.ApiProxy(ironic.url) as proxy:
            ok.append(timed_case(proxy, instance, args.timeout, None))
            if args.retries:
                ok.append(timed_case(proxy, instance, args.timeout,
                                     args.retries))
            say('timeout set: %.1f s in all, starting Ironic included' % (
                time.monotonic() - t0))
            if args.unset_for > 0:
                ok.append(unset_case(proxy, instance, args.unset_for))
    say('%s in %.1f s' % ('as expected' if all(ok) else 'NOT as expected',
                          time.monotonic() - t0))
    return 0 if all(ok) else 1


if __name__ == '__main__':
    sys.exit(main())
