"""Databases and the keyspace as a whole: SELECT isolation, FLUSHDB of one database, DBSIZE
exactness, and SCAN's guarantee (every key present for the whole iteration is returned)."""

import random
import threading
import time

import pytest

from resp_client import Conn


def scan_all(c, match=None, count=None, limit_calls=1_000_000):
    """Runs a full SCAN iteration; returns (list of keys with duplicates, number of calls)."""
    cur, keys, calls = b"0", [], 0
    extra = []
    if match is not None:
        extra += ["MATCH", match]
    if count is not None:
        extra += ["COUNT", str(count)]
    while True:
        r = c.call("SCAN", cur, *extra)
        assert isinstance(r, list) and len(r) == 2, r
        cur, batch = r
        assert isinstance(cur, bytes) and cur.isdigit(), cur
        keys += batch
        calls += 1
        assert calls <= limit_calls, "SCAN did not terminate"
        if cur == b"0":
            return keys, calls


def _keyset(rng):
    """5000 distinct keys: text keys, binary keys (NUL, CR/LF, 0x80-0xFF), and keys of every
    length from 1 to 200 bytes."""
    keys = set()
    for n in range(1, 201):
        keys.add(bytes(rng.randrange(256) for _ in range(n)))
        keys.add(b"len:" + b"L" * (n - 1) if n > 4 else b"l" * n)
    for i in range(1000):
        keys.add(b"bin:" + bytes(rng.randrange(256) for _ in range(rng.randrange(1, 40))))
    keys.update({b"\x00", b"\r\n", b"\xff" * 8, b"\xf0\x00", b"*", b"?", b"[", b"\\"})
    i = 0
    while len(keys) < 5000:
        keys.add(f"user:{i}".encode())
        i += 1
    return sorted(keys)


def test_select_isolates_databases(srv):
    """The same key in databases 0, 1 and 15 holds three independent values; writes, INCR and
    DEL in one database leave the others untouched."""
    with srv.conn() as c:
        for db in (0, 1, 15):
            assert c.call("SELECT", db) == "OK"
            assert c.call("SET", "shared", f"db{db}") == "OK"
            assert c.call("INCRBY", "n", db + 1) == db + 1
        for db in (0, 1, 15):
            c.call("SELECT", db)
            assert c.call("GET", "shared") == f"db{db}".encode()
            assert c.call("GET", "n") == str(db + 1).encode()
            assert c.call("DBSIZE") == 2
        c.call("SELECT", 1)
        assert c.call("DEL", "shared") == 1
        c.call("SELECT", 0)
        assert c.call("GET", "shared") == b"db0"
        c.call("SELECT", 7)
        assert c.call("GET", "shared") is None and c.call("DBSIZE") == 0


def test_select_is_per_connection(srv):
    """SELECT changes only the calling connection's database."""
    with srv.conn() as a, srv.conn() as b:
        a.call("SELECT", 3)
        a.call("SET", "k", "in3")
        assert b.call("GET", "k") is None
        b.call("SELECT", 3)
        assert b.call("GET", "k") == b"in3"


def test_flushdb_only_selected_db(srv):
    """FLUSHDB empties the selected database only; the others keep every key."""
    with srv.conn() as c:
        for db in range(4):
            c.call("SELECT", db)
            c.pipeline([("SET", f"k{i}", f"{db}-{i}") for i in range(100)])
        c.call("SELECT", 2)
        assert c.call("FLUSHDB") == "OK"
        assert c.call("DBSIZE") == 0
        assert c.call("GET", "k1") is None
        for db in (0, 1, 3):
            c.call("SELECT", db)
            assert c.call("DBSIZE") == 100
            assert c.call("MGET", "k0", "k99") == [f"{db}-0".encode(), f"{db}-99".encode()]
        c.call("SELECT", 2)
        assert c.call("SET", "k1", "again") == "OK" and c.call("DBSIZE") == 1


def test_dbsize_exact(srv):
    """DBSIZE is exact after inserts, overwrites, deletes of present and absent keys, MSET with
    repeated keys, INCR/APPEND creating keys, and SET NX/XX refusals."""
    rng = random.Random(3)
    model = set()
    with srv.conn() as c:
        for step in range(2000):
            k = f"d:{rng.randrange(300)}"
            op = rng.randrange(7)
            if op == 0:
                c.call("SET", k, "v")
                model.add(k)
            elif op == 1:
                c.call("DEL", k, k)
                model.discard(k)
            elif op == 2:
                k2 = f"d:{rng.randrange(300)}"
                c.call("MSET", k, "1", k2, "2", k, "3")
                model |= {k, k2}
            elif op == 3:
                j = rng.randrange(50)
                assert type(c.call("INCR", f"i:{j}")) is int
                model.add(f"i:{j}")
            elif op == 4:
                c.call("APPEND", k, "x")
                model.add(k)
            elif op == 5:
                if c.call("SET", k, "nx", "NX") == "OK":
                    assert k not in model
                    model.add(k)
            else:
                r = c.call("SET", k, "xx", "XX")
                assert (r == "OK") == (k in model)
            if step % 50 == 0:
                assert c.call("DBSIZE") == len(model), f"step {step}"
        assert c.call("DBSIZE") == len(model)
        keys, _ = scan_all(c, count=100)
        assert {k.decode() for k in keys} == model


@pytest.fixture
def db_5000(srv):
    """Database 0 filled with the 5000 keys of _keyset (value = the key reversed)."""
    keys = _keyset(random.Random(42))
    with srv.conn() as c:
        for i in range(0, len(keys), 500):
            args = []
            for k in keys[i:i + 500]:
                args += [k, k[::-1]]
            assert c.call("MSET", *args) == "OK"
        assert c.call("DBSIZE") == len(keys)
    return keys


def test_scan_full_iteration_5000_keys(srv, db_5000):
    """A full SCAN iteration with the default COUNT returns exactly the 5000 keys as a set
    (binary keys and lengths 1..200 included); duplicates are allowed."""
    with srv.conn() as c:
        keys, calls = scan_all(c)
    assert set(keys) == set(db_5000), (f"missing {len(set(db_5000) - set(keys))}, "
                                      f"unexpected {len(set(keys) - set(db_5000))}")
    assert calls > 1


@pytest.mark.parametrize("count", [1, 7, 1000, 100000])
def test_scan_count(srv, db_5000, count):
    """SCAN with COUNT 1, 7, 1000 and 100000 returns every key; a larger COUNT needs fewer
    calls (COUNT 100000 may answer the whole database in one call)."""
    with srv.conn(timeout=30) as c:
        keys, calls = scan_all(c, count=count)
    assert set(keys) == set(db_5000)
    if count >= 1000:
        assert calls <= 5000 // count * 3 + 3, f"{calls} calls with COUNT {count}"


def test_scan_match(srv, db_5000):
    """SCAN MATCH returns exactly the keys that match, across the full iteration, with small
    and large COUNT."""
    want = {k for k in db_5000 if k.startswith(b"user:1")}
    with srv.conn() as c:
        for count in (None, 10, 5000):
            keys, _ = scan_all(c, match="user:1*", count=count)
            assert set(keys) == want, f"COUNT {count}"
        keys, _ = scan_all(c, match="bin:*", count=50)
        assert set(keys) == {k for k in db_5000 if k.startswith(b"bin:")}
        keys, _ = scan_all(c, match=b"\\*", count=500)
        assert set(keys) == {b"*"}


def test_scan_other_db_and_empty(srv, db_5000):
    """SCAN sees only the selected database."""
    with srv.conn() as c:
        c.call("SELECT", 9)
        c.call("SET", "only-in-9", "x")
        keys, _ = scan_all(c, count=10)
        assert keys == [b"only-in-9"]


def test_scan_guarantee_under_concurrent_writes(srv, db_5000):
    """While another client inserts new keys and deletes keys outside a stable set, a full SCAN
    still returns every key of the stable set (present for the whole iteration)."""
    stable = set(db_5000[::2])
    volatile = db_5000[1::2]
    stop = threading.Event()
    err = []

    def churn():
        rng = random.Random(5)
        try:
            with Conn(srv.port, timeout=30) as c:
                i = 0
                while not stop.is_set():
                    i += 1
                    c.pipeline([("SET", f"new:{i}:{j}", "x") for j in range(20)]
                               + [("DEL", volatile[rng.randrange(len(volatile))]) for _ in range(10)])
        except BaseException as e:  # noqa: BLE001
            err.append(e)

    t = threading.Thread(target=churn, daemon=True)
    t.start()
    try:
        with srv.conn(timeout=30) as c:
            deadline = time.monotonic() + 60
            cur, seen = b"0", set()
            while True:
                cur, batch = c.call("SCAN", cur, "COUNT", "20")
                seen.update(batch)
                if cur == b"0":
                    break
                assert time.monotonic() < deadline, "SCAN under churn did not finish"
    finally:
        stop.set()
        t.join(30)
    assert not err, err
    missing = stable - seen
    assert not missing, f"{len(missing)} stable keys never returned, e.g. {sorted(missing)[:3]}"


def test_flushdb_then_scan_and_reuse(srv, db_5000):
    """After FLUSHDB of a 5000-key database, SCAN returns nothing, DBSIZE is 0, and the same
    keys can be written again with new values."""
    with srv.conn() as c:
        assert c.call("FLUSHDB") == "OK"
        keys, _ = scan_all(c, count=1000)
        assert keys == [] and c.call("DBSIZE") == 0
        assert c.call("MGET", *db_5000[:50]) == [None] * 50
        c.pipeline([("SET", k, b"again") for k in db_5000[:100]])
        assert c.call("DBSIZE") == 100
        assert c.call("MGET", *db_5000[:100]) == [b"again"] * 100
