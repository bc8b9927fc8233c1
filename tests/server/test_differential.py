"""Differential test: the same seeded random command sequence is sent to the server under test
and to a real redis-server (when installed), one command at a time on one connection each, and
every reply must match: same RESP type and bytes for non-errors, and for errors the same
message (first the error code word, then the exact text for the messages the contract fixes).

The generator covers the deterministic string commands (no SCAN cursors, INFO, CLIENT,
COMMAND, TTL options) with argument values chosen at the edges: empty and binary values,
integers at the 64-bit bounds, malformed integers, wrong arities and option combinations."""

import random
import shutil

import pytest

from resp_client import RespError
from server_util import IS_REDIS, ServerProcess

pytestmark = pytest.mark.skipif(IS_REDIS or shutil.which("redis-server") is None,
                                reason="needs the duet server and redis-server to compare")

EXACT_ERRORS = ("ERR wrong number of arguments", "ERR value is not an integer or out of range",
                "ERR increment or decrement would overflow", "ERR syntax error", "ERR DB index is out of range",
                "ERR unknown command")

KEYS = [b"a", b"b", b"c", b"", b"\x00", b"\xf0\xff", b"12345678", b"long-key-" + b"x" * 40]
VALUES = [b"", b"0", b"1", b"-1", b"01", b" 1", b"+1", b"1.5", b"abc", b"9223372036854775807",
          b"-9223372036854775808", b"9223372036854775806", b"-9223372036854775807", b"99999999999999999999",
          b"12345678", b"\x00\x01\x02", b"\xf0" * 8, b"v" * 100, b"-0", b"1e5"]
INCRS = [b"0", b"1", b"-1", b"100", b"-100", b"9223372036854775807", b"-9223372036854775808", b"abc", b"",
         b"1.0", b"9223372036854775808"]


def gen_command(rng):
    k = lambda: rng.choice(KEYS)  # noqa: E731
    v = lambda: rng.choice(VALUES)  # noqa: E731
    r = rng.randrange(100)
    if r < 14:
        return [b"GET", k()]
    if r < 30:
        opts = rng.choice([[], [], [b"NX"], [b"XX"], [b"GET"], [b"NX", b"GET"], [b"XX", b"GET"], [b"NX", b"XX"],
                           [b"GET", b"GET"], [b"xx"], [b"BOGUS"]])
        return [b"SET", k(), v()] + opts
    if r < 34:
        return [b"GETSET", k(), v()]
    if r < 40:
        return [b"DEL"] + [k() for _ in range(rng.randrange(1, 4))]
    if r < 45:
        return [b"EXISTS"] + [k() for _ in range(rng.randrange(1, 4))]
    if r < 50:
        return [b"MGET"] + [k() for _ in range(rng.randrange(1, 5))]
    if r < 54:
        args = [b"MSET"]
        for _ in range(rng.randrange(1, 4)):
            args += [k(), v()]
        return args
    if r < 64:
        return [rng.choice([b"INCR", b"DECR", b"incr"]), k()]
    if r < 70:
        return [b"INCRBY", k(), rng.choice(INCRS)]
    if r < 76:
        return [b"APPEND", k(), v()]
    if r < 80:
        return [b"STRLEN", k()]
    if r < 82:
        return [b"DBSIZE"]
    if r < 84:
        return [b"SELECT", rng.choice([b"0", b"1", b"15", b"16", b"-1", b"x"])]
    if r < 86:
        return [b"ECHO", v()]
    if r < 88:
        return [b"PING"] + ([v()] if rng.random() < 0.5 else [])
    if r < 89:
        return [b"FLUSHDB"]
    # wrong arities and unknown commands
    name = rng.choice([b"GET", b"SET", b"GETSET", b"INCR", b"INCRBY", b"APPEND", b"STRLEN", b"MSET", b"ECHO",
                       b"DEL", b"MGET", b"SELECT", b"NOSUCH"])
    return [name] + [k() for _ in range(rng.choice([0, 3, 4]))]


def _same(a, b):
    if isinstance(a, RespError) or isinstance(b, RespError):
        if not (isinstance(a, RespError) and isinstance(b, RespError)):
            return False
        for fixed in EXACT_ERRORS:
            if b.startswith(fixed):
                return a.startswith(fixed) and (fixed == "ERR unknown command" or a == b)
        return a.split(" ", 1)[0] == b.split(" ", 1)[0]
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_same_replies_as_redis(srv, workdir, seed):
    """3000 seeded random commands give the same reply from the server as from redis-server 7,
    command by command (the first 10 differences are listed)."""
    redis = ServerProcess(workdir, kind="redis").start()
    try:
        rng = random.Random(seed)
        cmds = [gen_command(rng) for _ in range(3000)]
        diffs = []
        with srv.conn() as a, redis.conn() as b:
            for i, cmd in enumerate(cmds):
                ra, rb = a.call(*cmd), b.call(*cmd)
                if not _same(ra, rb):
                    diffs.append(f"#{i} {b' '.join(cmd)[:80]!r}: duet {ra!r} / redis {rb!r}")
        assert not diffs, f"{len(diffs)} replies differ from Redis:\n" + "\n".join(diffs[:10])
    finally:
        redis.stop(check=False)
