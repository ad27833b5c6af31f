# -*- coding: utf-8 -*-
"""What the whole-stack player of pike (``play_pike_stack``) puts into
pike's Nova: fixtures that count the builds in flight (:class:`Builds`),
record the faults and ERROR saves (:class:`Records`), give the server its
port (:class:`PortNetwork`) and its deploy the Ironic's HTTP image
(:class:`HttpImage`); and the wait and the log lines it uses.  Python 2.7
code, imported by bare name (this folder is the run's top-level
directory).
"""

import re
import time

import fixtures

from nova.compute import manager as compute_manager
from nova.compute import utils as compute_utils
from nova.conductor import manager as conductor_manager
from nova import db as nova_db
from nova.network import model as network_model
from nova.tests import fixtures as nova_fixtures
from nova.virt.ironic import patcher

from e2e_report import green_stacks

#: Seconds a wait of the player may take (a build to settle, Ironic).
SETTLE_TIMEOUT = 90

#: The log lines an observation keeps: INFO and up of these loggers, as
#: ``LEVEL [logger] message`` (the main job's player's ``watch.log_lines``).
LOGGERS = ('nova.virt.ironic.driver', 'nova.compute.manager')
_LOG_LINE = re.compile(r'^\S+ \S+ (INFO|WARNING|ERROR|CRITICAL) '
                       r'\[(%s)\] (.*)$' % '|'.join(
                           re.escape(n) for n in LOGGERS))


def log_lines(output):
    """The first line of each record of :data:`LOGGERS` at INFO and up."""
    return ['%s [%s] %s' % m.groups() for m in
            (_LOG_LINE.match(line) for line in output.splitlines()) if m]


class Builds(fixtures.Fixture):
    """Counts what is in flight (:attr:`inflight`): nova-compute's builds,
    from the start of ``_do_build_and_run_instance`` to the end of its
    locked caller (which removes a failed build's allocation, then calls
    ``_build_failed``), its ``terminate_instance`` (a delete's, which
    removes the allocation after the server is gone from the API) and the
    conductor's ``build_instances`` (a reschedule: :attr:`rescheduled`
    counts those that ended).  Runs ``on_reschedule`` when the conductor
    takes a failed build back to schedule it again, once nova-compute's
    build has ended."""

    def __init__(self):
        super(Builds, self).__init__()
        self.inflight = 0
        self.started = 0
        self.ended = 0
        self.rescheduled = 0
        self.results = []
        self.on_reschedule = None

    def settled(self):
        """Nothing in flight, a build started, and every build handed
        back for a reschedule taken back by the conductor (its cast may
        not have reached the conductor yet)."""
        return (not self.inflight and self.started > 0 and
                self.results.count('rescheduled') <= self.rescheduled)

    def _setUp(self):
        builds = self
        manager = compute_manager.ComputeManager
        real_do = manager._do_build_and_run_instance
        real_ends = manager._build_failed, manager._build_succeeded
        real_bi = conductor_manager.ComputeTaskManager.build_instances
        real_terminate = manager.terminate_instance

        def do_build(manager, *args, **kwargs):
            builds.inflight += 1
            builds.started += 1
            result = real_do(manager, *args, **kwargs)
            builds.results.append(result)
            return result

        def ended(real):
            def end(manager, *args, **kwargs):
                try:
                    return real(manager, *args, **kwargs)
                finally:
                    builds.ended += 1
                    builds.inflight -= 1
            return end

        def build_instances(manager, context, instances, image,
                            filter_properties, *args, **kwargs):
            builds.inflight += 1
            try:
                retry = (filter_properties or {}).get('retry') or {}
                if retry.get('num_attempts', 0) >= 1 and builds.on_reschedule:
                    hook, builds.on_reschedule = builds.on_reschedule, None
                    started = builds.started
                    wait_until('the end of the failed build',
                               lambda: builds.ended >= started)
                    hook()
                return real_bi(manager, context, instances, image,
                               filter_properties, *args, **kwargs)
            finally:
                builds.rescheduled += 1
                builds.inflight -= 1

        def terminate_instance(manager, *args, **kwargs):
            builds.inflight += 1
            try:
                return real_terminate(manager, *args, **kwargs)
            finally:
                builds.inflight -= 1

        for name, func in (('_do_build_and_run_instance', do_build),
                           ('_build_failed', ended(real_ends[0])),
                           ('_build_succeeded', ended(real_ends[1])),
                           ('terminate_instance', terminate_instance)):
            self.useFixture(fixtures.MonkeyPatch(
                'nova.compute.manager.ComputeManager.' + name, func))
        self.useFixture(fixtures.MonkeyPatch(
            'nova.conductor.manager.ComputeTaskManager.build_instances',
            build_instances))


def wait_until(what, ready, timeout=SETTLE_TIMEOUT):
    """Poll ``ready()`` (every 0.05 s) until it returns a true value.

    :returns: that value.
    :raises AssertionError: not within ``timeout`` seconds, with the green
        threads' stacks.
    """
    deadline = time.time() + timeout
    while True:
        value = ready()
        if value:
            return value
        if time.time() > deadline:
            raise AssertionError('no %s in %d s; the green threads:\n%s'
                                 % (what, timeout, green_stacks()))
        time.sleep(0.05)


class Records(fixtures.Fixture):
    """Records each instance fault Nova creates through
    ``compute.utils.add_instance_fault_from_exc`` (nova-compute's and the
    conductor's), as ``(instance uuid, message)`` (:attr:`faults`), and
    the uuid of each save of vm_state ERROR (:attr:`error_saves`)."""

    def _setUp(self):
        self.faults = []
        self.error_saves = []
        real_fault = compute_utils.add_instance_fault_from_exc
        real_update = nova_db.instance_update_and_get_original

        def add_fault(context, instance, fault, *args, **kwargs):
            self.faults.append((instance.uuid, kwargs.get('fault_message') or
                                getattr(fault, 'format_message',
                                        lambda: str(fault))()))
            return real_fault(context, instance, fault, *args, **kwargs)

        def update(context, instance_uuid, values, *args, **kwargs):
            if values.get('vm_state') == 'error':
                self.error_saves.append(instance_uuid)
            return real_update(context, instance_uuid, values, *args,
                               **kwargs)

        self.useFixture(fixtures.MonkeyPatch(
            'nova.compute.utils.add_instance_fault_from_exc', add_fault))
        self.useFixture(fixtures.MonkeyPatch(
            'nova.db.instance_update_and_get_original', update))


class PortNetwork(fixtures.Fixture):
    """nova-compute's network allocation, as pike's functional tests stub
    it (``fake_network.set_stub_network_methods``), but giving the server
    the port it was booted with (the VIF the driver attaches to the node,
    in its info cache as Neutron's API puts it there: the build's clean-up
    reads it) and recording the port's device_id as Nova binds it (the
    instance) and unbinds it (None): :attr:`port_device`, port id ->
    device_id.  Pike's ``NeutronFixture`` is a mock client that keeps
    nothing of either."""

    def _setUp(self):
        self.port_device = {}
        ports = {}  # instance uuid -> its port

        def allocate(manager, context, instance, requested_networks, *args,
                     **kwargs):
            port = next((r.port_id for r in requested_networks or ()
                         if getattr(r, 'port_id', None)), None)
            vifs = []
            if port:
                ports[instance.uuid] = port
                self.port_device[port] = instance.uuid
                vifs.append(network_model.VIF(
                    id=port, address=nova_fixtures.NeutronFixture.port_1[
                        'mac_address'],
                    network=network_model.Network(
                        id=nova_fixtures.NeutronFixture.network_1['id'],
                        bridge=None, label='pike-stack', subnets=[])))
            nw_info = network_model.NetworkInfo(vifs)
            instance.info_cache.network_info = nw_info
            instance.info_cache.save()
            return network_model.NetworkInfoAsyncWrapper(lambda: nw_info)

        def deallocate(manager, context, instance, *args, **kwargs):
            port = ports.get(instance.uuid)
            if port:
                self.port_device[port] = None

        self.useFixture(fixtures.MonkeyPatch(
            'nova.compute.manager.ComputeManager._allocate_network',
            allocate))
        self.useFixture(fixtures.MonkeyPatch(
            'nova.compute.manager.ComputeManager._deallocate_network',
            deallocate))


class HttpImage(fixtures.Fixture):
    """The deploy's ``image_source`` (pike's API takes a Glance uuid,
    which the Ironic cannot fetch) replaced by the Ironic's HTTP image
    ``url``, with its ``md5``, on its way to Ironic.  :attr:`first`, when
    set, is the image of the next deploy only (a missing one fails it);
    :attr:`deploys` lists the nodes deployed, in order."""

    def __init__(self, url, md5):
        super(HttpImage, self).__init__()
        self.url, self.md5 = url, md5
        self.first = None
        self.deploys = []

    def _setUp(self):
        real = patcher.GenericDriverFields.get_deploy_patch
        image = self

        def get_deploy_patch(fields, instance, image_meta, flavor,
                             *args, **kwargs):
            patch = real(fields, instance, image_meta, flavor, *args,
                         **kwargs)
            url, image.first = image.first or image.url, None
            image.deploys.append(fields.node.uuid)
            for op in patch:
                if op['path'] == '/instance_info/image_source':
                    op['value'] = url
            patch.append({'op': 'add', 'path': '/instance_info/image_checksum',
                          'value': image.md5})
            return patch

        self.useFixture(fixtures.MonkeyPatch(
            'nova.virt.ironic.patcher.GenericDriverFields.get_deploy_patch',
            get_deploy_patch))
