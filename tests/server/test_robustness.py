"""Hostile and broken clients over raw sockets: malformed frames, oversized headers, seeded
random garbage, half-sent requests with abrupt disconnects, thousands of connect/disconnect
cycles, a client that never reads. After each, the server is alive, other clients are served,
and the data written before is intact."""

import os
import random
import socket

import pytest

from resp_client import Conn, ConnectionClosed, encode, encode_many
from server_util import IS_REDIS, poll_until

MiB = 1 << 20


@pytest.fixture
def sentinel(srv):
    """Writes known data (db 0 and db 5, a 1 MiB value, binary keys) and returns verify(),
    which asserts the server answers and every value is intact."""
    big = os.urandom(MiB)
    db0 = {f"sentinel:{i}".encode(): f"value-{i}".encode() * (i % 5 + 1) for i in range(200)}
    db0[b"sentinel:big"] = big
    db0[b"sentinel:\x00\r\n\xff"] = b"\x00binary\r\n"
    db5 = {f"s5:{i}".encode(): str(i).encode() for i in range(50)}
    with srv.conn(timeout=30) as c:
        args = [x for kv in db0.items() for x in kv]
        assert c.call("MSET", *args) == "OK"
        c.call("SELECT", 5)
        assert c.call("MSET", *[x for kv in db5.items() for x in kv]) == "OK"

    def verify():
        srv.check_alive("the abuse")
        with srv.conn(timeout=30) as c:
            assert c.call("PING") == "PONG"
            keys = list(db0)
            assert c.call("MGET", *keys) == [db0[k] for k in keys], "db0 data changed"
            c.call("SELECT", 5)
            assert c.call("MGET", *db5) == list(db5.values()), "db5 data changed"
            assert c.call("DBSIZE") == len(db5)

    verify()
    return verify


def send_and_collect(port, data, timeout=10.0):
    """Sends data on a fresh connection and returns (everything the server sent, closed)."""
    c = Conn(port, timeout=timeout)
    try:
        try:
            c.send(data)
        except (BrokenPipeError, ConnectionResetError):
            pass
        return c.read_until_close(timeout)
    finally:
        c.close()


PROTOCOL_ERRORS = {
    "multibulk length not a number": b"*abc\r\n",
    "multibulk length over INT_MAX": b"*99999999999\r\n",
    "simple string inside multibulk": b"*1\r\n+foo\r\n",
    "integer as 2nd element": b"*2\r\n$3\r\nGET\r\n:1\r\n",
    "bulk length not a number": b"*1\r\n$abc\r\n",
    "negative bulk length": b"*1\r\n$-5\r\n",
    "null bulk inside request": b"*1\r\n$-1\r\n",
    "bulk length 1e12": b"*1\r\n$999999999999\r\n",
    "bulk length over 512 MiB default": b"*1\r\n$536870913\r\n",
    "unbalanced double quote": b'set "a b\r\n',
    "unbalanced single quote": b"set 'a' b c'\r\n",
    "closing quote not followed by space": b'set "a"b c\r\n',
    "64 KiB multibulk count without CRLF": b"*" + b"1" * 70000,
    "64 KiB bulk count without CRLF": b"*1\r\n$" + b"1" * 70000,
    "64 KiB inline line without newline": b"x" * 70000,
}


@pytest.mark.parametrize("name", list(PROTOCOL_ERRORS))
def test_protocol_error_replies_and_closes(srv, sentinel, name):
    """A malformed frame gets a '-ERR Protocol error...' reply, then the server closes that
    connection; the server keeps serving with the data intact."""
    data, closed = send_and_collect(srv.port, PROTOCOL_ERRORS[name])
    assert data.startswith(b"-ERR Protocol error"), f"{name}: server answered {data[:200]!r}"
    assert data.endswith(b"\r\n") and data.count(b"\r\n") == 1, f"{name}: {data[:200]!r}"
    assert closed, f"{name}: connection still open 10 s after the protocol error"
    sentinel()


def test_protocol_error_after_valid_commands(srv, sentinel):
    """Commands before a malformed frame in the same write are executed and answered first;
    nothing after the bad frame is executed."""
    data = (encode("SET", "before", "1") + encode("PING") + b"*1\r\n$-1\r\n" + encode("SET", "after", "1"))
    out, closed = send_and_collect(srv.port, data)
    assert out.startswith(b"+OK\r\n+PONG\r\n-ERR Protocol error"), out[:200]
    assert closed
    with srv.conn() as c:
        assert c.call("GET", "before") == b"1"
        assert c.call("GET", "after") is None
    sentinel()


def test_empty_frames_are_not_errors(srv, sentinel):
    """'*0', '*-1' and empty inline lines are skipped like Redis does; the next command is
    answered and the connection stays open."""
    with srv.conn() as c:
        c.send(b"*0\r\n*-1\r\n\r\n\n   \r\n" + encode("PING"))
        assert c.read_reply() == "PONG"
        assert c.call("ECHO", "still here") == b"still here"
    sentinel()


def test_inline_commands(srv):
    """Inline commands (as typed in telnet) work, with CRLF or bare LF, double quotes with
    escapes and single quotes."""
    with srv.conn() as c:
        c.send(b"PING\r\nPING\n")
        assert c.read_reply() == "PONG" and c.read_reply() == "PONG"
        c.send(b'set inl "a b\\x41\\n"\r\n')
        assert c.read_reply() == "OK"
        assert c.call("GET", "inl") == b"a bA\n"
        c.send(b"set 'it\\'s' v\r\nget \"it's\"\r\n")
        assert c.read_reply() == "OK" and c.read_reply() == b"v"
        c.send(b"  echo   spaced    \r\n")
        assert c.read_reply() == b"spaced"


def test_random_garbage_seeded(srv, sentinel):
    """300 connections each send seeded random bytes (pure noise, noise behind '*' or '$',
    bit-flipped and truncated valid pipelines), then half-close: the server answers or closes
    each, always closes after EOF, and never loses data."""
    rng = random.Random(20240607)
    base = encode_many([("SET", f"fz:{i}", "v" * (i % 40)) for i in range(20)]
                       + [("GET", "fz:1"), ("MGET", "fz:2", "fz:3"), ("INCR", "fz:n"), ("APPEND", "fz:1", "x")])
    not_closed = []
    for i in range(300):
        kind = i % 4
        if kind == 0:
            data = rng.randbytes(rng.randrange(1, 4096))
        elif kind == 1:
            data = rng.choice([b"*", b"$", b"*1\r\n$", b"*3\r\n$3\r\nSET\r\n$"]) + rng.randbytes(rng.randrange(1, 512))
        elif kind == 2:
            b = bytearray(base)
            for _ in range(rng.randrange(1, 8)):
                p = rng.randrange(len(b))
                b[p] ^= 1 << rng.randrange(8)
            data = bytes(b)
        else:
            b = bytearray(base[: rng.randrange(1, len(base))])
            p = rng.randrange(len(b))
            b[p:p] = rng.randbytes(rng.randrange(1, 16))
            data = bytes(b)
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
        try:
            try:
                s.sendall(data)
                s.shutdown(socket.SHUT_WR)
            except OSError:  # the server already answered and closed (EPIPE, ECONNRESET, ENOTCONN)
                continue
            _, closed = Conn.from_socket(s).read_until_close(10)
            if not closed:
                not_closed.append((i, data[:60]))
        finally:
            s.close()
    assert not not_closed, f"{len(not_closed)} connections not closed 10 s after the client's EOF: {not_closed[:3]}"
    sentinel()


def test_half_sent_requests_then_disconnect(srv, sentinel):
    """A SET cut at every byte offset and then dropped (alternately FIN and RST) is never
    executed; a request after a complete one is dropped without undoing the complete one."""
    req = encode("SET", "half:k", "half-value")
    for cut in range(1, len(req)):
        c = Conn(srv.port)
        c.send(req[:cut])
        if cut % 2:
            c.abort()
        else:
            c.close()
    c = Conn(srv.port)
    c.send(encode("SET", "half:done", "1") + req[:-1])
    assert c.read_reply() == "OK"
    c.abort()
    with srv.conn() as c:
        assert c.call("EXISTS", "half:k") == 0, "a half-sent SET was executed"
        assert c.call("GET", "half:done") == b"1"
    sentinel()


def test_half_sent_large_bulk_then_reset(srv, sentinel):
    """Declaring a 10 MiB value, sending 5 MiB of it and resetting the connection leaves no
    key behind; four connections that each declare a 512 MiB value and send 1 KiB do not
    exhaust the server's memory."""
    c = Conn(srv.port, timeout=30)
    c.send(b"*3\r\n$3\r\nSET\r\n$8\r\nhalf:big\r\n$10485760\r\n" + b"x" * (5 * MiB))
    c.abort()
    conns = []
    for _ in range(4):
        c = Conn(srv.port)
        c.send(b"*3\r\n$3\r\nSET\r\n$9\r\nhalf:huge\r\n$536870912\r\n" + b"y" * 1024)
        conns.append(c)
    with srv.conn() as c2:
        assert c2.call("PING") == "PONG"
    for c in conns:
        c.abort()
    with srv.conn() as c:
        assert c.call("EXISTS", "half:big", "half:huge") == 0
    sentinel()


def test_oversized_array_header_then_disconnect(srv, sentinel):
    """A request announcing 2 billion arguments (under INT_MAX, so not necessarily a protocol
    error) followed by a few arguments and a disconnect does not hurt the server."""
    c = Conn(srv.port)
    try:
        c.send(b"*2000000000\r\n" + encode("x")[4:] * 10)
    except (BrokenPipeError, ConnectionResetError):
        pass
    c.read_until_close(0.5)
    c.abort()
    sentinel()


def _connected_clients(c):
    info = c.call("INFO", "clients").decode()
    return int(info.split("connected_clients:")[1].split()[0])


def _fd_count(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None


def test_thousands_of_connect_disconnect_cycles(srv, sentinel):
    """3000 connections opened and closed in four ways (idle close, PING then close, reset,
    partial request then close): afterwards connected_clients and the server's open file
    descriptors return to where they were, and the data is intact."""
    with srv.conn() as c:
        poll_until(lambda: _connected_clients(c) == 1, 20, what="a quiet server before the test")
        fds_before = _fd_count(srv.proc.pid)
    for i in range(3000):
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
        kind = i % 4
        try:
            if kind == 1:
                s.sendall(b"*1\r\n$4\r\nPING\r\n")
                got = b""
                while not got.endswith(b"\r\n"):
                    chunk = s.recv(64)
                    assert chunk, "server closed a connection before answering PING"
                    got += chunk
                assert got == b"+PONG\r\n", got
            elif kind == 2:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            elif kind == 3:
                s.sendall(b"*2\r\n$3\r\nGET\r\n$5\r\nab")
        finally:
            s.close()
    with srv.conn() as c:
        poll_until(lambda: _connected_clients(c) == 1, 30,
                   what="connected_clients back to 1 after 3000 connect/disconnect cycles")
        if fds_before is not None:
            poll_until(lambda: _fd_count(srv.proc.pid) <= fds_before + 2, 30,
                       what=f"the server's open fds back to {fds_before} (now {_fd_count(srv.proc.pid)})")
    sentinel()


def test_client_that_never_reads(srv, sentinel):
    """A client that pipelines 40 GETs of a 1 MiB value and never reads the replies does not
    stall other clients; dropping it afterwards is harmless."""
    slow = Conn(srv.port, timeout=30)
    slow.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    slow.send(encode_many([("GET", "sentinel:big")] * 40))
    with srv.conn(timeout=5) as c:
        for i in range(50):
            assert c.call("SET", f"fast:{i}", i) == "OK"
            assert c.call("GET", f"fast:{i}") == str(i).encode()
    slow.abort()
    sentinel()


def test_client_reading_slowly_gets_everything(srv):
    """A client that reads its replies 4 KiB at a time still receives 20 x 1 MiB replies
    complete and in order."""
    vals = [os.urandom(MiB) for _ in range(4)]
    with srv.conn(timeout=30) as c:
        c.recv_size = 4096
        c.pipeline([("SET", f"sv{i}", v) for i, v in enumerate(vals)])
        c.send(encode_many([("GET", f"sv{i % 4}") for i in range(20)]))
        for i in range(20):
            assert c.read_reply() == vals[i % 4], i


def test_server_closes_on_client_shutdown_write(server_factory):
    """After the client shuts down its sending side (as `nc -N` or a script does), the server
    still answers everything sent before the FIN, then closes; 50 tries of SET+GET, GET and
    PING on a fresh server and fresh keys (a race between the FIN and a command still
    executing would lose replies)."""
    s0 = server_factory()
    failures = []
    for i in range(50):
        payloads = [(encode("SET", f"shut:{i}", "1") + encode("GET", f"shut:{i}"), b"+OK\r\n$1\r\n1\r\n"),
                    (encode("GET", f"nokey:{i}"), b"$-1\r\n"), (b"PING\r\n", b"+PONG\r\n")]
        for data, want in payloads:
            s = socket.create_connection(("127.0.0.1", s0.port), timeout=10)
            try:
                s.sendall(data)
                s.shutdown(socket.SHUT_WR)
                got, closed = Conn.from_socket(s).read_until_close(10)
            finally:
                s.close()
            if got != want or not closed:
                failures.append((data[:30], got, closed))
    assert not failures, f"{len(failures)} of 150 half-closed requests answered wrongly, e.g. {failures[:3]}"


def test_reply_to_reset_connection_does_not_kill_server(srv, sentinel):
    """Resetting connections while the server is writing large replies to them (EPIPE /
    ECONNRESET on the server's side) does not kill the server (no SIGPIPE)."""
    for _ in range(20):
        c = Conn(srv.port)
        c.send(encode_many([("GET", "sentinel:big")] * 8))
        try:
            c.sock.recv(1000)
        except (OSError, ConnectionClosed):
            pass
        c.abort()
    sentinel()


@pytest.mark.skipif(IS_REDIS, reason="Duet's keyspace kinds (txn, batch) and commands")
def test_seeded_random_arguments_to_every_command(server_factory):
    """Every command the server lists (COMMAND) but the ones that end or block the connection
    (SHUTDOWN, QUIT, MONITOR, ...) or reach other databases (SELECT, FLUSHALL), called 20,000
    times with seeded random arguments (numbers at the 32- and 64-bit edges, option words,
    binary, 70 KB strings) on a kv, a txn and a batch database with Epic tables: every call gets
    a well-formed reply over the same connection, the server stays up, and a database the
    calls never reach keeps its data."""
    s = server_factory(extra=["--database-kinds", "kv,1=txn,2=batch", "--epic-procedures", "mix",
                              "--epic-tables", "small:1:64,wide:4:200,idx:3:400:indexed",
                              "--epic-epoch-max-wait-us", "500"])
    kept = {f"kept:{i}".encode(): os.urandom(i + 1) for i in range(100)}
    with s.conn(timeout=30) as c:
        c.call("SELECT", 5)
        assert c.call("MSET", *[x for kv in kept.items() for x in kv]) == "OK"
        names = sorted(n.decode() if isinstance(n, bytes) else n for n, *_ in c.call("COMMAND"))
    ends_or_blocks = {"shutdown", "quit", "reset", "monitor", "subscribe", "psubscribe", "ssubscribe", "sync",
                      "psync", "debug", "select", "flushall", "swapdb", "move", "replicaof", "slaveof", "failover",
                      "save", "bgsave", "bgrewriteaof", "client", "wait", "blpop", "brpop"}
    names = [n for n in names if n.lower() not in ends_or_blocks]
    assert {"batch.call", "batch.callpieces", "txn", "snapshot", "set", "config"} <= set(n.lower() for n in names)
    rng = random.Random(20261205)
    words = ["EX", "PX", "NX", "XX", "GET", "COUNT", "MATCH", "TYPE", "LIMIT", "SET", "INFO", "DOCS", "HELP",
             "RESETSTAT", "maxmemory", "*", "epic-epoch-size", "max-key-bytes", "k", "small:1", "idx:7", "wide",
             "inf", "-inf", "nan", "1e400", ""]
    edges = [0, 1, 2, 3, 64, 65, 2**31, 2**32 - 1, 2**32, 2**63 - 1, 2**63, 2**64 - 1, 2**64, -1, -2**63, -2**63 - 1]

    def token():
        r = rng.random()
        if r < 0.3:
            return str(rng.choice(edges))
        if r < 0.55:
            return rng.choice(words)
        if r < 0.8:
            return str(rng.randrange(-3, 70))
        if r < 0.97:
            return rng.randbytes(rng.randrange(0, 24))
        return rng.randbytes(70_000)

    counts = {"replies": 0, "errors": 0}
    with s.conn(timeout=30) as c:
        for i in range(20_000):
            if i % 500 == 0:  # leave a MULTI a call opened, then move to another database
                c.call_raw("DISCARD")
                assert c.call("SELECT", rng.choice([0, 1, 2])) == "OK"
            name = rng.choice(names)
            args = [token() for _ in range(rng.choice([0, 1, 2, 3, 4, 6, 9, 14]))]
            reply = c.call_raw(name, *args)  # raises on a closed connection or a malformed reply
            counts["errors" if reply.startswith(b"-") else "replies"] += 1
    assert counts["replies"] > 1000 and counts["errors"] > 1000, counts
    s.check_alive("random arguments")
    with s.conn(timeout=30) as c:
        c.call("SELECT", 5)
        assert c.call("MGET", *kept) == list(kept.values()), "a database no call reached changed"
