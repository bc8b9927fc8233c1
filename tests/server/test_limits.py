"""Configured limits, each on a server of its own: maxclients (flag and CONFIG SET),
proto-max-bulk-len (flag and CONFIG SET), client-query-buffer-limit and maxmemory. Over a
limit the offending client is refused or disconnected; everyone else is served as before.

Redis refuses proto-max-bulk-len and client-query-buffer-limit below 1 MiB, so the tests use
1 MiB limits for both servers."""

import re
import resource
import subprocess

import pytest

from resp_client import Conn, ConnectionClosed, RespError, encode
from server_util import ServerProcess, poll_until

MiB = 1 << 20
MAXCLIENTS_ERR = b"-ERR max number of clients reached\r\n"


def _try_client(port):
    """Opens a connection and PINGs. Returns the Conn if served, or the bytes the server sent
    before closing if it refused the connection."""
    c = Conn(port, timeout=10)
    try:
        c.send(encode("PING"))
        first = c.read_reply_raw()
    except (ConnectionClosed, OSError):
        data = c.pending_bytes()
        c.close()
        return data
    if first == b"+PONG\r\n":
        return c
    rest, _ = c.read_until_close(10)
    c.close()
    return first + rest


def _served(port):
    """A served connection, or None when the server refused this one."""
    r = _try_client(port)
    return r if isinstance(r, Conn) else None


def test_maxclients(server_factory):
    """With --maxclients 4, four clients are served and a fifth gets '-ERR max number of clients
    reached' and is closed; once a client leaves, a new one is accepted; CONFIG SET maxclients 6
    admits two more at once."""
    s = server_factory(maxclients=4)
    held = []
    try:
        # The readiness probe's connection may still count for a moment: retry until served.
        for _ in range(4):
            held.append(poll_until(lambda: _served(s.port), 20, what="a connection under maxclients to be served"))
        held[0].call("SET", "k", "v")
        refused = _try_client(s.port)
        assert refused == MAXCLIENTS_ERR, f"5th client got {refused!r}"
        for c in held:
            assert c.call("PING") == "PONG"
        assert held[1].call("GET", "k") == b"v"
        held.pop(0).close()
        held.append(poll_until(lambda: _served(s.port), 20, what="a new client accepted after one left"))
        assert held[0].call("CONFIG", "SET", "maxclients", "6") == "OK"
        assert held[0].call("CONFIG", "GET", "maxclients") == [b"maxclients", b"6"]
        for _ in range(2):
            r = _try_client(s.port)
            assert isinstance(r, Conn), f"after CONFIG SET maxclients 6 a client got {r!r}"
            held.append(r)
        assert _try_client(s.port) == MAXCLIENTS_ERR
        assert held[-1].call("GET", "k") == b"v"
    finally:
        for c in held:
            c.close()


def test_maxclients_lowered_keeps_existing_clients(server_factory):
    """Lowering maxclients below the current count keeps the connected clients and refuses new
    ones."""
    s = server_factory()
    conns = [s.conn() for _ in range(5)]
    try:
        assert all(c.call("PING") == "PONG" for c in conns)
        assert conns[0].call("CONFIG", "SET", "maxclients", "2") == "OK"
        assert all(c.call("PING") == "PONG" for c in conns)
        assert _try_client(s.port) == MAXCLIENTS_ERR
    finally:
        for c in conns:
            c.close()


def test_proto_max_bulk_len_flag(server_factory):
    """With --proto-max-bulk-len 1 MiB, CONFIG GET reports it, a 1 MiB argument is accepted and
    a header announcing 1 MiB + 1 is a protocol error that closes the connection."""
    s = server_factory(proto_max_bulk_len=MiB)
    with s.conn() as c:
        assert c.call("CONFIG", "GET", "proto-max-bulk-len") == [b"proto-max-bulk-len", str(MiB).encode()]
        assert c.call("SET", "exact", b"e" * MiB) == "OK"
        assert c.call("STRLEN", "exact") == MiB
    with s.conn() as c:
        c.send(b"*3\r\n$3\r\nSET\r\n$4\r\nover\r\n$%d\r\n" % (MiB + 1))
        data, closed = c.read_until_close(10)
        assert data.startswith(b"-ERR Protocol error"), data[:200]
        assert closed
    with s.conn() as c:
        assert c.call("EXISTS", "over") == 0 and c.call("STRLEN", "exact") == MiB


def test_config_set_proto_max_bulk_len(server_factory):
    """CONFIG SET proto-max-bulk-len takes effect for the next request: a 2 MiB value is
    accepted, then refused as a protocol error after lowering the limit to 1 MiB, then accepted
    again after raising it."""
    s = server_factory()
    two = b"t" * (2 * MiB)
    with s.conn() as admin:
        assert admin.call("SET", "v1", two) == "OK"
        assert admin.call("CONFIG", "SET", "proto-max-bulk-len", str(MiB)) == "OK"
        assert admin.call("CONFIG", "GET", "proto-max-bulk-len") == [b"proto-max-bulk-len", str(MiB).encode()]
        with s.conn() as c:
            c.send(encode("SET", "v2", two))
            data, closed = c.read_until_close(10)
            assert data.startswith(b"-ERR Protocol error"), data[:200]
            assert closed
        # the admin connection is subject to the new limit too
        assert admin.call("SET", "v3", b"o" * MiB) == "OK"
        assert admin.call("CONFIG", "SET", "proto-max-bulk-len", str(4 * MiB)) == "OK"
        assert admin.call("SET", "v4", two) == "OK"
        assert admin.call("EXISTS", "v1", "v2", "v3", "v4") == 3
        assert admin.call("GET", "v1") == two


def test_config_set_proto_max_bulk_len_invalid(server_factory):
    """CONFIG SET proto-max-bulk-len with a non-number is an error and keeps the old value."""
    s = server_factory()
    with s.conn() as c:
        old = c.call("CONFIG", "GET", "proto-max-bulk-len")
        r = c.call("CONFIG", "SET", "proto-max-bulk-len", "lots")
        assert isinstance(r, RespError) and r.startswith("ERR"), r
        assert c.call("CONFIG", "GET", "proto-max-bulk-len") == old


def test_client_query_buffer_limit(server_factory):
    """With --client-query-buffer-limit 1 MiB, a 512 KiB request is served; a request of 3 MiB
    gets the connection closed (an -ERR reply first is allowed) without executing it; other
    clients are unaffected."""
    s = server_factory(client_query_buffer_limit=MiB)
    with s.conn() as c:
        assert c.call("CONFIG", "GET", "client-query-buffer-limit") == [b"client-query-buffer-limit",
                                                                         str(MiB).encode()]
        assert c.call("SET", "half", b"h" * (MiB // 2)) == "OK"
    with s.conn(timeout=30) as c:
        try:
            c.send(encode("SET", "toobig", b"x" * (3 * MiB)))
        except (BrokenPipeError, ConnectionResetError):
            pass
        data, closed = c.read_until_close(10)
        assert closed, "connection still open after exceeding client-query-buffer-limit"
        assert data == b"" or data.startswith(b"-ERR"), data[:200]
    with s.conn() as c:
        assert c.call("EXISTS", "toobig") == 0
        assert c.call("STRLEN", "half") == MiB // 2


def test_config_set_client_query_buffer_limit(server_factory):
    """CONFIG SET client-query-buffer-limit takes effect: a 3 MiB SET works under the default,
    and after lowering the limit to 1 MiB the same request gets its connection closed."""
    s = server_factory()
    big = b"q" * (3 * MiB)
    with s.conn(timeout=30) as admin:
        assert admin.call("SET", "before", big) == "OK"
        assert admin.call("CONFIG", "SET", "client-query-buffer-limit", str(MiB)) == "OK"
        with s.conn(timeout=30) as c:
            try:
                c.send(encode("SET", "after", big))
            except (BrokenPipeError, ConnectionResetError):
                pass
            data, closed = c.read_until_close(10)
            assert closed and (data == b"" or data.startswith(b"-ERR")), (data[:200], closed)
    with s.conn() as c:
        assert c.call("EXISTS", "before", "after") == 1


def test_client_query_buffer_limit_many_small_commands(server_factory):
    """A pipeline of many small commands totalling 4x the query-buffer limit is fine as long as
    the server consumes it as it arrives."""
    s = server_factory(client_query_buffer_limit=MiB)
    with s.conn(timeout=30) as c:
        cmds = [("SET", f"k{i % 100}", "v" * 100) for i in range(30000)]  # ~4 MiB of requests
        got = c.pipeline(cmds)
        assert all(r == "OK" for r in got)


def test_maxmemory(server_factory):
    """With --maxmemory 32 MiB, writing 1 MiB values eventually gets an error reply instead of
    OK; every acknowledged value reads back intact; DEL works; after deleting, writes succeed
    again."""
    s = server_factory(maxmemory=32 * MiB)
    ok = []
    err = None
    with s.conn(timeout=30) as c:
        for i in range(100):
            v = bytes([i]) * MiB
            r = c.call("SET", f"m{i}", v)
            if isinstance(r, RespError):
                err = r
                break
            assert r == "OK", r
            ok.append(i)
        assert err is not None, "100 MiB of values accepted under --maxmemory 32 MiB"
        assert ok, f"the very first 1 MiB write was refused: {err}"
        for i in ok:
            assert c.call("GET", f"m{i}") == bytes([i]) * MiB, i
        assert c.call("DEL", *[f"m{i}" for i in ok]) == len(ok)

        def write_ok():
            return c.call("SET", "after", b"a" * MiB) == "OK"

        poll_until(write_ok, 20, interval=0.1, what="a write to succeed after deleting everything")
        assert c.call("PING") == "PONG"


@pytest.mark.parametrize("databases", [4])
def test_databases_flag(server_factory, databases):
    """--databases 4 allows SELECT 0..3 and refuses SELECT 4."""
    s = server_factory(databases=databases)
    with s.conn() as c:
        assert c.call("SELECT", databases - 1) == "OK"
        r = c.call("SELECT", databases)
        assert isinstance(r, RespError) and r == "ERR DB index is out of range", r


def test_protocol_error_reply_arrives_while_client_still_sends(server_factory):
    """A request refused by the bulk-length limit while the client is still sending its body:
    the client must still read the -ERR reply and then see the connection close, not a reset
    that destroys the reply (the server drains the rest before closing). Repeated, since a
    reset races with the client's read."""
    s = server_factory(proto_max_bulk_len=MiB)
    body = b"z" * (4 * MiB)
    for i in range(20):
        with s.conn(timeout=30) as c:
            c.send(encode("SET", f"big{i}", body))
            data, closed = c.read_until_close(10)
            assert data.startswith(b"-ERR Protocol error"), (i, data[:200])
            assert closed
    with s.conn() as c:
        assert c.call("DBSIZE") == 0


def test_mset_with_a_value_over_max_value_bytes_writes_nothing(server_factory):
    """MSET whose one value is over max-value-bytes is refused whole, on a kv and a txn database:
    it used to write the other pairs of a kv database and reply an error."""
    s = server_factory(extra=["--database-kinds", "kv,1=txn", "--max-value-bytes", "1024"])
    with s.conn() as c:
        for db in (0, 1):
            assert c.call("SELECT", db) == "OK"
            for pairs in (["m1", "a", "m2", b"x" * 1025, "m3", "c"], ["n2", b"x" * 1025, "n1", "a"]):
                r = c.call("MSET", *pairs)
                assert isinstance(r, RespError) and "1025" in str(r), (db, r)
            assert c.call("MGET", "m1", "m2", "m3", "n1", "n2") == [None] * 5, db
            assert c.call("MSET", "m1", "a", "m2", b"x" * 1024) == "OK"
            assert c.call("MGET", "m1", "m2") == [b"a", b"x" * 1024]


def test_a_pipeline_sent_whole_before_its_large_replies_are_read_completes(server_factory):
    """redis-py sends a whole pipeline before reading a reply. With 20 MiB of replies the server
    used to stop reading the client at 4 MiB of unsent output while the client still wrote:
    both waited forever. By default (max-unread-output 0) the server reads on, as Redis does; a
    limit set live applies to later pipelines."""
    import redis
    s = server_factory()
    r = redis.Redis(port=s.port, socket_timeout=30)
    assert r.config_get("max-unread-output") == {"max-unread-output": "0"}
    p = r.pipeline(transaction=False)
    for i in range(20):
        p.set(f"k{i}", bytes([i]) * MiB)
        p.get(f"k{i}")
    got = p.execute()
    assert [got[2 * i + 1] for i in range(20)] == [bytes([i]) * MiB for i in range(20)]
    # With a limit, a client that sends without reading is paused, not dropped: once it reads,
    # every reply arrives in order.
    assert r.config_set("max-unread-output", MiB) is True
    with s.conn(timeout=30) as c:
        c.send(encode("GET", "k1") * 8)
        for _ in range(8):
            assert c.read_reply() == bytes([1]) * MiB
    assert r.config_set("max-unread-output", 0) is True


def test_a_hot_cache_larger_than_half_of_memory_stops_the_server_with_a_message(server_factory):
    """hot-cache-entries sizes each kv database's Hot Cache buckets, allocated whole when the
    database opens: 2^36 entries aborted the server at startup on an uncaught bad_alloc. Now a
    Hot Cache over half of physical memory is refused; database 0 opens at startup, so the server
    stops with the reason."""
    s = server_factory(wait=False, extra=["--hot-cache-entries", str(1 << 36)])
    s.returncode = s.proc.wait(30)
    assert s.returncode != 0
    assert re.search(r"database 0 cannot be opened: the Hot Cache buckets of keyspace 'db0' take \d+ bytes, "
                     r"more than half of physical memory", s.stderr_text()), s.stderr_text()


def test_expected_keys_beyond_half_of_memory_stop_the_server_with_a_message(server_factory):
    """expected-keys sizes each kv database's Canonical Store bucket heads, written whole when
    the database opens: 2^40 (the setting's maximum) had the kernel kill the server at startup.
    Heads larger than half of physical memory are now refused; database 0 opens at startup, so
    the server stops with the reason."""
    s = server_factory(wait=False, extra=["--expected-keys", str(1 << 40)])
    s.returncode = s.proc.wait(30)
    assert s.returncode == 1, s.stderr_text()
    assert re.search(r"database 0 cannot be opened: the bucket heads for 1099511627776 expected keys take \d+ "
                     r"bytes, more than half of physical memory", s.stderr_text()), s.stderr_text()


def test_threads_the_system_refuses_stop_the_server_with_a_message(tmp_path):
    """--threads and --procedure-threads accept up to 1024 each; when the system refuses a
    thread (here an address-space limit of 4 GiB against 2048 stacks of 8 MiB) the server used
    to abort on an uncaught std::system_error. It now stops with the reason and exit code 1."""
    argv = ServerProcess(tmp_path, threads=1024, extra=["--procedure-threads", "1024"]).argv()

    def limited():
        resource.setrlimit(resource.RLIMIT_STACK, (8 * MiB, 8 * MiB))
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))

    p = subprocess.run(argv, preexec_fn=limited, capture_output=True, text=True, timeout=60,
                       stdin=subprocess.DEVNULL, cwd=tmp_path)
    if "AddressSanitizer" in p.stderr or "ThreadSanitizer" in p.stderr:
        pytest.skip("a sanitizer's shadow memory does not fit an address-space limit")
    assert p.returncode == 1, p.stderr
    assert "terminate called" not in p.stderr, p.stderr
    assert re.search(r"cannot start the server's threads \(threads 1024, procedure-threads 1024\): ",
                     p.stderr), p.stderr
