"""Large values and keys: 1 MiB and 32 MiB values round-trip byte for byte, through every
command that returns a value, and APPEND builds a large value exactly."""

import hashlib
import random

import pytest

from resp_client import RespError, encode

MiB = 1 << 20


def pattern(n, seed):
    """n bytes that differ at every position from other seeds' (so a misplaced chunk shows)."""
    rng = random.Random(seed)
    block = rng.randbytes(64 * 1024)
    reps = n // len(block) + 1
    return (block * reps)[:n]


@pytest.mark.parametrize("size", [MiB - 1, MiB, MiB + 1, 32 * MiB])
def test_large_value_round_trip(srv, size):
    """A value of ~1 MiB or 32 MiB written with SET reads back identically with GET, MGET and
    GETSET, and STRLEN reports its size."""
    v = pattern(size, size)
    with srv.conn(timeout=60) as c:
        assert c.call("SET", "big", v) == "OK"
        got = c.call("GET", "big")
        assert len(got) == size and hashlib.sha1(got).digest() == hashlib.sha1(v).digest()
        assert c.call("STRLEN", "big") == size
        m = c.call("MGET", "nokey", "big")
        assert m[0] is None and m[1] == v
        assert c.call("GETSET", "big", "small") == v
        assert c.call("GET", "big") == b"small"


def test_large_values_in_a_pipeline(srv):
    """Eight 1 MiB values SET and read back in one pipeline, interleaved with small commands."""
    vals = [pattern(MiB, 1000 + i) for i in range(8)]
    with srv.conn(timeout=60) as c:
        cmds = []
        for i, v in enumerate(vals):
            cmds += [("SET", f"b{i}", v), ("PING",), ("GET", f"b{i}")]
        got = c.pipeline(cmds)
        for i, v in enumerate(vals):
            assert got[3 * i] == "OK" and got[3 * i + 1] == "PONG"
            assert got[3 * i + 2] == v, f"value {i}"
        assert c.call("MGET", *[f"b{i}" for i in range(8)]) == vals


def test_append_builds_large_value(srv):
    """APPEND of 64 KiB chunks builds a 4 MiB value whose length and bytes are exact after
    every 16 chunks."""
    chunk_size, n = 64 * 1024, 64
    expect = bytearray()
    with srv.conn(timeout=60) as c:
        for i in range(n):
            chunk = pattern(chunk_size, 5000 + i)
            expect += chunk
            assert c.call("APPEND", "grow", chunk) == len(expect)
            if i % 16 == 15:
                assert c.call("GET", "grow") == bytes(expect), f"after {i + 1} chunks"
        assert c.call("STRLEN", "grow") == n * chunk_size


def test_append_small_to_large_and_large_to_small(srv):
    """APPEND crosses from an inline-sized value to 1 MiB and past, and a 1 MiB value replaced
    by a 1-byte one is really small again."""
    with srv.conn(timeout=60) as c:
        c.call("SET", "x", "ab")
        big = pattern(MiB, 77)
        assert c.call("APPEND", "x", big) == MiB + 2
        assert c.call("GET", "x") == b"ab" + big
        c.call("SET", "x", "z")
        assert c.call("GET", "x") == b"z" and c.call("STRLEN", "x") == 1


def test_large_value_sent_in_pieces(srv):
    """A 4 MiB SET written in 1000 uneven pieces is assembled correctly."""
    v = pattern(4 * MiB, 9)
    req = encode("SET", "pieces", v)
    rng = random.Random(1)
    cuts = sorted(rng.sample(range(1, len(req)), 999))
    with srv.conn(timeout=60) as c:
        prev = 0
        for cut in cuts + [len(req)]:
            c.send(req[prev:cut])
            prev = cut
        assert c.read_reply() == "OK"
        assert c.call("GET", "pieces") == v


def test_long_keys(srv):
    """Keys of 1000 and 60000 bytes work like short ones (SET, GET, EXISTS, DEL, SCAN)."""
    with srv.conn(timeout=60) as c:
        for n in (1000, 60000):
            k = pattern(n, n)
            assert c.call("SET", k, b"v%d" % n) == "OK"
            assert c.call("GET", k) == b"v%d" % n
            assert c.call("EXISTS", k) == 1
        cur, seen = b"0", set()
        while True:
            cur, ks = c.call("SCAN", cur)
            seen.update(ks)
            if cur == b"0":
                break
        assert seen == {pattern(1000, 1000), pattern(60000, 60000)}
        assert c.call("DEL", pattern(60000, 60000)) == 1


def test_key_over_64k_is_served_or_rejected_cleanly(srv):
    """A 100 KiB key is either stored like any other (Redis) or refused with an error reply; in
    both cases the connection and the server keep working and GET agrees with SET's answer."""
    k = pattern(100 * 1024, 3)
    with srv.conn(timeout=60) as c:
        r = c.call("SET", k, "v")
        assert r == "OK" or isinstance(r, RespError), r
        g = c.call("GET", k)
        if r == "OK":
            assert g == b"v"
        else:
            assert g is None or isinstance(g, RespError), g
        assert c.call("PING") == "PONG"
