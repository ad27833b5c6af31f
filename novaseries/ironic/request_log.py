"""The request recording of a real Ironic behind the scenarios
(``run --ironic real``): every request of Nova's baremetal connection, of
the operator's REST client and of the observer (:class:`Watcher`), with
what it was (:func:`classify`), who sent it and why; the driver's polls
counted as the fake Ironic counts them, and the scenario steps they fire;
the nodes' state history; :func:`dump` writes them as JSON lines.

:class:`RequestRecorder` is the recording half of
``real_backend.RealIronicBackend`` (which holds the state it uses: the
lock, the records, the call log, the poll counters, the hooks, the
history); standard library only (the player imports it in Nova's venv).
"""

import collections
import json
import sys
import threading
import time
import traceback
import urllib.parse

from novaseries.ironic import rest
from novaseries.scenarios.scenario import DEPLOY_LOOP, TEARDOWN_LOOP

#: One driver call, as the fixture logs it: openstacksdk proxy method name,
#: node id (None when the request names none).
Call = collections.namedtuple('Call', 'method node')

#: Seconds the observer waits between two reads of every node.
WATCH_INTERVAL = 0.25
#: The provision state a node's history shows once the node is deleted:
#: ``(DELETED, None)``.
DELETED = '<deleted>'


def classify(method, path, frames=()):
    """The openstacksdk proxy name of a baremetal request, and its node.

    :param method: HTTP method.
    :param path: the request's path with its query (``/v1/nodes?...``).
    :param frames: qualified names of the ironic driver's frames on the
        stack, outermost first (to tell ``update_node`` from
        ``patch_node``: both send PATCH).
    :returns: ``(name, node id or None)``; ``name`` is ``request`` for a
        request this table does not know, and ``discovery`` (no node) for
        the API's version documents (``/``, ``/v1``).
    """
    parts = urllib.parse.urlsplit(path).path.rstrip('/').split('/')
    parts = [p for p in parts if p]
    if parts[:1] == ['v1']:
        parts = parts[1:]
    if not parts:
        return 'discovery', None
    kind = parts[0]
    node = parts[1] if kind == 'nodes' and len(parts) > 1 and \
        parts[1] != 'detail' else None
    tail = parts[2:] if node else []
    if kind == 'nodes' and node is None:
        return ('nodes' if method == 'GET' else 'create_node'), None
    if kind == 'nodes':
        if not tail:
            if method == 'GET':
                return 'get_node', node
            if method == 'PATCH':
                return ('update_node' if any(
                    '_remove_instance_info_from_node' in f for f in frames)
                    else 'patch_node'), node
            if method == 'DELETE':
                return 'delete_node', node
        elif tail == ['validate']:
            return 'validate_node', node
        elif tail == ['states', 'provision']:
            return 'set_node_provision_state', node
        elif tail == ['states', 'power']:
            return 'set_node_power_state', node
        elif tail[:1] == ['vifs']:
            return {'POST': 'attach_vif_to_node', 'DELETE':
                    'detach_vif_from_node'}.get(method, 'list_node_vifs'), node
        elif tail == ['maintenance']:
            return ('set_node_maintenance' if method == 'PUT' else
                    'unset_node_maintenance'), node
        return 'request', node
    names = {'ports': 'ports', 'portgroups': 'port_groups',
             'volume': 'volume_targets'}
    if method == 'GET' and kind in names:
        return names[kind], None
    return 'request', None


class RequestRecorder:
    """What :class:`real_backend.RealIronicBackend` records: every
    request, in the thread that sent it, the polls and the steps they
    fire, the nodes' history (a mixin: the backend's ``__init__`` makes
    the state these methods share)."""

    def requests(self):
        """Every request recorded so far (dicts, in the order of their
        answers): ``actor`` (``nova``, ``operator`` or ``observer``),
        ``t`` (s since the backend was made), ``dur_ms``, ``method``,
        ``path``, ``status``, ``faultstring``, ``microversion``, ``name``
        and ``node`` (:func:`classify`); Nova's also ``driver_call`` (the
        driver's frames, outermost first), ``manager_call``, ``thread``
        and ``loop`` (``deploy``/``teardown`` for a poll); the operator's
        ``why``."""
        with self._lock:
            return [dict(r) for r in self._records]

    def _add(self, rec):
        rec = dict(rec)
        t0, t1 = rec.pop('t0', None), rec.pop('t1', None)
        if t0 is not None:
            rec['t'] = round(t0 - self._start, 3)
            rec['dur_ms'] = round((t1 - t0) * 1000, 1)
        if 'name' not in rec:
            rec['name'], rec['node'] = classify(rec['method'], rec['path'])
        with self._lock:
            self._records.append(rec)

    def _operator_record(self, rec):
        self._add(dict(rec, actor='operator',
                       why=getattr(self._why, 'text', None)))

    def _record_session(self, rsession):
        """Record every request of a requests.Session (Nova's baremetal
        connection), in the sending thread."""
        if getattr(rsession, '_real_ironic_recorded', False):
            return
        send = rsession.send
        backend = self

        def recording_send(request, **kwargs):
            t0 = time.monotonic()
            try:
                resp = send(request, **kwargs)
            except Exception as e:
                backend._record_safely(request, None, type(e).__name__, t0,
                                       str(e))
                raise
            hooks = backend._record_safely(request, resp, resp.status_code,
                                           t0)
            backend._run_hooks(hooks)
            return resp

        rsession.send = recording_send
        rsession._real_ironic_recorded = True

    def _record_safely(self, request, resp, status, t0, error=None):
        """:meth:`_nova_request`; a failure of the recorder is kept in
        :attr:`errors`, never raised into Nova's request."""
        try:
            return self._nova_request(request, resp, status, t0, error)
        except Exception:
            self._failed('recording %s %s' % (
                request.method, request.path_url))
            return []

    def _run_hooks(self, hooks):
        """Run the steps a poll fired, in the polling thread; one that
        raises is kept in :attr:`errors` (and ``on_error`` called), not
        raised into Nova's request, and the next ones still run."""
        for fn, node in hooks:
            try:
                fn(node)
            except Exception:
                self._failed('a step after a poll of node %s' % node)

    def _failed(self, what):
        with self._lock:
            self.errors.append('%s:\n%s' % (what, traceback.format_exc()))
        if self.on_error is not None:
            self.on_error()

    def _nova_request(self, request, resp, status, t0, error=None):
        """Record one request of Nova's connection; count it as a poll.

        :returns: the steps it fires, ``[(action, node)]`` (run by the
            caller once the lock is released).
        """
        t1 = time.monotonic()
        frames, manager = driver_frames()
        name, node = classify(request.method, request.path_url, frames)
        body = None
        if resp is not None:
            try:
                body = resp.json() if resp.content else None
            except ValueError:
                body = None
        rec = {'actor': 'nova', 'method': request.method,
               'path': request.path_url, 'status': status,
               'microversion': request.headers.get(
                   'X-OpenStack-Ironic-API-Version'),
               'faultstring': rest.faultstring(body)
               if isinstance(status, int) and status >= 400 else None,
               'driver_call': ' > '.join(frames) or None,
               'manager_call': manager, 'thread': threading.current_thread().name,
               't0': t0, 't1': t1, 'name': name, 'node': node, 'loop': None,
               'error': error}
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(
            request.path_url).query)
        instance = (query.get('instance_uuid') or [None])[0]
        hooks = []
        with self._lock:
            if isinstance(body, dict) and name == 'nodes':
                for n in body.get('nodes', []):
                    if 'uuid' in n and 'provision_state' in n:
                        self._observe(n['uuid'], n, t0)
            elif isinstance(body, dict) and name == 'get_node' and \
                    'provision_state' in body:
                self._observe(node, body, t0)
            if instance and name == 'nodes':
                found = [n.get('uuid') for n in (body or {}).get('nodes', [])]
                if len(found) == 1:
                    self._instance_node[instance] = found[0]
                node = rec['node'] = self._instance_node.get(instance)
                hooks = self._count_poll(rec, instance, node,
                                         (body or {}).get('nodes') or [])
            if name == 'set_node_provision_state' and node and \
                    request_target(request) in ('active', 'rebuild'):
                # a new deploy (or rebuild) of the node starts its polls
                self._polls[(node, DEPLOY_LOOP)] = 0
                self._waiting[node] = 0
            self.call_log.append(Call(name, node))
            self._add(rec)      # (in order with call_log)
            self._cond.notify_all()
        return hooks

    def _count_poll(self, rec, instance, node, nodes):
        """Count a read by instance as a poll; return the hooks it fires
        as ``[(action, node)]`` (called with the lock held)."""
        if node is None:
            return []
        if getattr(self._loop, 'deploy_instance', None) == instance:
            loop = DEPLOY_LOOP
        elif self._teardowns[instance]:
            loop = TEARDOWN_LOOP
        else:
            return []
        rec['loop'] = loop
        self._polls[(node, loop)] += 1
        if loop == DEPLOY_LOOP:
            state = nodes[0].get('provision_state') if nodes else None
            if self._waiting[node] or state not in (
                    'deploying', None, 'available'):
                self._waiting[node] += 1
            # the fake's poll number of this poll: its first
            # deploying_reads polls see deploying, the next ones what
            # follows (wait call-back, ...)
            count = (self.deploying_reads + self._waiting[node]
                     if self._waiting[node] else
                     min(self._polls[(node, loop)], self.deploying_reads))
        else:
            count = self._polls[(node, loop)]
        fired = []
        for hook in list(self._hooks):
            want, hook_node, hook_loop, fn = hook
            if hook_loop != loop or hook_node not in (None, node):
                continue
            if count >= want:
                self._hooks.remove(hook)
                fired.append((fn, node))
        return fired

    def _observe(self, node, n, t0):
        """A read of the node, sent at ``t0``: its state for the history."""
        with self._lock:
            self._append_history(
                node, (n.get('provision_state'),
                       n.get('target_provision_state')), t0)

    def _append_history(self, node, entry, t0):
        if node not in self._history or t0 < self._history_t0.get(node, 0):
            return      # not this scenario's, or older than what was seen
        self._history_t0[node] = t0
        if self._history[node][-1] != entry:
            self._history[node].append(entry)


def request_target(request):
    """The ``target`` of a provision state request's body, or None."""
    try:
        return json.loads(request.body or b'{}').get('target')
    except (TypeError, ValueError, AttributeError):
        return None


def driver_frames():
    """(ironic driver frames on this thread's stack, outermost first, as
    qualified names; the innermost compute manager frame or None)."""
    driver, manager = [], None
    frame = sys._getframe(2)
    while frame is not None:
        code = frame.f_code
        name = getattr(code, 'co_qualname', code.co_name)
        fname = code.co_filename.replace('\\', '/')
        if fname.endswith('nova/virt/ironic/driver.py'):
            driver.append(name.replace('IronicDriver.', ''))
        elif manager is None and fname.endswith('nova/compute/manager.py'):
            manager = name.replace('ComputeManager.', '')
        frame = frame.f_back
    return list(reversed(driver)), manager


class Watcher:
    """Reads every node of the scenario every WATCH_INTERVAL seconds, for
    their history (the states Nova's reads do not see)."""

    def __init__(self, backend):
        self.backend = backend
        #: Reads that failed (the history may miss what they would have
        #: seen).
        self.errors = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name='real-ironic-watcher')

    def start(self):
        self._thread.start()

    def stop(self):
        self._stop.set()
        self._thread.join(10)

    def _run(self):
        b = self.backend
        fields = 'uuid,provision_state,target_provision_state'
        while not self._stop.wait(WATCH_INTERVAL):
            t0 = time.monotonic()
            try:
                status, body = b._observer.request(
                    'GET', '/nodes?fields=%s' % fields)
            except Exception as e:     # (a read may fail; the next may not)
                self.errors.append('%s: %s' % (type(e).__name__, e))
                continue
            if status != 200 or not isinstance(body, dict):
                continue
            seen = set()
            for n in body.get('nodes', []):
                seen.add(n['uuid'])
                b._observe(n['uuid'], n, t0)
            with b._lock:
                for node in b.node_ids:
                    if node not in seen:
                        b._append_history(node, (DELETED, None), t0)


def dump(records, path):
    """Write records as JSON lines."""
    with open(path, 'w') as f:
        for rec in records:
            f.write(json.dumps(rec, sort_keys=True, default=str) + '\n')
