"""The batch family on a `batch` database: accounts, blocks of transfers with outcomes equal to
serial execution in block order (checked against a Python replay), single transfers from many
clients, RESP3 maps, and bad input refused naming the transaction with nothing changed."""

import random
import threading

import pytest

from resp_client import Conn, RespError
from server_util import IS_REDIS

pytestmark = pytest.mark.skipif(IS_REDIS, reason="Duet-specific (batch keyspace)")


@pytest.fixture
def bsrv(server_factory):
    # Database 0 stays kv; database 1 is a batch keyspace.
    return server_factory(extra=["--database-kinds", "kv,1=batch"])


def batch_conn(s):
    c = s.conn()
    assert c.call("SELECT", 1) == "OK"
    return c


def replay(accounts, profile, block):
    """Serial execution in block order (SmallCoin / SmallCoin+), mutating `accounts`."""
    out = []
    for s, r, amt in block:
        a = accounts[s]
        if profile == "smallcoin":
            if a["bal"] >= amt:
                a["bal"] -= amt
                accounts[r]["bal"] += amt
                out.append("committed")
            else:
                out.append("aborted")
        else:
            if a["bal"] < a["gas"]:
                out.append("aborted")
                continue
            a["bal"] -= a["gas"]
            a["seq"] += 1
            if a["bal"] < amt:
                out.append("gas-only")
                continue
            a["bal"] -= amt
            a["sent"] += 1
            accounts[r]["bal"] += amt
            accounts[r]["rec"] += 1
            out.append("committed")
    return out


def test_blocks_equal_serial_replay(bsrv):
    c = batch_conn(bsrv)
    rng = random.Random(5)
    n = 200
    accounts = {k: {"bal": rng.choice([0, 10, 100]), "gas": 1, "seq": 0, "sent": 0, "rec": 0} for k in range(n)}
    args = []
    for k, a in accounts.items():
        args += [k, a["bal"], a["gas"]]
    assert c.call("BATCH.CREATE", *args) == "OK"
    for i in range(30):
        profile = "smallcoin" if i % 2 else "smallcoin+"
        # Skewed: a few hot accounts, so blocks conflict and some withdrawals fail.
        block = [(int(rng.paretovariate(1.2)) % n, rng.randrange(n), rng.randint(1, 20))
                 for _ in range(rng.randint(1, 300))]
        flat = [x for t in block for x in t]
        got = c.call("BATCH.BLOCK", profile, *flat)
        assert got == replay(accounts, profile, block), f"block {i}"
    for k in range(n):
        assert c.call("BATCH.BALANCE", k) == accounts[k]["bal"]
    c.call("HELLO", 3)
    m = c.call("BATCH.ACCOUNT", 7)
    assert m[b"balance"] == accounts[7]["bal"] and m[b"seq_num"] == accounts[7]["seq"]
    assert m[b"sent_events"] == accounts[7]["sent"] and m[b"rec_events"] == accounts[7]["rec"]
    st = c.call("BATCH.STATS")
    assert int(st[b"blocks"]) == 30
    assert 0 <= float(st[b"abort_rate"]) <= 1
    assert int(st[b"gpu_failures"]) == 0
    # INFO duet: one line per open batch database, with the same figures.
    info = c.call("INFO", "duet")
    info = info.decode() if isinstance(info, bytes) else str(info)
    lines = dict(l.split(":", 1) for l in info.splitlines() if ":" in l)
    fields = dict(kv.split("=") for kv in lines["batch_db1"].split(","))
    assert int(fields["blocks"]) == 30 and int(fields["transfers"]) == int(st[b"transfers"])
    for k in ("abort_rate", "fast_path_failure_rate", "fallback_share", "rerun_share"):
        assert 0 <= float(fields[k]) <= 1, k
    assert float(fields["latency_p50_us"]) > 0 and float(fields["latency_p99_us"]) >= float(fields["latency_p50_us"])
    assert int(fields["gpu_failures"]) == 0
    assert "threads" in lines["batch_db1_engine"]
    assert "batch_db0" not in lines  # database 0 is kv


def test_bad_input_names_the_transaction_and_changes_nothing(bsrv):
    c = batch_conn(bsrv)
    assert c.call("BATCH.CREATE", 1, 50, 0, 2, 50, 0) == "OK"
    cases = [
        (["smallcoin", 1, 2, 5, 1, 3, 5], "transaction 1: unknown receiver account 3"),
        (["smallcoin", 1, 2, 5, 1, 2, 0], "transaction 1: amount 0"),
        (["smallcoin", 1, 2, -4], "transaction 0: amount -4"),
        (["smallcoin", 1, 2, 1 << 41], "transaction 0: amount"),
        (["smallcoin", 1, 2, "x"], "transaction 0: amount is not an integer"),
        (["smallcoin", "bob", 2, 5], "account 'bob'"),
        (["nosuchprofile", 1, 2, 5], "profile must be"),
        (["smallcoin", 1, 2], "wrong number of arguments"),
    ]
    for args, what in cases:
        r = c.call("BATCH.BLOCK", *args)
        assert isinstance(r, RespError) and what in r, (args, r)
        assert c.call("BATCH.BALANCE", 1) == 50 and c.call("BATCH.BALANCE", 2) == 50
    assert isinstance(c.call("BATCH.BALANCE", 9), RespError)
    assert isinstance(c.call("BATCH.CREATE", 1, 5, 0), RespError)  # exists
    assert isinstance(c.call("BATCH.CREATE", 3, -5, 0), RespError)
    # Batch commands on a kv database, and kv commands on the batch one, are refused.
    c.call("SELECT", 0)
    assert isinstance(c.call("BATCH.BALANCE", 1), RespError)
    c.call("SELECT", 1)
    assert isinstance(c.call("GET", "k"), RespError)


def test_single_transfers_from_many_clients(bsrv):
    c = batch_conn(bsrv)
    n = 32
    args = []
    for k in range(n):
        args += [k, 100, 0]
    assert c.call("BATCH.CREATE", *args) == "OK"
    outcomes = []
    lock = threading.Lock()

    def client(t):
        cc = batch_conn(bsrv)
        rng = random.Random(t)
        got = []
        for _ in range(40):
            got.append(cc.call("BATCH.TRANSFER", rng.randrange(n), rng.randrange(n), rng.randint(1, 60)))
        cc.close()
        with lock:
            outcomes.extend(got)

    threads = [threading.Thread(target=client, args=(t,)) for t in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(outcomes) == 240 and set(outcomes) <= {"committed", "aborted"}
    total = sum(c.call("BATCH.BALANCE", k) for k in range(n))
    assert total == 100 * n  # money is conserved
    assert all(c.call("BATCH.BALANCE", k) >= 0 for k in range(n))
