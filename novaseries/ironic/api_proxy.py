"""A switchable pass-through proxy between nova-compute and a real Ironic
API, for the main job's API outage scenarios against a real Ironic
(``run --ironic real``, bug BBBBBBB).

:class:`ApiProxy` listens on 127.0.0.1 only (an ephemeral port by
default) and passes every request to the Ironic API it was given, which
must be on the loopback too: it never sends traffic anywhere else.  Each
request is one connection (``Connection: close``), so that what the proxy
does applies to the next request at once, not to a kept-alive one.  The
``Host`` header is passed unchanged, so Ironic's version documents name
the proxy, and a client that follows their links stays behind it.

While "down" (:meth:`ApiProxy.down`) it answers instead of Ironic:

* ``502``, ``503`` or ``504``: that HTTP status with an Ironic-style error
  body (a load balancer with no ironic-api behind it); Ironic never sees
  the request;
* ``'refused'``: it closes its listening socket, so that a connection is
  refused by the kernel (ECONNREFUSED, as while ironic-api restarts); a
  connection it had accepted already is closed without an answer.
  :meth:`ApiProxy.up` listens again on the same port;
* ``'hang'``: it accepts the connection and reads the request, then sends
  nothing and keeps the connection open (an API that accepts and never
  answers: a hung ironic-api worker, a load balancer with a dead
  backend and no timeout of its own); Ironic never sees the request.  A
  held connection ends when the client closes it (the proxy notices
  within :data:`HANG_POLL` seconds) or when the outage ends: :meth:`ApiProxy.up` (and
  :meth:`ApiProxy.stop`) close every held connection without an answer,
  so a client still waiting then sees the connection closed (as after a
  restart of the API behind a load balancer), not a late answer.
  :attr:`ApiProxy.held` counts the connections held now.

A new :meth:`ApiProxy.down` ends the outage before it too (held
connections are closed).

It counts what it refused (held requests too) and tells when it refused
the first request of an outage (:attr:`ApiProxy.first_refused`, and the
``on_first_refusal`` callback of :meth:`ApiProxy.down`, which runs before
the refusal is sent, or the connection is held, and may call
:meth:`ApiProxy.up`); a refused connection never reaches the proxy, so
with ``'refused'`` only a connection accepted before the outage can fire
it.

Standard library only.
"""

import http.client
import http.server
import json
import select
import socket
import threading
import urllib.parse

#: What :meth:`ApiProxy.down` may answer.
ANSWERS = (502, 503, 504, 'refused', 'hang')
#: Seconds between two looks of a held connection at its client.
HANG_POLL = 0.05
#: Headers of one connection, not passed on (Content-Length is set anew).
HOP_BY_HOP = frozenset(['connection', 'keep-alive', 'proxy-authenticate',
                        'proxy-authorization', 'te', 'trailer', 'trailers',
                        'transfer-encoding', 'upgrade', 'content-length'])
#: The proxy's own response headers (not copied from Ironic's answer).
OWN = frozenset(['server', 'date'])
#: The only upstream hosts the proxy passes requests to.
LOOPBACK = frozenset(['127.0.0.1', 'localhost', '::1'])


def error_body(status, reason):
    """An Ironic-style error body (``error_message``, a JSON string of
    ``faultstring``...), as ``rest.faultstring`` reads it."""
    return json.dumps({'error_message': json.dumps({
        'faultstring': '%s %s (the harness\'s API proxy: the Bare Metal '
                       'API is down)' % (status, reason),
        'faultcode': 'Server', 'debuginfo': None})}).encode()


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    proxy = None


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def log_message(self, format, *args):
        pass

    def _pass(self):
        proxy = self.server.proxy
        self.close_connection = True
        length = int(self.headers.get('Content-Length') or 0)
        body = self.rfile.read(length) if length else None
        answer, released = proxy._refusal(self.command, self.path)
        if answer == 'refused':
            return      # closed without an answer
        if answer == 'hang':
            proxy._hold(self.connection, released)
            return      # closed without an answer
        if answer is not None:
            reason = http.HTTPStatus(answer).phrase
            self._reply(answer, reason, [('Content-Type', 'application/json')],
                        error_body(answer, reason))
            return
        headers = {k: v for k, v in self.headers.items()
                   if k.lower() not in HOP_BY_HOP}
        conn = http.client.HTTPConnection(proxy.upstream_host,
                                          proxy.upstream_port,
                                          timeout=proxy.timeout)
        try:
            conn.request(self.command, self.path, body=body, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
        except OSError as e:
            proxy._count('upstream_errors')
            self._reply(502, 'Bad Gateway',
                        [('Content-Type', 'application/json')],
                        error_body(502, 'Bad Gateway: %s' % e))
            return
        finally:
            conn.close()
        self._reply(resp.status, resp.reason,
                    [(k, v) for k, v in resp.getheaders()
                     if k.lower() not in HOP_BY_HOP | OWN], data)

    def _reply(self, status, reason, headers, data):
        self.send_response(status, reason)
        for key, value in headers:
            self.send_header(key, value)
        self.send_header('Content-Length', str(len(data)))
        self.send_header('Connection', 'close')
        self.end_headers()
        if self.command != 'HEAD':
            self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _pass


class ApiProxy:
    """A pass-through proxy to ``upstream`` that can play an outage.

    :param upstream: the Ironic API's URL (``http://127.0.0.1:PORT``).
    :param port: where to listen on 127.0.0.1 (0: an ephemeral port).
    :param timeout: seconds a request to Ironic may take.
    :raises ValueError: ``upstream`` is not on the loopback.
    """

    HOST = '127.0.0.1'

    def __init__(self, upstream, port=0, timeout=60.0):
        parts = urllib.parse.urlsplit(upstream)
        if parts.scheme != 'http' or parts.hostname not in LOOPBACK:
            raise ValueError('the API proxy only passes requests to an '
                             'http:// API on the loopback, not %r' % upstream)
        self.upstream_host = parts.hostname
        self.upstream_port = parts.port or 80
        self.port = port
        self.timeout = timeout
        self._lock = threading.Lock()
        self._answer = None
        self._on_first = None
        self._server = None
        #: Set when the current 'hang' outage ends (a new one per outage).
        self._released = threading.Event()
        self._held = 0
        self._held_changed = threading.Condition(self._lock)
        #: Set when the proxy refused the first request of the current
        #: outage (cleared by :meth:`down`).
        self.first_refused = threading.Event()
        #: Counts: ``forwarded`` requests, ``refused`` ones (answered
        #: instead of Ironic, closed unanswered, or held by ``'hang'``),
        #: ``upstream_errors``, ``outages`` (calls of down()).
        self.stats = {'forwarded': 0, 'refused': 0, 'upstream_errors': 0,
                      'outages': 0}

    @property
    def url(self):
        """The proxy's URL (Nova's ``[ironic] endpoint_override``)."""
        return 'http://%s:%d' % (self.HOST, self.port)

    @property
    def answer(self):
        """What the proxy answers now: None (passes requests on), or an
        answer of :data:`ANSWERS`."""
        with self._lock:
            return self._answer

    @property
    def held(self):
        """How many connections a ``'hang'`` outage holds now."""
        with self._lock:
            return self._held

    def wait_held(self, count, timeout):
        """Wait until :attr:`held` is ``count``; returns whether it is."""
        with self._held_changed:
            return self._held_changed.wait_for(lambda: self._held == count,
                                               timeout)

    def start(self):
        """Listen; returns the proxy."""
        self._listen()
        return self

    def stop(self):
        """Stop listening (for good)."""
        with self._lock:
            self._answer = None
            self._on_first = None
            self._released.set()
        self._close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def down(self, answer=503, on_first_refusal=None):
        """The API is unreachable from now on, until :meth:`up`.

        :param answer: 502, 503 or 504 (that HTTP answer),
            ``'refused'`` (connections refused) or ``'hang'`` (requests
            read and never answered, until :meth:`up` closes them).
        :param on_first_refusal: called (no arguments) when the proxy
            refuses the first request of this outage, in the thread that
            serves it, before the refusal is sent (for ``'hang'``: before
            the connection is held); it may call :meth:`up`.
        :raises ValueError: an unknown answer.
        """
        if answer not in ANSWERS:
            raise ValueError('no API answer %r (one of %s)' % (answer,
                                                               ANSWERS))
        with self._lock:
            self._answer = answer
            self._on_first = on_first_refusal
            self.first_refused.clear()
            self.stats['outages'] += 1
            self._released.set()
            self._released = threading.Event()
        if answer == 'refused':
            self._close()

    def up(self):
        """The API is reachable again (listening again, on the same port,
        after ``'refused'``; the connections held by ``'hang'`` closed
        without an answer)."""
        with self._lock:
            self._answer = None
            self._on_first = None
            self._released.set()
            closed = self._server is None
        if closed:
            self._listen()

    def _listen(self):
        server = _Server((self.HOST, self.port), _Handler)
        server.proxy = self
        self.port = server.server_address[1]
        threading.Thread(target=server.serve_forever, name='api-proxy',
                         kwargs={'poll_interval': 0.05}, daemon=True).start()
        with self._lock:
            self._server = server

    def _close(self):
        with self._lock:
            server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()

    def _count(self, what):
        with self._lock:
            self.stats[what] += 1

    def _refusal(self, method, path):
        """What to answer this request instead of Ironic (None: pass it
        on), and the event that ends this outage; runs
        ``on_first_refusal`` for the first refused request."""
        with self._lock:
            answer = self._answer
            released = self._released
            if answer is None:
                self.stats['forwarded'] += 1
                return None, released
            self.stats['refused'] += 1
            hook = None
            if not self.first_refused.is_set():
                self.first_refused.set()
                hook, self._on_first = self._on_first, None
        if hook is not None:
            hook()
        return answer, released

    def _hold(self, sock, released):
        """Send nothing on ``sock`` until ``released`` is set or the
        client closed its side."""
        with self._held_changed:
            self._held += 1
            self._held_changed.notify_all()
        try:
            while not released.wait(HANG_POLL):
                if _client_gone(sock):
                    break
        finally:
            with self._held_changed:
                self._held -= 1
                self._held_changed.notify_all()


def _client_gone(sock):
    """Whether the client closed ``sock`` (end of file or an error)."""
    try:
        readable = select.select([sock], [], [], 0)[0]
        return bool(readable) and not sock.recv(1, socket.MSG_PEEK)
    except OSError:
        return True
