"""The API proxy of the real-Ironic API outage scenarios
(``novaseries/ironic/api_proxy.py``), against a small local HTTP
server standing in for Ironic's API (127.0.0.1 only)."""

import http.client
import http.server
import json
import socket
import threading
import unittest

from novaseries.ironic import api_proxy


class _Upstream(http.server.BaseHTTPRequestHandler):
    """Echoes the request as JSON (status 200, or 404 for /missing)."""

    protocol_version = 'HTTP/1.1'

    def log_message(self, format, *args):
        pass

    def _echo(self):
        length = int(self.headers.get('Content-Length') or 0)
        body = self.rfile.read(length).decode() if length else None
        self.server.seen.append((self.command, self.path))
        data = json.dumps({'method': self.command, 'path': self.path,
                           'host': self.headers['Host'], 'body': body,
                           'version': self.headers.get(
                               'X-OpenStack-Ironic-API-Version')}).encode()
        self.send_response(404 if self.path == '/missing' else 200)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_PUT = do_PATCH = do_POST = do_DELETE = _echo


class ApiProxyTest(unittest.TestCase):

    def setUp(self):
        self.upstream = http.server.ThreadingHTTPServer(('127.0.0.1', 0),
                                                        _Upstream)
        self.upstream.seen = []
        threading.Thread(target=self.upstream.serve_forever,
                         daemon=True).start()
        self.addCleanup(self.upstream.server_close)
        self.addCleanup(self.upstream.shutdown)
        self.proxy = api_proxy.ApiProxy(
            'http://127.0.0.1:%d' % self.upstream.server_address[1]).start()
        self.addCleanup(self.proxy.stop)

    def request(self, method='GET', path='/v1/nodes', body=None,
                headers=None):
        conn = http.client.HTTPConnection('127.0.0.1', self.proxy.port,
                                          timeout=10)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            resp = conn.getresponse()
            return resp.status, dict(resp.getheaders()), resp.read()
        finally:
            conn.close()

    def send(self, path='/v1/nodes'):
        """A raw client socket that sent one GET (waits for no answer)."""
        sock = socket.create_connection(('127.0.0.1', self.proxy.port),
                                        timeout=10)
        self.addCleanup(sock.close)
        sock.sendall(b'GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n'
                     b'X-OpenStack-Ironic-API-Version: 1.89\r\n\r\n'
                     % path.encode())
        return sock

    def assertNoAnswer(self, sock, seconds=0.3):
        """Nothing comes on ``sock`` within ``seconds``, and it is still
        open."""
        sock.settimeout(seconds)
        with self.assertRaises(socket.timeout):
            data = sock.recv(1024)
            self.fail('an answer or the end of the connection: %r' % data)

    def assertClosedUnanswered(self, sock):
        """``sock`` ends (within 5 s) without a byte of an answer."""
        sock.settimeout(5)
        self.assertEqual(b'', sock.recv(1024))

    def test_listens_on_the_loopback_only(self):
        self.assertTrue(self.proxy.url.startswith('http://127.0.0.1:'))
        self.assertNotEqual(0, self.proxy.port)

    def test_refuses_an_upstream_off_the_loopback(self):
        for url in ('http://192.0.2.1:6385', 'http://example.com',
                    'https://127.0.0.1:6385'):
            with self.assertRaises(ValueError):
                api_proxy.ApiProxy(url)

    def test_passes_requests_through(self):
        status, headers, data = self.request(
            'PATCH', '/v1/nodes/n1?x=1', body=b'[{"op": "add"}]',
            headers={'X-OpenStack-Ironic-API-Version': '1.89',
                     'Content-Type': 'application/json'})
        self.assertEqual(200, status)
        echo = json.loads(data)
        self.assertEqual(('PATCH', '/v1/nodes/n1?x=1', '[{"op": "add"}]',
                          '1.89'), (echo['method'], echo['path'],
                                    echo['body'], echo['version']))
        # the Host header is the proxy's: Ironic's links name the proxy
        self.assertEqual('127.0.0.1:%d' % self.proxy.port, echo['host'])
        self.assertEqual('close', headers['Connection'])
        self.assertEqual(404, self.request(path='/missing')[0])
        self.assertEqual(2, self.proxy.stats['forwarded'])

    def test_down_answers_503_and_tells_the_first_refusal(self):
        events = []
        self.proxy.down(503, on_first_refusal=lambda: events.append(
            self.proxy.answer))
        self.assertFalse(self.proxy.first_refused.is_set())
        status, _, data = self.request()
        self.assertEqual(503, status)
        self.assertIn('503 Service Unavailable',
                      json.loads(json.loads(data)['error_message'])[
                          'faultstring'])
        self.assertTrue(self.proxy.first_refused.is_set())
        self.assertEqual(503, self.request()[0])
        # the callback ran once, before the first refusal was sent
        self.assertEqual([503], events)
        self.assertEqual([], self.upstream.seen)
        self.proxy.up()
        self.assertEqual(200, self.request()[0])
        self.assertEqual({'forwarded': 1, 'refused': 2, 'upstream_errors': 0,
                          'outages': 1}, self.proxy.stats)

    def test_back_on_the_first_refusal(self):
        # what api-outage-within-retries does: only one request refused
        self.proxy.down(504, on_first_refusal=self.proxy.up)
        self.assertEqual(504, self.request()[0])
        self.assertEqual(200, self.request()[0])
        self.assertEqual(1, self.proxy.stats['refused'])

    def test_refused_connections_then_the_same_port_again(self):
        port = self.proxy.port
        self.proxy.down('refused')
        with self.assertRaises(ConnectionRefusedError):
            self.request()
        self.proxy.up()
        self.assertEqual(port, self.proxy.port)
        self.assertEqual(200, self.request()[0])
        # a new outage clears the event
        self.proxy.down(502)
        self.assertFalse(self.proxy.first_refused.is_set())
        self.assertEqual(502, self.request()[0])

    def test_hang_reads_the_request_and_never_answers(self):
        events = []
        self.proxy.down('hang', on_first_refusal=lambda: events.append(
            self.proxy.answer))
        sock = self.send()
        self.assertTrue(self.proxy.first_refused.wait(5))
        self.assertTrue(self.proxy.wait_held(1, 5))
        self.assertNoAnswer(sock)
        # read (counted), not passed on, held; the callback ran once
        self.assertEqual(['hang'], events)
        self.assertEqual([], self.upstream.seen)
        self.assertEqual(1, self.proxy.held)
        # an HTTP client with a short timeout gets no status line either
        conn = http.client.HTTPConnection('127.0.0.1', self.proxy.port,
                                          timeout=0.3)
        self.addCleanup(conn.close)
        conn.request('GET', '/v1/nodes/n1')
        with self.assertRaises(socket.timeout):
            conn.getresponse()
        self.assertTrue(self.proxy.wait_held(2, 5))
        self.assertEqual({'forwarded': 0, 'refused': 2, 'upstream_errors': 0,
                          'outages': 1}, self.proxy.stats)
        self.assertEqual(['hang'], events)

    def test_up_closes_held_connections_without_an_answer(self):
        self.proxy.down('hang')
        sock = self.send()
        self.assertTrue(self.proxy.wait_held(1, 5))
        self.assertNoAnswer(sock)
        self.proxy.up()
        self.assertClosedUnanswered(sock)
        self.assertTrue(self.proxy.wait_held(0, 5))
        self.assertEqual(200, self.request()[0])
        self.assertEqual([('GET', '/v1/nodes')], self.upstream.seen)

    def test_a_held_connection_ends_when_the_client_goes_away(self):
        self.proxy.down('hang')
        sock = self.send()
        self.assertTrue(self.proxy.wait_held(1, 5))
        sock.close()
        self.assertTrue(self.proxy.wait_held(0, 5))
        # the outage goes on: the next request is held too
        self.assertEqual('hang', self.proxy.answer)
        sock = self.send()
        self.assertTrue(self.proxy.wait_held(1, 5))
        self.assertNoAnswer(sock)
        self.assertEqual(2, self.proxy.stats['refused'])

    def test_stop_or_a_new_outage_closes_held_connections(self):
        self.proxy.down('hang')
        first = self.send()
        self.assertTrue(self.proxy.wait_held(1, 5))
        self.proxy.down(503)
        self.assertClosedUnanswered(first)
        self.assertEqual(503, self.request()[0])
        self.proxy.down('hang')
        self.assertFalse(self.proxy.first_refused.is_set())
        held = [self.send(), self.send('/v1/nodes/n1')]
        self.assertTrue(self.proxy.wait_held(2, 5))
        self.proxy.stop()
        for sock in held:
            self.assertClosedUnanswered(sock)
        self.assertTrue(self.proxy.wait_held(0, 5))

    def test_hang_back_on_the_first_refusal(self):
        # the callback may end the outage: the held request is closed
        self.proxy.down('hang', on_first_refusal=self.proxy.up)
        self.assertClosedUnanswered(self.send())
        self.assertEqual(200, self.request()[0])
        self.assertEqual(1, self.proxy.stats['refused'])

    def test_unknown_answer(self):
        with self.assertRaises(ValueError):
            self.proxy.down(500)
        self.assertIsNone(self.proxy.answer)

    def test_upstream_gone_is_502(self):
        self.upstream.shutdown()
        self.upstream.server_close()
        self.assertEqual(502, self.request()[0])
        self.assertEqual(1, self.proxy.stats['upstream_errors'])


if __name__ == '__main__':
    unittest.main()
