"""CH-benCHmark's procedures through a real server and redis-py (docs/compute.md, "CH through the
server"; bench/compute/ch_proc.cpp): the small one-warehouse database loaded by ch.populate,
NewOrder, Payment (by id and by last name), Delivery, Order-Status and Stock-Level as FCALLs,
TPC-C's consistency conditions (ch.check) after each step and after concurrent NewOrders on one
district (every order id given once, consecutively: the re-run on conflict at work), the 1%
rollback applying nothing, Q1 and Q6 against a reference computed here from a RANGE of ORDER-LINE,
Q3 against one computed from RANGEs of its four tables,
the freshness check catching a planted unacknowledged order, Q1 and Q6 from the column mirror
(ch.mirror) equal to the reference while NewOrders commit around them, and bad arguments refused
with nothing applied.

The library is build/bench/libduet_ch_proc.so (beside $DUET_BIN's bench/ directory)."""

import shutil
import struct
import threading
from collections import defaultdict
from pathlib import Path

import pytest

from server_util import IS_REDIS, duet_bin

redis = pytest.importorskip("redis")
pytestmark = pytest.mark.skipif(IS_REDIS, reason="Duet-specific (native procedures)")

DATE_2007 = 1167696000  # Q1's bound
DATE_1999, DATE_2020 = 915148800, 1577836800  # Q6's
CUSTOMER_TAG, NEW_ORDER_TAG, ORDER_TAG, ORDER_LINE_TAG = 3, 5, 6, 7
UNUSED_ITEM = 0


@pytest.fixture
def ch(server_factory, tmp_path):
    lib = duet_bin().resolve().parent / "bench" / "libduet_ch_proc.so"
    if not lib.exists():
        pytest.skip(f"{lib} is not built (build the duet_ch_proc target)")
    d = tmp_path / "procs"
    d.mkdir()
    shutil.copy(lib, d / "libduet_ch_proc.so")
    s = server_factory(threads=2, extra=["--database-kinds", "txn", "--procedure-enable", "yes",
                                         "--procedure-dir", str(d), "--procedure-threads", "2"])
    r = redis.Redis(host="127.0.0.1", port=s.port, decode_responses=True)
    assert r.execute_command("PROCEDURE", "LOAD", "libduet_ch_proc.so") == "ch"
    rows = r.fcall("ch.populate", 0, "small", 1, 7)
    assert rows > 40000
    assert r.fcall_ro("ch.check", 0, 1) == "OK"
    return s, r


def order_lines(s):
    """Every ORDER-LINE row as (o_id, d_id, w_id, number, i_id, supply_w_id, delivery_d,
    quantity, amount): the codec's first nine int64 fields, little-endian."""
    rb = redis.Redis(host="127.0.0.1", port=s.port)
    flat = rb.execute_command("RANGE", b"[" + bytes([ORDER_LINE_TAG]), b"(" + bytes([ORDER_LINE_TAG + 1]))
    return [struct.unpack_from("<9q", v) for v in flat[1::2]]


def table_rows(s, tag):
    """Every row of one table, as bytes, in key order."""
    rb = redis.Redis(host="127.0.0.1", port=s.port)
    return rb.execute_command("RANGE", b"[" + bytes([tag]), b"(" + bytes([tag + 1]))[1::2]


def q3_reference(s, lines):
    """CH Q3 (c_state LIKE 'A%', o_entry_d after 2007-01-02) over the tables' rows: [o, w, d,
    revenue, entry_d] by revenue descending, entry date, then (w, d, o)."""
    orders = {}
    for v in table_rows(s, ORDER_TAG):
        o, d, w, c, entry_d = struct.unpack_from("<5q", v)
        orders[(w, d, o)] = (c, entry_d)
    states = {}
    for v in table_rows(s, CUSTOMER_TAG):
        c, d, w = struct.unpack_from("<3q", v)
        states[(w, d, c)] = v[50:52]  # c_state: after four int64, c_credit (2) and c_last (16)
    revenue = defaultdict(int)
    for (o, d, w, _, _, _, _, _, amount) in lines:
        revenue[(w, d, o)] += amount
    rows = []
    for v in table_rows(s, NEW_ORDER_TAG):
        o, d, w = struct.unpack_from("<3q", v)
        c, entry_d = orders[(w, d, o)]
        if entry_d > DATE_2007 and states[(w, d, c)][:1] == b"A" and (w, d, o) in revenue:
            rows.append([o, w, d, revenue[(w, d, o)], entry_d])
    rows.sort(key=lambda r: (-r[3], r[4], r[1], r[2], r[0]))
    return rows


def q1_reference(lines):
    groups = defaultdict(lambda: [0, 0, 0])
    for (_, _, _, number, _, _, delivery_d, quantity, amount) in lines:
        if delivery_d > DATE_2007:
            g = groups[number]
            g[0] += quantity
            g[1] += amount
            g[2] += 1
    return [[n, *groups[n]] for n in sorted(groups)]


def q6_reference(lines):
    return sum(amount for (*_, delivery_d, quantity, amount) in lines
               if DATE_1999 <= delivery_d < DATE_2020 and 1 <= quantity <= 100000)


def new_order(r, w, d, c, date, lines):
    args = [w, d, c, date]
    for item, supply_w, quantity in lines:
        args += [item, supply_w, quantity]
    return r.fcall("ch.new_order", 0, *args)


def test_transactions_keep_the_conditions_and_queries_match(ch):
    s, r = ch
    # A NewOrder: its id is the district's next, its lines are read back by Q1 and Q6 once
    # delivered.
    o_id, total = new_order(r, 1, 3, 17, 1451606400, [(5, 1, 2), (9, 1, 3), (5, 1, 1)])
    assert o_id == 301 and total > 0
    lines = order_lines(s)
    assert sum(1 for l in lines if l[:3] == (o_id, 3, 1)) == 3
    assert r.fcall_ro("ch.check", 0, 1) == "OK"
    # Payment by id and by last name (name 0 exists in every district of the small scale).
    assert r.fcall("ch.payment", 0, 1, 3, 1, 3, 17, 12345, 1 << 48, 1451606401) == "OK"
    assert r.fcall("ch.payment", 0, 1, 4, 1, 4, "name:0", 500, (1 << 48) + 1, 1451606402) == "OK"
    # Delivery: each district's oldest undelivered order (the small load leaves 211 .. 300).
    delivered = r.fcall("ch.delivery", 0, 1, 7, 1451606500)
    assert delivered == [211] * 10
    assert r.fcall("ch.delivery", 0, 1, 7, 1451606501) == [212] * 10
    assert r.fcall_ro("ch.check", 0, 1) == "OK"
    # Read-only operations.
    assert r.fcall_ro("ch.order_status", 0, 1, 3, 17) >= 0
    assert r.fcall_ro("ch.order_status", 0, 1, 3, "name:1") >= 0
    assert r.fcall_ro("ch.stock_level", 0, 1, 3, 15) >= 0
    # The queries on the server's snapshot equal the reference over the same rows.
    lines = order_lines(s)
    start_ts, stale, rows, plan = r.fcall_ro("ch.q1", 0, 1, 3, o_id)
    assert start_ts > 0 and stale == 0 and plan == "snapshot"
    assert rows == q1_reference(lines)
    _, stale, revenue, plan = r.fcall_ro("ch.q6", 0)
    assert stale == 0 and revenue == q6_reference(lines) and plan == "snapshot"
    _, stale, rows = r.fcall_ro("ch.q3", 0, 1, 3, o_id)
    want = q3_reference(s, lines)
    assert stale == 0 and len(want) > 5 and rows == want


def test_rollback_and_bad_arguments_apply_nothing(ch):
    s, r = ch
    before = order_lines(s)
    with pytest.raises(redis.ResponseError, match="^ROLLBACK ch.new_order"):
        new_order(r, 1, 2, 5, 1451606400, [(3, 1, 1), (UNUSED_ITEM, 1, 1)])
    bad = [
        ("ch.new_order", [1, 2, 5, 1451606400, 3, 1]),             # a line cut short
        ("ch.new_order", [0, 2, 5, 1451606400, 3, 1, 1]),          # warehouse 0
        ("ch.new_order", [1, 11, 5, 1451606400, 3, 1, 1]),         # district 11
        ("ch.new_order", [1, 2, 5, 1451606400, 3, 1, 0]),          # quantity 0
        ("ch.payment", [1, 2, 1, 2, "name:1000", 5, 7, 1]),        # no such last name number
        ("ch.payment", [1, 2, 1, 2, "x", 5, 7, 1]),
        ("ch.delivery", [1, 11, 1]),                               # carrier 11
        ("ch.load", ["k"]),                                        # a key without a value
        ("ch.populate", ["full", 100]),                            # too many rows for one transaction
        ("ch.check", []),
    ]
    for name, args in bad:
        with pytest.raises(redis.ResponseError, match=f"^{name}"):  # redis-py drops the "ERR "
            r.fcall(name, 0, *args)
    with pytest.raises(redis.ResponseError, match="ch query: acknowledged orders"):
        r.fcall_ro("ch.q1", 0, 1, 2)
    with pytest.raises(redis.ResponseError, match="may write"):
        r.fcall_ro("ch.new_order", 0, 1, 2, 5, 1451606400, 3, 1, 1)
    with pytest.raises(redis.ResponseError, match="load the database first"):
        new_order(r, 2, 1, 1, 1451606400, [(3, 2, 1)])  # warehouse 2 was never loaded
    assert order_lines(s) == before
    # The district's next order id did not move: the next NewOrder takes 301.
    assert new_order(r, 1, 2, 5, 1451606400, [(3, 1, 1)])[0] == 301
    assert r.fcall_ro("ch.check", 0, 1) == "OK"


def test_freshness_check_counts_orders_missing_from_the_snapshot(ch):
    _, r = ch
    o_id, _ = new_order(r, 1, 1, 1, 1451606400, [(1, 1, 1)])
    _, stale, _, _ = r.fcall_ro("ch.q1", 0, 1, 1, o_id, 1, 1, 300)
    assert stale == 0
    # A planted stale query: it is told of an order acknowledged after its snapshot (one that no
    # snapshot holds yet), so the check must count it.
    _, stale, _, _ = r.fcall_ro("ch.q6", 0, 1, 1, o_id, 1, 1, o_id + 1)
    assert stale == 1


def test_concurrent_new_orders_on_one_district_get_consecutive_ids(ch):
    # Four clients place 25 NewOrders each on district 5: each reads and bumps D_NEXT_O_ID, so
    # concurrent ones conflict and the server re-runs the losers. The recorded history must give
    # every order exactly one id, 301 .. 400, and the conditions must hold.
    s, r = ch
    ids, errors = [], []

    def place(k):
        c = redis.Redis(host="127.0.0.1", port=s.port, decode_responses=True)
        try:
            for i in range(25):
                ids.append(new_order(c, 1, 5, 1 + k * 25 + i, 1451606400 + i, [(1 + i, 1, 1), (2 + k, 1, 2)])[0])
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    ts = [threading.Thread(target=place, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors
    assert sorted(ids) == list(range(301, 401))
    assert r.fcall_ro("ch.check", 0, 1) == "OK"
    listed = {e[1]: dict(zip(e[::2], e[1::2])) for e in r.execute_command("PROCEDURE", "LIST")}
    assert listed["ch.new_order"]["calls"] == 100
    assert "long" in listed["ch.q1"]["flags"] and "no-writes" in listed["ch.q1"]["flags"]


def test_q1_and_q6_from_the_mirror_equal_the_reference_under_new_orders(ch):
    # ch.mirror attaches ORDER-LINE's column mirror; from then on Q1 and Q6 read it at their start.
    # Writers place NewOrders and Deliveries (which date order lines, changing both queries)
    # meanwhile; each query is checked against the reference computed from
    # a RANGE taken in the same state: the writers pause for each check, so the query and the RANGE
    # see the same rows, and every acknowledged order must be in the query's snapshot.
    s, r = ch
    with pytest.raises(redis.ResponseError, match="ch.mirror takes"):
        r.fcall("ch.mirror", 0, "tpu")
    assert r.fcall("ch.mirror", 0, "cpu", 2) == "OK"
    assert r.fcall("ch.mirror", 0, "cpu", 2) == "OK"  # the same definition again: nothing to do
    with pytest.raises(redis.ResponseError, match="cannot be attached"):
        r.fcall("ch.mirror", 0, "cpu", 3)  # another definition
    acked, errors, gate, stop = [], [], threading.Lock(), threading.Event()

    def place(k):
        c = redis.Redis(host="127.0.0.1", port=s.port, decode_responses=True)
        i = 0
        try:
            while not stop.is_set():
                with gate:
                    o_id, _ = new_order(c, 1, 1 + k, 1 + i % 30, 1451606400 + i, [(1 + i % 50, 1, 1 + i % 9)])
                    acked.append((1, 1 + k, o_id))
                    if i % 3 == k:  # Delivery dates order lines: what Q1 and Q6 select on
                        c.fcall("ch.delivery", 0, 1, 1 + i % 10, 1451606500 + i)
                i += 1
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    ts = [threading.Thread(target=place, args=(k,)) for k in range(2)]
    for t in ts:
        t.start()
    try:
        for _ in range(6):
            with gate:  # no NewOrder in flight: the query and the RANGE see the same rows
                acks = [x for a in acked[-5:] for x in a]
                _, stale, rows, plan = r.fcall_ro("ch.q1", 0, *acks)
                _, stale6, revenue, plan6 = r.fcall_ro("ch.q6", 0, *acks)
                lines = order_lines(s)
            assert plan == "mirror" and plan6 == "mirror" and stale == 0 and stale6 == 0
            assert rows == q1_reference(lines)
            assert revenue == q6_reference(lines)
    finally:
        stop.set()
        for t in ts:
            t.join()
    assert not errors, errors
    assert len(acked) > 0
    assert r.fcall_ro("ch.check", 0, 1) == "OK"
