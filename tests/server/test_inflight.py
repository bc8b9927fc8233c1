"""Several engine batches in flight per I/O thread (KeyPipeline, `max-batches-in-flight`).

The servers here run the Canonical Store on orchestrator threads (`--orchestrators 2`), so an
I/O thread's batch is really in flight while the thread reads more requests and starts more
batches; INFO's `batches_overlapped` shows that it happened (and `direct_writes`, that plain
SETs of another thread's keys skipped the owner). Under that load: each key's
commands keep their order across batches in flight (exact per-key sequences, and recorded
histories checked by the linearizability checker), a client's reads see its own writes (also
reads of another thread's keys, which run on the client's thread), and a client that
disconnects with batches in flight loses none of the writes it had been answered for.
"""

import random
import socket
import threading

import pytest

from resp_client import Conn, encode_many
from server_util import IS_REDIS, poll_until
from test_concurrency import run_threads
from test_linearizability import _assert_linearizable, record

pytestmark = pytest.mark.skipif(IS_REDIS, reason="duet's in-flight pipeline")

FLAGS = ["--orchestrators", "2", "--max-batches-in-flight", "8"]


def info_duet(port):
    with Conn(port) as c:
        text = c.call("INFO", "duet").decode()
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)


@pytest.fixture
def inflight_srv(server_factory):
    return server_factory(threads=2, extra=FLAGS)


def test_batches_in_flight_keep_each_keys_order(inflight_srv):
    """8 clients each send pipelines of 400 commands on their own keys and on keys shared by
    all, owned by both threads: per own key an APPEND sequence whose every GET and STRLEN must
    show exactly the prefix written so far (a reordering within the key shows), INCRs of shared
    counters whose replies on one connection must increase, and a final count that is exact.
    Batches of one thread were in flight together (batches_overlapped grew)."""
    port = inflight_srv.port
    before = int(info_duet(port)["batches_overlapped"])
    n_threads, rounds, per = 8, 10, 400
    incrs = [[0] * 4 for _ in range(n_threads)]

    def client(t):
        rng = random.Random(t)
        own = [f"own:{t}:{i}" for i in range(4)]
        written = {k: "" for k in own}
        last = {}
        with Conn(port, timeout=30) as c:
            for _ in range(rounds):
                cmds, checks = [], []
                for _ in range(per):
                    r = rng.random()
                    if r < 0.4:
                        k = rng.choice(own)
                        piece = f"{rng.randrange(100)},"
                        written[k] += piece
                        cmds.append(("APPEND", k, piece))
                        checks.append(("len", len(written[k])))
                    elif r < 0.7:
                        k = rng.choice(own)
                        cmds.append(("GET", k))
                        checks.append(("value", written[k].encode() if written[k] else None))
                    elif r < 0.8:
                        k = rng.choice(own)
                        cmds.append(("STRLEN", k))
                        checks.append(("len", len(written[k])))
                    else:
                        k = rng.randrange(4)
                        incrs[t][k] += 1
                        cmds.append(("INCR", f"shared:{k}"))
                        checks.append(("incr", k))
                got = c.pipeline(cmds)
                for i, ((kind, want), rep) in enumerate(zip(checks, got)):
                    if kind == "incr":
                        assert type(rep) is int and rep > last.get(want, 0), (i, cmds[i], rep, last.get(want))
                        last[want] = rep
                    else:
                        assert rep == want, (i, cmds[i], rep, want)

    run_threads(client, n_threads)
    with Conn(port) as c:
        for k in range(4):
            want = sum(incrs[t][k] for t in range(n_threads))
            assert c.call("GET", f"shared:{k}") == str(want).encode(), f"counter {k}"
    after = int(info_duet(port)["batches_overlapped"])
    assert after > before, "no batch was started while another of its thread was in flight"


@pytest.mark.parametrize("pipeline", [False, True], ids=["single", "pipelined"])
def test_histories_with_batches_in_flight_and_direct_writes_are_linearizable(inflight_srv, pipeline):
    """The recorded-history check of test_linearizability (6 clients, random single- and
    multi-key commands on 4 keys: GET, SET, SET NX/GET, GETSET, INCR, DEL, MGET, MSET) against
    a server whose batches are in flight, and whose threads write each other's keys directly
    (plain SETs and MSETs while no read-modify-write of the key is in flight) while INCRs and
    the other read-modify-writes go to the owner: direct_writes grew."""
    before = int(info_duet(inflight_srv.port)["direct_writes"])
    hist, errors = record(inflight_srv.port, pipeline=pipeline, seconds=1.5 if pipeline else 2.0, seed=11 + pipeline)
    assert not errors, errors
    _assert_linearizable(hist)
    assert int(info_duet(inflight_srv.port)["direct_writes"]) > before, "no write skipped the owner"


def test_reads_of_other_keys_stay_local_and_see_own_writes(inflight_srv):
    """Pipelines that read keys, then write them and read them again, for keys of both
    threads: every read sees the client's own earlier writes of its key and none of its later
    ones (reads of another thread's key run on the client's thread unless the client has an op
    of that key's bucket in flight elsewhere; a later op of the bucket for another thread waits
    for such a read)."""
    port = inflight_srv.port

    def client(t):
        rng = random.Random(100 + t)
        state = {}  # only this client writes its keys: every read's answer is known
        with Conn(port, timeout=30) as c:
            for round_ in range(40):
                keys = [f"ryw:{t}:{rng.randrange(32)}" for _ in range(6)]
                cmds, want = [], []
                for k in keys:
                    # A read of a key this pipeline writes later: the later write (on the
                    # key's owner) must not overtake the read (run here or there).
                    ahead = rng.choice(keys)
                    cmds.append(("GET", ahead))
                    want.append(state[ahead].encode() if ahead in state else None)
                    v = f"{t}-{round_}-{k}"
                    cmds += [("SET", k, v), ("GET", k)]
                    want += ["OK", v.encode()]
                    state[k] = v
                got = c.pipeline(cmds)
                for i, (w, g) in enumerate(zip(want, got)):
                    assert g == w, (i, cmds[i], g, w)

    run_threads(client, 6)


def _read_replies(sock, n, timeout=10.0):
    """Reads exactly n '+OK' replies (5 bytes each) from a raw socket."""
    sock.settimeout(timeout)
    need = 5 * n
    buf = b""
    while len(buf) < need:
        chunk = sock.recv(need - len(buf))
        if not chunk:
            break
        buf += chunk
    return buf


def test_disconnect_mid_flight_loses_no_acknowledged_write(inflight_srv):
    """Clients pipeline thousands of SETs, read the replies to part of them, and drop the
    connection (half with a reset) while the rest are still being run: every SET whose +OK
    arrived is visible afterwards to another client, and the server keeps serving (nothing
    leaks: the clients count returns to one)."""
    port = inflight_srv.port
    n_clients, per = 8, 3000
    acked = [0] * n_clients

    def client(t):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        cmds = [("SET", f"dc:{t}:{i}", f"v{t}-{i}") for i in range(per)]
        s.sendall(encode_many(cmds))
        stop_after = random.Random(t).randrange(1, per // 2)
        buf = _read_replies(s, stop_after)
        assert buf == b"+OK\r\n" * (len(buf) // 5), buf[:40]
        acked[t] = len(buf) // 5
        if t % 2:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        s.close()

    run_threads(client, n_clients)
    assert all(a > 0 for a in acked)
    with Conn(port, timeout=30) as c:
        for t in range(n_clients):
            keys = [f"dc:{t}:{i}" for i in range(acked[t])]
            got = c.call("MGET", *keys) if keys else []
            missing = [k for k, v, i in zip(keys, got, range(len(keys))) if v != f"v{t}-{i}".encode()]
            assert not missing, f"client {t}: {len(missing)} acknowledged SETs lost, first {missing[:3]}"

        def one_client():
            return c.call("INFO", "clients").decode().count("connected_clients:1\r")
        poll_until(one_client, 10, what="disconnected clients released")


def test_info_reports_loop_passes_and_switch_pauses(inflight_srv):
    """INFO duet says how long an I/O thread spent in its longest loop pass (a thread in one
    pass answers none of its clients), how many passes took a second or more, and how long
    model switches held hot updates; under a light load no pass takes a second."""
    port = inflight_srv.port
    with Conn(port) as c:
        for i in range(200):
            c.call("SET", f"pass-{i}", "v")
            c.call("GET", f"pass-{i}")
    info = info_duet(port)
    for field in ("io_thread_longest_pass_us", "io_thread_slow_passes", "router_last_switch_us",
                  "router_longest_switch_us", "router_longest_switch_block_us", "router_replayed_early",
                  "router_replayed_blocked"):
        assert field in info, field
        assert int(info[field]) >= 0, (field, info[field])
    assert 0 < int(info["io_thread_longest_pass_us"]) < 1_000_000
    assert int(info["io_thread_slow_passes"]) == 0
