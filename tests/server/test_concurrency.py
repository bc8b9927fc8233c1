"""Pipelining and concurrent clients: replies come back in order, commands on one key within a
pipeline take effect in order, and concurrent clients lose no update and see no torn value."""

import random
import threading
import time

from resp_client import Conn, encode, encode_many
from server_util import poll_until


def run_threads(target, n, timeout=60):
    """Runs target(i) in n threads; re-raises the first failure; fails if any thread is still
    running at the deadline."""
    errors = []
    start = threading.Barrier(n)

    def wrap(i):
        try:
            start.wait(timeout)
            target(i)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append((i, e))

    threads = [threading.Thread(target=wrap, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + timeout
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    alive = [t for t in threads if t.is_alive()]
    assert not alive, f"{len(alive)} client threads still running after {timeout}s"
    if errors:
        i, e = errors[0]
        raise AssertionError(f"client thread {i} failed ({len(errors)} failed): {e!r}") from e


# -- pipelining ---------------------------------------------------------------------------------

def test_pipeline_1000_commands_in_order(conn):
    """1000 commands sent in one write are answered with 1000 replies in request order."""
    cmds, want = [], []
    for i in range(250):
        cmds += [("SET", f"pk:{i}", f"v{i}"), ("GET", f"pk:{i}"), ("ECHO", f"e{i}"), ("EXISTS", f"pk:{i}", "nope")]
        want += ["OK", f"v{i}".encode(), f"e{i}".encode(), 1]
    assert len(cmds) == 1000
    got = conn.pipeline(cmds)
    mism = [(i, cmds[i], got[i], want[i]) for i in range(1000) if got[i] != want[i]]
    assert not mism, f"{len(mism)} replies out of order or wrong, first: {mism[:3]}"
    assert conn.call("DBSIZE") == 250


def test_pipeline_same_key_is_sequential(conn):
    """Within one pipeline, SET/INCR/GET/APPEND/GETSET/DEL on the same key take effect in
    request order: 100 rounds of 11 commands each give exactly the sequential results."""
    round_cmds = [("SET", "c", "10"), ("INCR", "c"), ("GET", "c"), ("APPEND", "c", "5"), ("INCRBY", "c", "5"),
                  ("GETSET", "c", "7"), ("DECR", "c"), ("DEL", "c"), ("INCR", "c"), ("EXISTS", "c"), ("GET", "c")]
    round_want = ["OK", 11, b"11", 3, 120, b"120", 6, 1, 1, 1, b"1"]
    got = conn.pipeline(round_cmds * 100)
    for r in range(100):
        assert got[r * 11:(r + 1) * 11] == round_want, f"round {r}: {got[r * 11:(r + 1) * 11]}"


def test_pipeline_incr_then_get_many_keys(conn):
    """A pipeline interleaving INCRs on 50 keys (20 each) and GETs sees each key's running count."""
    cmds, want, counts = [], [], {}
    rng = random.Random(7)
    for _ in range(1000):
        k = f"ctr:{rng.randrange(50)}"
        counts[k] = counts.get(k, 0) + 1
        cmds.append(("INCR", k))
        want.append(counts[k])
        if rng.random() < 0.3:
            cmds.append(("GET", k))
            want.append(str(counts[k]).encode())
    assert conn.pipeline(cmds) == want


def test_pipeline_reads_are_not_overtaken_by_later_writes(conn):
    """A pipeline [GET k, 400 GETs of other keys, SET k new] answers the first GET with k's old
    value, whichever server thread owns k: a read that the connection's own thread serves for
    another thread's key must run before a later write sent to that key's owner."""
    keys = [f"ov:{i}" for i in range(40)]
    fillers = [("GET", f"ov-fill:{i}") for i in range(400)]
    for k in keys:
        assert conn.call("SET", k, "0") == "OK"
    for rnd in range(1, 6):
        for k in keys:
            got = conn.pipeline([("GET", k)] + fillers + [("SET", k, str(rnd)), ("GET", k)])
            assert got[0] == str(rnd - 1).encode(), f"{k} round {rnd}: first GET saw {got[0]!r}"
            assert got[-1] == str(rnd).encode(), f"{k} round {rnd}: last GET saw {got[-1]!r}"


def test_pipeline_select_switches_db_in_order(conn):
    """SELECT inside a pipeline applies to exactly the commands after it."""
    got = conn.pipeline([("SET", "k", "zero"), ("SELECT", 1), ("SET", "k", "one"), ("INCR", "n"), ("SELECT", 0),
                         ("GET", "k"), ("EXISTS", "n"), ("SELECT", 1), ("GET", "k"), ("GET", "n"), ("SELECT", 0)])
    assert got == ["OK", "OK", "OK", 1, "OK", b"zero", 0, "OK", b"one", b"1", "OK"]


def test_pipeline_keyspace_commands_see_earlier_writes(conn):
    """DBSIZE, SCAN and FLUSHDB in a pipeline see (and affect) exactly the writes pipelined
    before them, and writes after FLUSHDB survive it."""
    cmds = [("SET", f"b{i}", "v") for i in range(300)] + [("DBSIZE",), ("SCAN", "0", "COUNT", "100000")]
    cmds += [("DEL", "b0"), ("DBSIZE",), ("FLUSHDB",), ("SET", "after", "1"), ("DBSIZE",), ("GET", "b1"), ("GET", "after")]
    got = conn.pipeline(cmds)
    assert got[300] == 300
    cur, keys = got[301]
    assert cur != b"0" or set(keys) == {f"b{i}".encode() for i in range(300)}
    assert got[302:] == [1, 299, "OK", "OK", 1, None, b"1"]


def test_pipeline_byte_by_byte(conn):
    """A pipeline delivered one byte per write (requests split at every offset) is parsed and
    answered exactly like a single write."""
    cmds = [("SET", "bb", "x" * 40), ("APPEND", "bb", "yz"), ("GET", "bb"), ("PING",), ("MGET", "bb", "no")] * 4
    data = encode_many(cmds)
    for i in range(len(data)):
        conn.send(data[i:i + 1])
    got = [conn.read_reply() for _ in cmds]
    want = ["OK", 42, b"x" * 40 + b"yz", "PONG", [b"x" * 40 + b"yz", None]] * 4
    assert got == want


def test_pipeline_split_inside_bulk_and_header(conn):
    """Requests split at awkward places (inside '$' headers, between CR and LF, inside a
    payload) with the connection otherwise idle are still answered correctly."""
    req = encode("SET", "split", "0123456789" * 100) + encode("GET", "split")
    cuts = [1, 2, 5, 13, 14, 15, 500, len(req) - 3, len(req) - 1]
    prev = 0
    for c in cuts + [len(req)]:
        conn.send(req[prev:c])
        prev = c
    assert conn.read_reply() == "OK"
    assert conn.read_reply() == b"0123456789" * 100


def test_huge_pipeline_with_concurrent_reader(srv):
    """60,000 pipelined commands written by one thread while another reads: the server neither
    deadlocks when replies back up nor reorders them."""
    n = 60000
    with srv.conn(timeout=30) as c:
        cmds = []
        for i in range(n):
            if i % 3 == 0:
                cmds.append(("SET", f"h:{i % 1000}", str(i)))
            elif i % 3 == 1:
                cmds.append(("GET", f"h:{(i - 1) % 1000}"))
            else:
                cmds.append(("INCR", "h:count"))
        data = encode_many(cmds)
        sender_err = []

        def send():
            try:
                for off in range(0, len(data), 65536):
                    c.send(data[off:off + 65536])
            except BaseException as e:  # noqa: BLE001
                sender_err.append(e)

        t = threading.Thread(target=send, daemon=True)
        t.start()
        incr = 0
        for i in range(n):
            r = c.read_reply()
            if i % 3 == 0:
                assert r == "OK", (i, r)
            elif i % 3 == 1:
                assert r == str(i - 1).encode(), (i, r)
            else:
                incr += 1
                assert r == incr, (i, r)
        t.join(30)
        assert not sender_err, sender_err


# -- concurrent clients -------------------------------------------------------------------------

def test_32_clients_counters_and_own_keys(srv):
    """32 clients on their own connections INCR/INCRBY 4 shared counters and SET/GET their own
    keys: every client reads its own writes, and the counters end exactly at the sum of all
    increments."""
    n_threads, rounds = 32, 150
    totals = [[0] * 4 for _ in range(n_threads)]

    def client(t):
        rng = random.Random(t)
        with srv.conn(timeout=30) as c:
            for i in range(rounds):
                k = rng.randrange(4)
                if rng.random() < 0.5:
                    r = c.call("INCR", f"shared:{k}")
                    totals[t][k] += 1
                else:
                    by = rng.randrange(-5, 20)
                    r = c.call("INCRBY", f"shared:{k}", by)
                    totals[t][k] += by
                assert type(r) is int, r
                own = f"own:{t}:{i % 10}"
                val = f"{t}-{i}-" + "x" * rng.randrange(0, 64)
                assert c.call("SET", own, val) == "OK"
                assert c.call("GET", own) == val.encode()

    run_threads(client, n_threads)
    with srv.conn() as c:
        for k in range(4):
            want = sum(totals[t][k] for t in range(n_threads))
            assert c.call("GET", f"shared:{k}") == str(want).encode(), f"counter {k}"
        assert c.call("DBSIZE") == 4 + n_threads * 10


def test_pipelining_clients_concurrently(srv):
    """8 clients each send pipelines of 500 INCRs on one shared key concurrently, 4 times: the
    replies on each connection strictly increase and the final count is exact."""
    n_threads, batches, per = 8, 4, 500

    def client(t):
        with srv.conn(timeout=30) as c:
            last = 0
            for _ in range(batches):
                got = c.pipeline([("INCR", "pipe:shared")] * per)
                assert all(type(x) is int for x in got), got[:5]
                assert all(b > a for a, b in zip([last] + got, got)), "INCR replies not increasing"
                last = got[-1]

    run_threads(client, n_threads)
    with srv.conn() as c:
        assert c.call("GET", "pipe:shared") == str(n_threads * batches * per).encode()


def test_concurrent_append_is_atomic(srv):
    """16 clients APPEND distinct tokens to one key: the result holds every token exactly once,
    each client's tokens in its own order, and no bytes besides."""
    n_threads, per = 16, 100

    def client(t):
        with srv.conn(timeout=30) as c:
            for i in range(per):
                assert type(c.call("APPEND", "log", f"<{t}:{i}>")) is int

    run_threads(client, n_threads)
    with srv.conn() as c:
        v = c.call("GET", "log").decode()
    tokens = v[1:-1].split("><") if v else []
    assert len(tokens) == n_threads * per, f"{len(tokens)} tokens"
    seen = {}
    for tok in tokens:
        t, i = map(int, tok.split(":"))
        assert seen.get(t, -1) == i - 1, f"client {t}: token {i} after {seen.get(t)}"
        seen[t] = i
    assert len(v) == sum(len(f"<{t}:{i}>") for t in range(n_threads) for i in range(per))


def _stamped(writer, seq, size):
    head = f"[{writer}:{seq}:{size}]".encode()
    fill = bytes([(writer * 31 + seq) % 251 + 1])
    body = fill * max(0, size - len(head))
    return (head + body)[:max(size, len(head))]


def _check_stamped(v):
    if v is None:
        return
    end = v.index(b"]")
    writer, seq, size = map(int, v[1:end].split(b":"))
    assert v == _stamped(writer, seq, size), f"torn value: header {v[:end + 1]!r}, length {len(v)}"


def test_no_torn_values_under_concurrent_overwrites(srv):
    """4 writers overwrite 8 keys (GETSET/MSET/SET, values of 1 B to 200 KiB, every value
    self-describing) while 4 readers GET/MGET them: every value read or returned by GETSET is
    exactly a value some writer wrote, never a mix (this exercises value-block reclamation)."""
    deadline = time.monotonic() + 2.0

    def worker(t):
        rng = random.Random(100 + t)
        with srv.conn(timeout=30) as c:
            seq = 0
            while time.monotonic() < deadline:
                keys = [f"torn:{rng.randrange(8)}" for _ in range(3)]
                if t < 4:  # writer
                    seq += 1
                    size = rng.choice([1, 7, 8, 9, 16, 100, 4096, 65536, 200000])
                    v = _stamped(t, seq, size)
                    op = rng.randrange(3)
                    if op == 0:
                        _check_stamped(c.call("GETSET", keys[0], v))
                    elif op == 1:
                        assert c.call("MSET", keys[0], v, keys[1], v) == "OK"
                    else:
                        assert c.call("SET", keys[0], v) == "OK"
                else:
                    if rng.random() < 0.5:
                        _check_stamped(c.call("GET", keys[0]))
                    else:
                        for v in c.call("MGET", *keys):
                            _check_stamped(v)

    run_threads(worker, 8)


def test_flushdb_during_concurrent_writes(srv):
    """FLUSHDB repeated in db 1 while 4 clients write db 1 and db 0: the server stays up, db 0
    loses nothing, and after a final FLUSHDB with writers stopped db 1 is empty."""
    deadline = time.monotonic() + 1.5
    written0 = [set() for _ in range(5)]

    def worker(t):
        rng = random.Random(t)
        with srv.conn(timeout=30) as c:
            if t == 4:
                c.call("SELECT", 1)
                while time.monotonic() < deadline:
                    assert c.call("FLUSHDB") == "OK"
                return
            i = 0
            while time.monotonic() < deadline:
                i += 1
                db = rng.choice([0, 1])
                assert c.call("SELECT", db) == "OK"
                got = c.pipeline([("SET", f"w{t}:{i}:{j}", "v" * rng.randrange(1, 100)) for j in range(10)])
                assert got == ["OK"] * 10
                if db == 0:
                    written0[t].update(f"w{t}:{i}:{j}" for j in range(10))

    run_threads(worker, 5)
    with srv.conn() as c:
        keys0 = sorted(set().union(*written0))
        if keys0:
            assert c.call("EXISTS", *keys0) == len(keys0), "db 0 lost keys during FLUSHDBs of db 1"
        c.call("SELECT", 1)
        assert c.call("FLUSHDB") == "OK" and c.call("DBSIZE") == 0


def test_many_simultaneous_connections(srv):
    """300 connections open at once each write and read their own key; all are served and the
    server's client count returns to the baseline once they close."""
    conns = []
    try:
        for i in range(300):
            conns.append(Conn(srv.port, timeout=20))
        for i, c in enumerate(conns):
            c.send(encode("SET", f"conn:{i}", str(i)) + encode("GET", f"conn:{i}"))
        for i, c in enumerate(conns):
            assert c.read_reply() == "OK"
            assert c.read_reply() == str(i).encode()
    finally:
        for c in conns:
            c.close()
    with srv.conn() as c:
        assert c.call("DBSIZE") == 300

        def settled():
            info = c.call("INFO", "clients").decode()
            n = int(info.split("connected_clients:")[1].split()[0])
            return n <= 2
        poll_until(settled, 20, what="connected_clients to drop back after 300 disconnects")


def test_simultaneous_connections_are_dealt_to_every_io_thread(server_factory):
    """Clients that connect in one burst (a benchmark's, a pool's) are served by all I/O threads,
    not by the one that accepted them: 16 connections on 4 threads give each thread 4."""
    s = server_factory(threads=4)
    conns = [Conn(s.port, timeout=20) for _ in range(16)]
    try:
        for i, c in enumerate(conns):  # every connection is served
            assert c.call("SET", f"burst:{i}", str(i)) == "OK"
        with s.conn() as probe:  # the 17th connection goes to the next thread in turn
            info = probe.call("INFO", "duet").decode()
        per_thread = [int(x) for x in info.split("io_thread_clients:")[1].split()[0].split(",")]
        assert len(per_thread) == 4, info
        assert sum(per_thread) == 17, per_thread
        assert max(per_thread) - min(per_thread) <= 1, f"connections per I/O thread: {per_thread}"
    finally:
        for c in conns:
            c.close()
