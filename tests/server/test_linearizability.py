"""Linearizability through the network: client threads, each on its own connection, run random
GET/SET/SET GET/SET NX/GETSET/INCR/INCRBY/DEL/MGET/MSET on 4 keys while recording invocation
and response times (time.monotonic_ns) and results; linearizability.check then decides per key
whether a linearization exists. Negative controls prove the checker rejects corrupted
histories, and positive ones that it accepts legal concurrency."""

import random
import threading
import time

import pytest

import linearizability as lin
from linearizability import INF, UNKNOWN, Op
from resp_client import Conn, ConnectionClosed, RespError, encode

KEYS = [f"lin:{i}" for i in range(4)]


# -- the checker on hand-made histories ---------------------------------------------------------

def H(*ops):
    return [Op(kind=k, arg=a, result=r, invoke=i, response=s, process=p) for (p, k, a, r, i, s) in ops]


def test_checker_accepts_sequential_history():
    """A sequential history with every kind of operation replays exactly and is accepted."""
    h = H((0, "set", b"1", "OK", 0, 1), (0, "get", None, b"1", 2, 3), (0, "incrby", 1, 2, 4, 5),
          (0, "getset", b"x", b"2", 6, 7), (0, "incrby", 1, lin.ERR_NOT_INT, 8, 9), (0, "setnx", b"y", None, 10, 11),
          (0, "del", None, 1, 12, 13), (0, "del", None, 0, 14, 15), (0, "setnx", b"z", "OK", 16, 17),
          (0, "get", None, b"z", 18, 19), (0, "set", str(lin.INT64_MAX).encode(), "OK", 20, 21),
          (0, "incrby", 1, lin.ERR_OVERFLOW, 22, 23))
    assert lin.check(h).ok


def test_checker_accepts_concurrent_reads_of_old_or_new():
    """A read overlapping a write may return the old or the new value; two overlapping writes
    may take effect in either order."""
    for seen in (None, b"1"):
        assert lin.check(H((0, "set", b"1", "OK", 0, 10), (1, "get", None, seen, 2, 3))).ok
    h = H((0, "set", b"a", "OK", 0, 10), (1, "set", b"b", "OK", 1, 11), (2, "get", None, b"a", 12, 13))
    assert lin.check(h).ok
    h = H((0, "set", b"a", "OK", 0, 10), (1, "set", b"b", "OK", 1, 11), (2, "get", None, b"b", 12, 13))
    assert lin.check(h).ok


def test_checker_unknown_outcomes():
    """An operation whose client timed out may have taken effect (at any time after its
    invocation) or not at all."""
    for seen in (None, b"1"):
        h = H((0, "set", b"1", UNKNOWN, 0, INF), (1, "get", None, seen, 5, 6))
        assert lin.check(h).ok
    h = H((0, "set", b"1", UNKNOWN, 0, INF), (1, "get", None, b"2", 5, 6))
    assert lin.check(h).refuted


def test_checker_rejects_value_never_written():
    """Negative control: a read returning a value no one wrote is rejected."""
    h = H((0, "set", b"1", "OK", 0, 1), (1, "get", None, b"7", 2, 3))
    r = lin.check(h)
    assert r.refuted and "get" in r.explanation


def test_checker_rejects_stale_read():
    """Negative control: a read, invoked after a write of 2 completed, that returns the
    overwritten 1 is rejected (it would be fine if the intervals overlapped)."""
    h = H((0, "set", b"1", "OK", 0, 1), (0, "set", b"2", "OK", 2, 3), (1, "get", None, b"1", 4, 5))
    assert lin.check(h).refuted
    h_overlap = H((0, "set", b"1", "OK", 0, 1), (0, "set", b"2", "OK", 2, 6), (1, "get", None, b"1", 4, 5))
    assert lin.check(h_overlap).ok


def test_checker_rejects_lost_update_and_duplicate_increments():
    """Negative controls: two sequential INCRs both answering 1, an INCR that ignores a
    completed SET, a DEL that removes a key twice, and SET NX succeeding on an existing key
    are all rejected."""
    assert lin.check(H((0, "incrby", 1, 1, 0, 1), (1, "incrby", 1, 1, 2, 3))).refuted
    assert lin.check(H((0, "incrby", 1, 1, 0, 3), (1, "incrby", 1, 2, 1, 2))).ok
    assert lin.check(H((0, "set", b"5", "OK", 0, 1), (1, "incrby", 1, 1, 2, 3))).refuted
    assert lin.check(H((0, "set", b"5", "OK", 0, 1), (1, "del", None, 1, 2, 3), (0, "del", None, 1, 4, 5))).refuted
    assert lin.check(H((0, "set", b"5", "OK", 0, 1), (1, "setnx", b"6", "OK", 2, 3))).refuted


def test_checker_rejects_real_time_violation_among_many():
    """Negative control in a longer history: 200 sequential INCRs with one reply swapped with
    its successor's is rejected; the unswapped history is accepted."""
    ok = H(*[(0, "incrby", 1, i + 1, 2 * i, 2 * i + 1) for i in range(200)])
    assert lin.check(ok).ok
    bad = H(*[(0, "incrby", 1, i + 1, 2 * i, 2 * i + 1) for i in range(200)])
    bad[100].result, bad[101].result = bad[101].result, bad[100].result
    assert lin.check(bad).refuted


def test_checker_reports_an_exhausted_budget_as_undecided():
    """A checker that gives up must not pass for one that refuted: a long linearizable history
    with a budget too small to finish is undecided, and decided with the default budget."""
    h = H(*[(0, "incrby", 1, i + 1, 2 * i, 2 * i + 1) for i in range(50)])
    r = lin.check(h, max_steps=3)
    assert not r.ok and r.undecided and not r.refuted and "gave up" in r.explanation
    assert lin.check(h).ok


def test_checker_keeps_pipeline_order():
    """Negative control for program order: in one pipelined batch, INCR answering 2 before an
    INCR answering 1 is rejected, though the same ops from two clients would be accepted."""
    a = Op("incrby", 1, 2, 0, 10, 0, batch=1, pos=0)
    b = Op("incrby", 1, 1, 0, 10, 0, batch=1, pos=1)
    assert lin.check([a, b]).refuted
    a2 = Op("incrby", 1, 2, 0, 10, 0)
    b2 = Op("incrby", 1, 1, 0, 10, 1)
    assert lin.check([a2, b2]).ok


# -- recording histories through the network ----------------------------------------------------

def _int_value(proc, seq):
    # Distinct per SET; INCRs (at most a few thousand per run) never reach another SET's value.
    return str(proc * 10**12 + seq * 10**6).encode()


def record(port, n_threads=6, seconds=2.0, pipeline=False, seed=1, max_ops=6000, min_total=600):
    """Runs the workload and returns ({key: [Op]}, errors). With pipeline, each client sends
    batches of 1-6 commands in one write; every op of a batch gets the batch's interval and
    its position in the batch (the checker keeps one connection's commands in order). A client
    stops after max_ops commands (bounding the checker's work on a fast server). On a slow or
    busy machine the clients go on past `seconds` until they have sent min_total commands
    together (at most 30 s more), so the history is long enough to check."""
    hist = {k: [] for k in KEYS}
    lock = threading.Lock()
    errors = []
    stop_at = time.monotonic() + seconds
    hard_stop = stop_at + 30
    sent = [0]  # commands sent by all clients (a list: the clients add to it)

    def more():
        now = time.monotonic()
        return now < stop_at or (sent[0] < min_total and now < hard_stop)

    def gen(rng, proc, seq):
        """One random command -> (args, [(key, kind, arg)], decode) where decode maps the
        reply to per-key results."""
        k = rng.choice(KEYS)
        r = rng.random()
        val = _int_value(proc, seq) if rng.random() < 0.8 else f"s{proc}-{seq}".encode()
        if r < 0.25:
            return ("GET", k), [(k, "get", None)], lambda x: [x]
        if r < 0.40:
            return ("SET", k, val), [(k, "set", val)], lambda x: [x]
        if r < 0.47:
            return ("SET", k, val, "GET"), [(k, "getset", val)], lambda x: [x]
        if r < 0.52:
            return ("GETSET", k, val), [(k, "getset", val)], lambda x: [x]
        if r < 0.57:
            return ("SET", k, val, "NX"), [(k, "setnx", val)], lambda x: [x]
        if r < 0.72:
            return ("INCR", k), [(k, "incrby", 1)], lambda x: [str(x) if isinstance(x, RespError) else x]
        if r < 0.77:
            by = rng.randrange(-3, 10)
            return ("INCRBY", k, by), [(k, "incrby", by)], lambda x: [str(x) if isinstance(x, RespError) else x]
        if r < 0.84:
            return ("DEL", k), [(k, "del", None)], lambda x: [x]
        if r < 0.92:
            ks = rng.sample(KEYS, rng.randrange(2, 4))
            return ("MGET", *ks), [(x, "get", None) for x in ks], lambda x: list(x)
        ks = rng.sample(KEYS, rng.randrange(2, 4))
        args = ["MSET"]
        for x in ks:
            args += [x, val]
        return tuple(args), [(x, "set", val) for x in ks], lambda x: [x] * len(ks)

    def client(proc):
        rng = random.Random(seed * 1000 + proc)
        mine = []
        seq = 0
        try:
            c = Conn(port, timeout=10)
            while more() and seq < max_ops:
                batch = []
                for _ in range(rng.randrange(1, 7) if pipeline else 1):
                    seq += 1
                    batch.append(gen(rng, proc + 1, seq))
                with lock:
                    sent[0] += len(batch)
                data = b"".join(encode(*b[0]) for b in batch)
                t0 = time.monotonic_ns()
                try:
                    c.send(data)
                    replies = [c.read_reply() for _ in batch]
                except (OSError, ConnectionClosed) as e:
                    # outcome unknown for the whole batch; this client stops
                    for pos, (_, parts, _) in enumerate(batch):
                        for k, kind, arg in parts:
                            mine.append((k, Op(kind, arg, UNKNOWN, t0, INF, proc, batch=seq, pos=pos)))
                    errors.append(f"client {proc}: {e!r}")
                    break
                t1 = time.monotonic_ns()
                for pos, ((args, parts, decode), rep) in enumerate(zip(batch, replies)):
                    if isinstance(rep, RespError) and parts[0][1] != "incrby":
                        raise AssertionError(f"{args} answered {rep}")
                    results = decode(rep)
                    assert len(results) == len(parts), (args, rep)
                    for (k, kind, arg), res in zip(parts, results):
                        mine.append((k, Op(kind, arg, res, t0, t1, proc, batch=seq, pos=pos)))
            c.close()
        except BaseException as e:  # noqa: BLE001
            errors.append(f"client {proc}: {e!r}")
        with lock:
            for k, op in mine:
                hist[k].append(op)

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + 90)
    assert not any(t.is_alive() for t in threads), "client threads hung"
    return hist, errors


def _assert_linearizable(hist):
    total = sum(len(v) for v in hist.values())
    assert total > 500, f"only {total} operations recorded"
    for k, ops in hist.items():
        r = lin.check(ops)
        assert r.ok, f"key {k}: history of {len(ops)} ops is not linearizable\n{r.explanation}"


@pytest.mark.parametrize("pipeline", [False, True], ids=["single", "pipelined"])
def test_network_history_is_linearizable(srv, pipeline):
    """6 clients x ~2 s of random single-key and multi-key commands on 4 keys: every key's
    history is linearizable (MGET/MSET are checked per key, as they are atomic per key only)."""
    hist, errors = record(srv.port, pipeline=pipeline, seconds=2.0 if not pipeline else 1.5, seed=1 + pipeline)
    assert not errors, errors
    _assert_linearizable(hist)


def test_checker_rejects_corrupted_network_history(srv):
    """Negative controls on a real history: (a) a GET answer replaced by a value never written,
    (b) a stale read, i.e. a GET after everything else returning the value of a SET that a later,
    non-overlapping SET overwrote, are both rejected while the original is accepted."""
    hist, errors = record(srv.port, seconds=1.0, seed=7)
    assert not errors, errors
    key = max(hist, key=lambda k: sum(1 for o in hist[k] if o.kind == "get" and o.result is not None))
    ops = hist[key]
    assert lin.check(ops).ok

    bad = [Op(o.kind, o.arg, o.result, o.invoke, o.response, o.process) for o in ops]
    victim = next(o for o in bad if o.kind == "get" and o.result is not None)
    victim.result = b"never-written"
    assert lin.check(bad).refuted, "checker accepted a read of a value never written"

    sets = sorted((o for o in ops if o.kind == "set"), key=lambda o: o.invoke)
    pair = next(((a, b) for a in sets for b in sets if b.invoke > a.response and b.arg != a.arg), None)
    assert pair is not None, "no two sequential SETs recorded"
    old = pair[0]
    end = max(o.response for o in ops)
    stale = [Op(o.kind, o.arg, o.result, o.invoke, o.response, o.process) for o in ops]
    stale.append(Op("get", None, old.arg, end + 1, end + 2, 99))
    assert lin.check(stale).refuted, "checker accepted a stale read after a completed overwrite"
