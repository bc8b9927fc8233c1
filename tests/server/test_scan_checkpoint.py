"""SCAN's cursor 0 runs its checkpoint off the I/O thread.

Cursor 0 first writes every key the Hot Cache holds dirty into the Canonical Store. With
`--router all-hot` every SET stays dirty, so after a large load that replay takes a long time
(hundreds of milliseconds here, seconds with millions of keys). It runs on the server's
background thread and SCAN's reply is deferred: the other clients of the same I/O thread
(`--threads 1`: there is only one) are answered meanwhile, and the SCAN client's own iteration
still returns every key.
"""

import select

import pytest

from resp_client import Conn, encode_many, set_keys
from server_util import IS_REDIS, poll_until

pytestmark = pytest.mark.skipif(IS_REDIS, reason="duet's Hot Cache checkpoint")

KEYS = 200_000


def load(port, n):
    """SETs key:0..n-1 in pipelined chunks and checks every reply."""
    assert set_keys(port, n, lambda i: f"v{i}") == []


def readable(sock):
    return bool(select.select([sock], [], [], 0)[0])


def test_scan_zero_does_not_hold_up_its_io_threads_other_clients(server_factory):
    s = server_factory(threads=1, extra=["--router", "all-hot"])
    load(s.port, KEYS)
    scanner, other = Conn(s.port, timeout=60), Conn(s.port, timeout=60)
    try:
        scanner.send(encode_many([("SCAN", "0", "COUNT", "1000")]))
        # Ping on the same I/O thread until the SCAN answers. Before the checkpoint moved off the
        # I/O thread, no PING sent after the SCAN was read could be answered before it.
        pongs_before_scan = 0
        while not readable(scanner.sock) and not scanner.pending_bytes():
            assert other.call("PING") == "PONG"
            pongs_before_scan += 1
        cursor, keys = scanner.read_reply()
        assert pongs_before_scan >= 20, f"only {pongs_before_scan} PINGs were answered during the checkpoint"
        # The iteration goes on from that reply and returns every key once at least.
        seen = set(keys)
        while cursor != b"0":
            cursor, keys = scanner.call("SCAN", cursor, "COUNT", "1000")
            seen.update(keys)
        assert len(seen) == KEYS
        assert seen == {f"key:{i}".encode() for i in range(KEYS)}
    finally:
        scanner.close()
        other.close()


def test_scan_zero_keeps_the_connections_reply_order(server_factory):
    """A deferred SCAN's reply still goes out in its place: commands pipelined after it answer
    after it, in order."""
    s = server_factory(threads=1, extra=["--router", "all-hot"])
    load(s.port, 20_000)
    with Conn(s.port, timeout=60) as c:
        replies = c.pipeline([("SET", "after", "1"), ("SCAN", "0", "COUNT", "5"), ("GET", "after"),
                              ("SCAN", "0", "MATCH", "nothing-matches-*"), ("PING",)])
        assert replies[0] == "OK"
        assert isinstance(replies[1], list) and len(replies[1]) == 2
        assert replies[2] == b"1"
        assert replies[3][1] == []
        assert replies[4] == "PONG"


def background_tasks(port):
    with Conn(port) as c:
        text = c.call("INFO", "duet").decode()
    return int(dict(line.split(":", 1) for line in text.splitlines() if ":" in line)["background_tasks"])


def test_shutdown_answers_a_scan_given_to_the_background(server_factory):
    """A SCAN 0 whose checkpoint was queued when the server is told to stop is still answered,
    and so are the commands pipelined behind it, before the connection closes."""
    s = server_factory(threads=1, extra=["--router", "all-hot"])
    load(s.port, KEYS)
    before = background_tasks(s.port)
    c = Conn(s.port, timeout=60)
    c.send(encode_many([("SCAN", "0"), ("PING",)]))
    poll_until(lambda: background_tasks(s.port) > before, 30, what="SCAN 0 given to the background thread")
    s.stop()
    data, closed = c.read_until_close(timeout=30)
    c.close()
    assert closed
    assert data.startswith(b"*2\r\n") and data.endswith(b"+PONG\r\n"), (data[:80], data[-80:])
