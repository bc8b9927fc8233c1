"""The txn family on a `txn` database (docs/txn.md): plain commands as transactions, TXN
BEGIN/COMMIT/ABORT, MULTI/EXEC/DISCARD/WATCH/UNWATCH on snapshot isolation, RANGE, SNAPSHOT,
bad input, disconnects, the idle timeout, and 10^5 transactions from redis-py clients recorded
as a history and checked by the SI checker (tests/txn/si_checker.hpp, via duet_si_check)."""

import itertools
import os
import random
import subprocess
import threading
import time
from pathlib import Path

import pytest

from server_util import IS_REDIS, duet_bin

redis = pytest.importorskip("redis")
pytestmark = pytest.mark.skipif(IS_REDIS, reason="Duet-specific (txn keyspace)")

TXN_DB = 1


@pytest.fixture
def tsrv(server_factory):
    # Database 0 stays kv; 1 is a txn keyspace; 2 a batch keyspace.
    return server_factory(extra=["--database-kinds", "kv,1=txn,2=batch", "--max-key-bytes", "1024",
                                 "--max-value-bytes", "65536"])


def client(s, db=TXN_DB, **kw):
    return redis.Redis(host="127.0.0.1", port=s.port, db=db, decode_responses=True, **kw)


def test_plain_commands_are_transactions(tsrv):
    r = client(tsrv)
    assert r.set("a", "1") is True
    assert r.set("a", "2", nx=True) is None
    assert r.set("a", "3", xx=True, get=True) == "1"
    assert r.getset("a", "4") == "3"
    assert r.incr("n") == 1 and r.incrby("n", 9) == 10 and r.decr("n") == 9 and r.decrby("n", 4) == 5
    assert r.append("s", "ab") == 2 and r.append("s", "c") == 3 and r.strlen("s") == 3
    assert r.mset({"x": "1", "y": "2"}) is True
    assert r.mget(["x", "y", "z"]) == ["1", "2", None]
    assert r.exists("x", "y", "z") == 2
    assert r.type("x") == "string" and r.type("z") == "none"
    assert r.delete("x", "y", "z") == 2
    assert r.dbsize() == 3
    assert sorted(r.scan_iter()) == ["a", "n", "s"]
    with pytest.raises(redis.ResponseError, match="not an integer"):
        r.incr("s")
    assert r.get("s") == "abc", "a failed command changes nothing"
    # Data of the txn database and of the kv database are separate.
    assert client(tsrv, db=0).get("a") is None
    info = r.info("keyspace")
    assert info[f"db{TXN_DB}"]["keys"] == 3 and info[f"db{TXN_DB}"]["kind"] == "txn"
    stats = r.info("duet")[f"txn_db{TXN_DB}"]
    assert stats["commits"] >= 10 and stats["conflicts"] == 0


def test_commands_a_kind_lacks_are_refused(tsrv):
    t, kv, b = client(tsrv), client(tsrv, db=0), client(tsrv, db=2)
    for cmd in (["TXN", "BEGIN"], ["MULTI"], ["RANGE", "-", "+"], ["SNAPSHOT", "KEY", "a"], ["WATCH", "a"]):
        with pytest.raises(redis.ResponseError, match="keyspace kind is 'kv'"):
            kv.execute_command(*cmd)
    with pytest.raises(redis.ResponseError, match="keyspace kind is 'batch'"):
        b.get("a")
    with pytest.raises(redis.ResponseError, match="keyspace kind is 'txn'"):
        t.execute_command("BATCH.BALANCE", "1")


def test_interactive_transactions(tsrv):
    a, b = client(tsrv), client(tsrv)
    a.set("x", "1")
    assert a.execute_command("TXN", "BEGIN") == "OK"
    with pytest.raises(redis.ResponseError, match="inside an open transaction"):
        a.execute_command("TXN", "BEGIN")
    assert a.get("x") == "1"
    b.set("x", "2")
    assert a.get("x") == "1", "reads answer at the snapshot"
    assert a.set("mine", "m") is True and a.get("mine") == "m", "own writes are visible"
    assert b.get("mine") is None, "buffered writes are invisible to others"
    a.incr("x")
    with pytest.raises(redis.ResponseError, match="^ABORT conflict on key 'x'"):
        a.execute_command("TXN", "COMMIT")
    assert b.get("x") == "2" and b.get("mine") is None, "the aborted transaction changed nothing"
    with pytest.raises(redis.ResponseError, match="TXN COMMIT without TXN BEGIN"):
        a.execute_command("TXN", "COMMIT")
    # Committed: visible to a transaction that begins after COMMIT returned.
    a.execute_command("TXN", "BEGIN")
    a.set("y", "1")
    a.delete("x")
    assert a.execute_command("TXN", "COMMIT") == "OK"
    assert b.get("y") == "1" and b.get("x") is None
    # Read-only transactions never abort.
    a.execute_command("TXN", "BEGIN")
    assert a.get("y") == "1"
    b.set("y", "2")
    assert a.execute_command("TXN", "COMMIT") == "OK"
    with pytest.raises(redis.ResponseError, match="TXN ABORT without TXN BEGIN"):
        a.execute_command("TXN", "ABORT")
    with pytest.raises(redis.ResponseError, match="unknown TXN subcommand"):
        a.execute_command("TXN", "NOW")


def test_multi_exec_watch(tsrv):
    a, b = client(tsrv), client(tsrv)
    p = a.pipeline(transaction=True)
    p.set("c", 1).incr("c").get("c").mget("c", "none")
    assert p.execute() == [True, 2, "2", ["2", None]]
    # WATCH: EXEC answers nil (redis-py's WatchError) when a watched key changed first.
    with a.pipeline() as p:
        p.watch("c")
        b.incr("c")
        p.multi()
        p.set("c", 100)
        with pytest.raises(redis.WatchError):
            p.execute()
    assert a.get("c") == "3"
    with a.pipeline() as p:  # unchanged watched keys (one absent) let EXEC commit
        p.watch("c", "absent")
        p.multi()
        p.incr("c")
        assert p.execute() == [4]
    # Queueing errors discard the block (EXECABORT); DISCARD drops it.
    p = a.pipeline(transaction=True)
    p.set("d", 1).execute_command("CONFIG", "GET", "port")
    with pytest.raises(redis.ResponseError):
        p.execute()
    assert a.get("d") is None
    conn = a.connection_pool.get_connection("MULTI")
    try:
        for cmd, want in ((["MULTI"], "OK"), (["SET", "d", "1"], "QUEUED"), (["DISCARD"], "OK")):
            conn.send_command(*cmd)
            assert conn.read_response() == want
        for cmd, err in ((["EXEC"], "EXEC without MULTI"), (["DISCARD"], "DISCARD without MULTI")):
            conn.send_command(*cmd)
            with pytest.raises(redis.ResponseError, match=err):
                conn.read_response()
        conn.send_command("MULTI")
        assert conn.read_response() == "OK"
        for cmd, err in ((["MULTI"], "can not be nested"), (["WATCH", "x"], "WATCH inside MULTI")):
            conn.send_command(*cmd)
            with pytest.raises(redis.ResponseError, match=err):
                conn.read_response()
        conn.send_command("EXEC")
        assert conn.read_response() == []
    finally:
        a.connection_pool.release(conn)
    assert a.get("d") is None


def test_range_and_snapshot(tsrv):
    r = client(tsrv)
    r.mset({k: k.upper() for k in ("a", "b", "ba", "c", "d")})
    assert r.execute_command("RANGE", "-", "+") == ["a", "A", "b", "B", "ba", "BA", "c", "C", "d", "D"]
    assert r.execute_command("RANGE", "[b", "(c") == ["b", "B", "ba", "BA"]
    assert r.execute_command("RANGE", "(b", "[c", "LIMIT", "1") == ["ba", "BA"]
    for bad in (["b", "c"], ["+", "-"], ["[b"]):
        with pytest.raises(redis.ResponseError):
            r.execute_command("RANGE", *bad)
    with pytest.raises(redis.ResponseError, match="inverted range"):
        r.execute_command("RANGE", "[c", "[a")
    keys, values, offsets, resume = r.execute_command("SNAPSHOT", "KEY", "b", "KEY", "zz", "RANGE", "[b", "+",
                                                      "LIMIT", "2", "RANGE", "-", "(b")
    assert keys == ["b", "zz", "b", "ba", "a"]
    assert values == ["B", None, "B", "BA", "A"]
    assert offsets == [0, 1, 2, 4, 5]
    assert resume == [None, None, "(ba", None]
    # Inside a transaction: at its snapshot, with its own writes merged in.
    r2 = client(tsrv)
    r.execute_command("TXN", "BEGIN")
    r.set("bb", "mine")
    r2.set("b", "theirs")
    keys, values, _, _ = r.execute_command("SNAPSHOT", "RANGE", "[b", "[bb")
    assert list(zip(keys, values)) == [("b", "B"), ("ba", "BA"), ("bb", "mine")]
    assert r.execute_command("RANGE", "[bb", "[bb") == ["bb", "mine"]
    r.execute_command("TXN", "ABORT")
    with pytest.raises(redis.ResponseError, match="syntax error"):
        r.execute_command("SNAPSHOT", "POINT", "a")


def test_bad_input_leaves_data_intact(tsrv):
    r = client(tsrv)
    r.set("k", "v")
    with pytest.raises(redis.ResponseError, match="max-key-bytes"):
        r.set("x" * 2000, "v")
    with pytest.raises(redis.ResponseError, match="max-key-bytes"):
        r.execute_command("WATCH", "k", "x" * 2000)
    with pytest.raises(redis.ResponseError):
        r.set("k", "v" * 70000)
    assert r.get("k") == "v"
    r.execute_command("TXN", "BEGIN")
    r.set("k", "w")
    with pytest.raises(redis.ResponseError):
        r.append("k", "v" * 70000)
    assert r.get("k") == "w", "a refused command leaves the transaction as it was"
    assert r.execute_command("TXN", "COMMIT") == "OK"
    assert r.get("k") == "w"


def test_disconnect_aborts_the_open_transaction(tsrv):
    b = client(tsrv)
    for i in range(50):
        a = client(tsrv, single_connection_client=True)
        a.execute_command("TXN", "BEGIN")
        a.set(f"gone{i}", "1")
        a.close()
    # Every slot came back (a leak would hold collection back and, past max-transactions,
    # refuse TXN BEGIN), and nothing of the abandoned transactions is visible.
    assert b.execute_command("RANGE", "[gone", "(gonf") == []
    assert b.set("gone0", "2") is True and b.get("gone0") == "2"


def test_idle_transactions_time_out(tsrv):
    a, b = client(tsrv), client(tsrv)
    assert b.config_set("txn-idle-timeout", 100) is True
    try:
        a.execute_command("TXN", "BEGIN")
        a.set("idle", "1")
        # Idle for ten times the timeout (the sweep runs ten times a second): a wait is what
        # is being tested here.
        time.sleep(1.0)
        with pytest.raises(redis.ResponseError, match="txn-idle-timeout"):
            a.get("idle")
        with pytest.raises(redis.ResponseError, match="txn-idle-timeout"):
            a.set("idle", "2")  # still aborted until the client ends it
        assert a.execute_command("TXN", "ABORT") == "OK"
        assert a.get("idle") is None
    finally:
        b.config_set("txn-idle-timeout", 60000)


# ---- recorded histories ------------------------------------------------------------------------

def si_check_bin():
    p = os.environ.get("DUET_SI_CHECK")
    path = Path(p) if p else duet_bin().parent / "tests" / "txn" / "duet_si_check"
    assert path.exists(), f"{path} is missing: build the duet_si_check target (or set DUET_SI_CHECK)"
    return path


class History:
    """List-append transactions as duet_si_check reads them (see tests/txn/si_check_main.cpp)."""

    def __init__(self):
        self.stamp = itertools.count(1)  # invoke/complete stamps shared by every thread
        self.elem = itertools.count(1)   # unique appended elements
        self.lock = threading.Lock()
        self.lines = []

    def add(self, invoke, complete, committed, ops):
        body = "".join("\n" + " ".join(str(x) for x in op) for op in ops)
        with self.lock:
            self.lines.append(f"T {len(self.lines) + 1} {invoke} {complete} {1 if committed else 0}{body}")


def run_clients(port, history, n_txn, threads, seed):
    """Threads run n_txn transactions in four styles: MULTI/EXEC, WATCH + MULTI/EXEC,
    TXN BEGIN..COMMIT, and TXN BEGIN then a disconnect. Keys slide through a window of 12 so
    that contention stays high while lists stay short."""
    issued = itertools.count()
    errors = []

    def worker(w):
        rng = random.Random(seed * 1000 + w)
        r = redis.Redis(host="127.0.0.1", port=port, db=TXN_DB, decode_responses=True)
        try:
            while True:
                i = next(issued)
                if i >= n_txn:
                    return
                base = i // 16
                plan = []  # (key, elem or None)
                for _ in range(rng.choice((1, 2, 3, 4))):
                    k = base + rng.randrange(12)
                    plan.append((k, next(history.elem) if rng.random() < 0.5 else None))
                style = rng.random()
                if style < 0.02:
                    once = redis.Redis(host="127.0.0.1", port=port, db=TXN_DB, decode_responses=True,
                                       single_connection_client=True)
                    invoke = next(history.stamp)
                    once.execute_command("TXN", "BEGIN")
                    ops = []
                    for k, e in plan:
                        v = once.get(k) or ""
                        if e is not None:
                            once.append(k, f",{e}")
                            ops.append(("A", k, e, v))
                    once.close()  # no COMMIT: the server must abort it
                    history.add(invoke, next(history.stamp), False, ops)
                    continue
                interactive = style < 0.4
                p = r.pipeline(transaction=not interactive)
                if style > 0.85:
                    p.watch(*{str(k) for k, _ in plan})
                    p.multi()
                if interactive:
                    p.execute_command("TXN", "BEGIN")
                for k, e in plan:
                    p.get(k)
                    if e is not None:
                        p.append(k, f",{e}")
                if interactive:
                    p.execute_command("TXN", "COMMIT")
                invoke = next(history.stamp)
                committed = True
                try:
                    res = p.execute(raise_on_error=False) if interactive else p.execute()
                except redis.WatchError:
                    res, committed = None, False
                except redis.ResponseError as e:
                    assert str(e).startswith("conflict") or "ABORT" in str(e), str(e)
                    res, committed = None, False
                complete = next(history.stamp)
                if interactive:
                    committed = res[-1] == "OK"
                    if not committed:
                        assert isinstance(res[-1], redis.ResponseError) and "conflict" in str(res[-1]), res[-1]
                    res = res[1:-1]
                ops = []
                if res is not None:
                    j = 0
                    for k, e in plan:
                        v = res[j] or ""
                        j += 1
                        ops.append(("R", k, v))
                        if e is not None:
                            ops.append(("A", k, e, v))
                            j += 1
                else:  # aborted: its appends are recorded so that G1a can be seen
                    ops = [("A", k, e, "") for k, e in plan if e is not None]
                history.add(invoke, complete, committed, ops)
        except BaseException as e:  # noqa: BLE001 - reported by the test
            errors.append(repr(e))
        finally:
            r.close()

    ts = [threading.Thread(target=worker, args=(w,)) for w in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors[:3]
    return n_txn // 16 + 12  # keys used: 0 .. this - 1


def test_histories_are_snapshot_isolated(tsrv, tmp_path):
    """10^5 transactions from 8 redis-py clients (two per core on the test machine's 2 cores),
    every one recorded and the whole history checked for SI with real-time order."""
    n = int(100_000 * float(os.environ.get("DUET_TEST_SCALE", "1")))
    history = History()
    keys = run_clients(tsrv.port, history, n, threads=8, seed=11)
    r = client(tsrv)
    final = r.mget(list(range(keys)))
    def check(finals):
        path = tmp_path / "history.txt"
        with open(path, "w") as f:
            for rec in history.lines:
                f.write(rec + "\n")
            for k, v in enumerate(finals):
                f.write(f"F {k} {v or ''}\n")
        return subprocess.run([str(si_check_bin()), str(path)], capture_output=True, text=True, timeout=300)

    out = check(final)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.startswith(f"ok {n} transactions")
    committed = sum(1 for rec in history.lines if rec.split("\n", 1)[0].endswith(" 1"))
    assert n // 2 < committed < n, f"{committed} of {n} transactions committed"
    # Negative control: the same history with one committed append dropped from its key's
    # final list (a lost version) is rejected. The checker names what it meets first: the lost
    # append itself, or a transaction that read the dropped element, whose read is then no
    # longer a prefix of the final list; which one depends on the history.
    k = max(range(keys), key=lambda i: len(final[i] or ""))
    planted = list(final)
    planted[k] = planted[k][:planted[k].rindex(",")]
    out = check(planted)
    assert out.returncode == 1 and out.stdout.startswith(("lost update", "incompatible order")), \
        out.stdout + out.stderr


def _tsc_usable():
    try:
        return Path("/sys/devices/system/clocksource/clocksource0/current_clocksource").read_text().strip() == "tsc"
    except OSError:
        return False


def test_txn_clock_setting(server_factory):
    """--txn-clock tsc: txn databases take timestamps from the TSC (INFO says so, with the
    measured boundary), and a client that saw a counter's value never reads an older one
    afterwards, from any connection (real-time order across the commit wait). A bad value, or
    the TSC where the kernel does not use it, stops startup with the reason."""
    bad = subprocess.run([str(duet_bin()), "server", "--port", "0", "--txn-clock", "sundial"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0 and "txn-clock" in bad.stderr, bad.stderr
    if not _tsc_usable():
        p = subprocess.run([str(duet_bin()), "server", "--port", "0", "--database-kinds", "kv,1=txn",
                            "--txn-clock", "tsc"], capture_output=True, text=True, timeout=60)
        assert p.returncode != 0 and "counter clock" in p.stderr, p.stderr
        return
    s = server_factory(extra=["--database-kinds", "kv,1=txn", "--txn-clock", "tsc"])
    r = client(s)
    assert r.config_get("txn-clock") == {"txn-clock": "tsc"}
    with pytest.raises(redis.ResponseError):
        r.config_set("txn-clock", "counter")  # fixed at startup
    stop = threading.Event()
    errors = []

    def incr(i):
        c = client(s)
        while not stop.is_set():
            c.incr(f"n{i % 2}")

    def watch():
        # A value seen, then a fresh read on another connection: never smaller.
        a, b = client(s), client(s)
        seen = {"n0": 0, "n1": 0}
        while not stop.is_set():
            for k in seen:
                v = int(a.get(k) or 0)
                w = int(b.get(k) or 0)
                if w < v or v < seen[k]:
                    errors.append((k, seen[k], v, w))
                seen[k] = max(seen[k], w)

    threads = [threading.Thread(target=incr, args=(i,)) for i in range(4)] + [threading.Thread(target=watch)]
    for t in threads:
        t.start()
    time.sleep(1.5)
    stop.set()
    for t in threads:
        t.join()
    assert not errors, errors[:5]
    stats = r.info("duet")[f"txn_db{TXN_DB}"]
    assert stats["clock"] == "tsc" and stats["tsc_boundary_cycles"] > 0
    assert stats["commits"] > 100
    assert int(r.get("n0")) + int(r.get("n1")) == stats["commits"]
