"""Every command the server implements, with Redis's reply types and error texts (RESP2).

Replies are checked as decoded by resp_client (Simple = +status, bytes = $bulk, int = :int,
None = null, RespError = -error), and where the exact bytes matter with call_raw."""

import shutil

import pytest

from resp_client import RespError, Simple
from server_util import IS_REDIS, ServerProcess, duet_only

INT64_MAX = 9223372036854775807
INT64_MIN = -9223372036854775808


def is_err(r, prefix="ERR"):
    return isinstance(r, RespError) and r.startswith(prefix)


def assert_err(r, text):
    """r is an error reply equal to text, or starting with it when text ends with '...'."""
    assert isinstance(r, RespError), f"expected error {text!r}, got {r!r}"
    if text.endswith("..."):
        assert r.startswith(text[:-3]), f"expected error starting {text[:-3]!r}, got {r!r}"
    else:
        assert r == text, f"expected error {text!r}, got {r!r}"


WRONG_ARITY = "ERR wrong number of arguments for '{}' command"


# -- connection commands ------------------------------------------------------------------------

def test_ping(conn):
    """PING answers +PONG (a status reply); PING msg echoes msg as a bulk string."""
    assert conn.call_raw("PING") == b"+PONG\r\n"
    assert conn.call_raw("PING", "hello world") == b"$11\r\nhello world\r\n"
    assert conn.call("ping", b"\x00\xff\r\n") == b"\x00\xff\r\n"
    assert_err(conn.call("PING", "a", "b"), WRONG_ARITY.format("ping"))


def test_echo(conn):
    """ECHO returns its argument byte for byte as a bulk string, including empty and binary."""
    assert conn.call_raw("ECHO", "hi") == b"$2\r\nhi\r\n"
    assert conn.call_raw("ECHO", "") == b"$0\r\n\r\n"
    blob = bytes(range(256)) * 4
    assert conn.call("ECHO", blob) == blob
    assert_err(conn.call("ECHO"), WRONG_ARITY.format("echo"))
    assert_err(conn.call("ECHO", "a", "b"), WRONG_ARITY.format("echo"))


def test_command_names_are_case_insensitive(conn):
    """Command names match in any case; keys and values do not."""
    assert conn.call("sEt", "Key", "v1") == "OK"
    assert conn.call("GeT", "Key") == b"v1"
    assert conn.call("get", "key") is None


def test_unknown_command(conn):
    """An unknown command gets Redis's text quoting the name and the first arguments, and the
    connection stays usable."""
    r = conn.call("foo", "a", "b")
    assert_err(r, "ERR unknown command 'foo', with args beginning with: ...")
    assert "'a'" in r and "'b'" in r, r
    assert_err(conn.call("nosuchcmd"), "ERR unknown command 'nosuchcmd', with args beginning with: ...")
    assert conn.call("PING") == "PONG"


@pytest.mark.parametrize("cmd", [
    ("GET",), ("GET", "a", "b"), ("SET", "a"), ("GETSET", "a"), ("DEL",), ("EXISTS",), ("MGET",),
    ("MSET",), ("MSET", "a"), ("MSET", "a", "1", "b"), ("INCR",), ("INCR", "a", "b"), ("DECR",),
    ("INCRBY", "a"), ("APPEND", "a"), ("STRLEN",), ("DBSIZE", "x"), ("SELECT",), ("ECHO",),
    ("SCAN",), ("GETSET", "a", "b", "c"), ("STRLEN", "a", "b"),
])
def test_wrong_arity(conn, cmd):
    """Wrong argument counts get 'ERR wrong number of arguments for '<cmd>' command' (the name in
    lower case) and do nothing."""
    r = conn.call(*cmd)
    assert_err(r, WRONG_ARITY.format(cmd[0].lower()))
    assert conn.call("DBSIZE") == 0


def test_quit(srv):
    """QUIT answers +OK and the server then closes the connection."""
    c = srv.conn()
    try:
        assert c.call_raw("QUIT") == b"+OK\r\n"
        data, closed = c.read_until_close(10)
        assert closed and data == b"", (data, closed)
    finally:
        c.close()


def test_quit_after_pipelined_commands(srv):
    """Commands pipelined before QUIT are all answered, in order, before the connection closes."""
    c = srv.conn()
    try:
        c.send(b"*3\r\n$3\r\nSET\r\n$1\r\nq\r\n$1\r\n1\r\n*2\r\n$4\r\nINCR\r\n$1\r\nq\r\n*1\r\n$4\r\nQUIT\r\n")
        data, closed = c.read_until_close(10)
        assert data == b"+OK\r\n:2\r\n+OK\r\n" and closed, (data, closed)
    finally:
        c.close()
    with srv.conn() as c2:
        assert c2.call("GET", "q") == b"2"


# -- strings ------------------------------------------------------------------------------------

def test_get_set_basic(conn):
    """SET answers +OK; GET returns the value as a bulk string; a missing key is the null bulk."""
    assert conn.call_raw("GET", "missing") == b"$-1\r\n"
    assert conn.call_raw("SET", "k", "v") == b"+OK\r\n"
    assert conn.call_raw("GET", "k") == b"$1\r\nv\r\n"
    assert conn.call("SET", "k", "v2") == "OK"
    assert conn.call("GET", "k") == b"v2"


def test_set_empty_and_binary(conn):
    """Empty keys and values, and keys/values holding NUL, CR, LF and bytes 0x80-0xFF,
    round-trip exactly and are distinct keys."""
    pairs = {b"": b"empty-key", b"e": b"", b"\x00": b"nul", b"\x00\x00": b"two nuls", b"\r\n": b"crlf",
             b"a\x00b": b"\xff\xfe\x00\r\n", b"\xff" * 9: b"\x00" * 9, b"\xf0": b"tag byte"}
    for k, v in pairs.items():
        assert conn.call("SET", k, v) == "OK"
    for k, v in pairs.items():
        assert conn.call("GET", k) == v, k
    assert conn.call("DBSIZE") == len(pairs)


def _edge_bytes():
    """Keys and values around the store's encodings: lengths 0..17 (inline vs. out of line at
    7/8 bytes) with first bytes 0x00, 0x01, 0xEF, 0xF0, 0xF7, 0xF8, 0xFF (tag ranges)."""
    out = []
    for n in range(0, 18):
        for first in (0x00, 0x01, 0x41, 0xEF, 0xF0, 0xF7, 0xF8, 0xFF):
            if n == 0:
                out.append(b"")
                break
            out.append(bytes([first]) + bytes((first + 3 * i) & 0xFF for i in range(1, n)))
    return list(dict.fromkeys(out))


def test_encoding_edges_keys_are_distinct(conn):
    """Keys of 0..17 bytes whose first byte sits on each encoding boundary are all distinct
    keys: each reads back its own value, and DBSIZE counts each once."""
    keys = _edge_bytes()
    replies = conn.pipeline([("SET", k, b"val:" + k) for k in keys])
    assert all(r == "OK" for r in replies), replies
    got = conn.pipeline([("GET", k) for k in keys])
    bad = [(k, g) for k, g in zip(keys, got) if g != b"val:" + k]
    assert not bad, f"wrong values for keys: {bad[:5]}"
    assert conn.call("DBSIZE") == len(keys)


def test_encoding_edges_values_round_trip(conn):
    """Values of 0..17 bytes with first bytes on each encoding boundary round-trip exactly,
    through SET, GETSET, SET GET, MGET and APPEND."""
    values = _edge_bytes()
    for i, v in enumerate(values):
        k = f"val-edge:{i}"
        assert conn.call("SET", k, v) == "OK"
        assert conn.call("GET", k) == v, (i, v)
        assert conn.call("GETSET", k, v + b"!") == v, (i, v)
        assert conn.call("SET", k, v, "GET") == v + b"!", (i, v)
        assert conn.call("APPEND", k, b"\xf0") == len(v) + 1
        assert conn.call("MGET", k, "nokey") == [v + b"\xf0", None]


def test_set_nx_xx(conn):
    """SET NX sets only a missing key, SET XX only an existing one; a refused SET answers the
    null bulk and changes nothing."""
    assert conn.call("SET", "k", "1", "NX") == "OK"
    assert conn.call_raw("SET", "k", "2", "NX") == b"$-1\r\n"
    assert conn.call("GET", "k") == b"1"
    assert conn.call("SET", "k", "3", "XX") == "OK"
    assert conn.call("GET", "k") == b"3"
    assert conn.call_raw("SET", "missing", "4", "xx") == b"$-1\r\n"
    assert conn.call("EXISTS", "missing") == 0
    assert conn.call("SET", "k", "5", "nx") is None


def test_set_get_option(conn):
    """SET ... GET returns the previous value (null bulk when there was none) and sets;
    with NX it returns the old value without setting; with XX on a missing key, null and no set."""
    assert conn.call_raw("SET", "k", "a", "GET") == b"$-1\r\n"
    assert conn.call("GET", "k") == b"a"
    assert conn.call("SET", "k", "b", "GET") == b"a"
    assert conn.call("GET", "k") == b"b"
    assert conn.call("SET", "k", "c", "NX", "GET") == b"b"
    assert conn.call("GET", "k") == b"b"
    assert conn.call("SET", "new", "x", "NX", "GET") is None
    assert conn.call("GET", "new") == b"x"
    assert conn.call("SET", "nokey", "y", "XX", "GET") is None
    assert conn.call("EXISTS", "nokey") == 0
    assert conn.call("SET", "k", "d", "XX", "GET") == b"b"
    assert conn.call("GET", "k") == b"d"


def test_set_syntax_errors(conn):
    """Conflicting or unknown SET options answer 'ERR syntax error' and set nothing."""
    for opts in (("NX", "XX"), ("XX", "NX"), ("BOGUS",), ("NX", "NX", "XX"), ("GET", "GET", "FOO")):
        r = conn.call("SET", "k", "v", *opts)
        assert_err(r, "ERR syntax error")
    assert conn.call("EXISTS", "k") == 0


@duet_only
@pytest.mark.parametrize("opts", [("EX", "10"), ("PX", "100"), ("EXAT", "99999999999"), ("PXAT", "99999999999000"),
                                  ("KEEPTTL",)])
def test_set_ttl_options_rejected(conn, opts):
    """Duet has no TTLs: SET with EX/PX/EXAT/PXAT/KEEPTTL answers an ERR error and does not set
    (the key keeps its old value)."""
    conn.call("SET", "k", "old")
    r = conn.call("SET", "k", "new", *opts)
    assert is_err(r), f"SET k new {' '.join(opts)} answered {r!r}, expected -ERR..."
    assert conn.call("GET", "k") == b"old"


def test_getset(conn):
    """GETSET sets and returns the old value (null bulk for a missing key)."""
    assert conn.call_raw("GETSET", "k", "1") == b"$-1\r\n"
    assert conn.call("GETSET", "k", "2") == b"1"
    assert conn.call("GET", "k") == b"2"


def test_setnx(conn):
    """SETNX sets a missing key (:1) and leaves a present one alone (:0), also inside one
    pipeline, where each command sees the one before it."""
    assert conn.call_raw("SETNX", "k", "1") == b":1\r\n"
    assert conn.call_raw("SETNX", "k", "2") == b":0\r\n"
    assert conn.call("GET", "k") == b"1"
    assert conn.pipeline([("DEL", "p"), ("SETNX", "p", "a"), ("SETNX", "p", "b"), ("GET", "p")]) == [0, 1, 0, b"a"]
    assert is_err(conn.call("SETNX", "k"))


def test_del(conn):
    """DEL answers the number of keys it removed; a key named twice counts once; missing keys
    count zero."""
    conn.pipeline([("SET", "a", "1"), ("SET", "b", "2"), ("SET", "c", "3")])
    assert conn.call_raw("DEL", "a") == b":1\r\n"
    assert conn.call("DEL", "a") == 0
    assert conn.call("DEL", "b", "b", "c", "zz") == 2
    assert conn.call("GET", "b") is None
    assert conn.call("DBSIZE") == 0


def test_exists(conn):
    """EXISTS counts the named keys that exist, counting a key each time it is named."""
    conn.call("SET", "a", "1")
    assert conn.call_raw("EXISTS", "a") == b":1\r\n"
    assert conn.call("EXISTS", "nokey") == 0
    assert conn.call("EXISTS", "a", "a", "a") == 3
    assert conn.call("EXISTS", "a", "nokey", "a") == 2


def test_mget_mset(conn):
    """MSET answers +OK and sets every pair (the last one wins for a repeated key); MGET answers
    an array with the null bulk for missing keys."""
    assert conn.call_raw("MSET", "a", "1", "b", "2", "a", "3") == b"+OK\r\n"
    assert conn.call_raw("MGET", "a", "b", "c") == b"*3\r\n$1\r\n3\r\n$1\r\n2\r\n$-1\r\n"
    assert conn.call("DBSIZE") == 2
    assert conn.call("MGET", "c") == [None]


def test_mset_many_keys(conn):
    """MSET and MGET with 1000 keys in one command; DEL and EXISTS with 1000 arguments."""
    args = []
    for i in range(1000):
        args += [f"mk:{i}", f"v{i}"]
    assert conn.call("MSET", *args) == "OK"
    got = conn.call("MGET", *[f"mk:{i}" for i in range(1000)] + ["nope"])
    assert got == [f"v{i}".encode() for i in range(1000)] + [None]
    assert conn.call("EXISTS", *[f"mk:{i}" for i in range(1000)]) == 1000
    assert conn.call("DEL", *[f"mk:{i}" for i in range(0, 1000, 2)]) == 500
    assert conn.call("DBSIZE") == 500


def test_incr_decr_incrby(conn):
    """INCR/DECR/INCRBY answer integers; a missing key counts as 0; the stored value is the
    decimal string."""
    assert conn.call_raw("INCR", "n") == b":1\r\n"
    assert conn.call("INCR", "n") == 2
    assert conn.call("DECR", "n") == 1
    assert conn.call("DECR", "m") == -1
    assert conn.call("INCRBY", "n", "41") == 42
    assert conn.call("INCRBY", "n", "-50") == -8
    assert conn.call("INCRBY", "z", "0") == 0
    assert conn.call("GET", "n") == b"-8"
    assert conn.call("GET", "z") == b"0"
    conn.call("SET", "s", "100")
    assert conn.call("INCR", "s") == 101
    conn.call("SET", "neg", "-5")
    assert conn.call("INCRBY", "neg", "5") == 0
    assert conn.call("GET", "neg") == b"0"


@pytest.mark.parametrize("start", [0, 9, 99, 1234567, 12345678, 123456789, 9999999, 99999999, -1, -1234567,
                                   -12345678, 2**31, -2**31, 2**32, 2**53 + 1])
def test_incr_across_encodings(conn, start):
    """INCR/DECR/INCRBY give exact results from values whose decimal form is 1..17 bytes
    (inline and out-of-line encodings in the store), and GET shows the decimal string."""
    conn.call("SET", "n", str(start))
    assert conn.call("INCR", "n") == start + 1
    assert conn.call("DECR", "n") == start
    assert conn.call("INCRBY", "n", 1000000) == start + 1000000
    assert conn.call("GET", "n") == str(start + 1000000).encode()
    assert conn.call("APPEND", "n", "0") == len(str(start + 1000000)) + 1
    assert conn.call("INCR", "n") == (start + 1000000) * 10 + 1


def test_incr_bounds(conn):
    """INCR reaches INT64_MAX and DECR INT64_MIN exactly; one step further is the overflow
    error and leaves the value unchanged."""
    conn.call("SET", "n", str(INT64_MAX - 1))
    assert conn.call("INCR", "n") == INT64_MAX
    assert_err(conn.call("INCR", "n"), "ERR increment or decrement would overflow")
    assert conn.call("GET", "n") == str(INT64_MAX).encode()
    conn.call("SET", "n", str(INT64_MIN + 1))
    assert conn.call("DECR", "n") == INT64_MIN
    assert_err(conn.call("DECR", "n"), "ERR increment or decrement would overflow")
    assert_err(conn.call("INCRBY", "n", "-1"), "ERR increment or decrement would overflow")
    assert conn.call("GET", "n") == str(INT64_MIN).encode()
    conn.call("SET", "p", "1")
    assert_err(conn.call("INCRBY", "p", str(INT64_MAX)), "ERR increment or decrement would overflow")
    assert conn.call("INCRBY", "p", str(INT64_MAX - 1)) == INT64_MAX
    assert conn.call("INCRBY", "q", str(INT64_MIN)) == INT64_MIN


@pytest.mark.parametrize("value", [b"abc", b"1.5", b" 1", b"1 ", b"01", b"", b"+1", b"-0", b"1e3",
                                   b"99999999999999999999", b"9223372036854775808", b"0x10", b"\x001"])
def test_incr_not_an_integer(conn, value):
    """INCR/DECR/INCRBY on a value that is not a canonical 64-bit decimal integer answer
    'ERR value is not an integer or out of range' and leave the value unchanged."""
    conn.call("SET", "s", value)
    for cmd in (("INCR", "s"), ("DECR", "s"), ("INCRBY", "s", "1")):
        assert_err(conn.call(*cmd), "ERR value is not an integer or out of range")
    assert conn.call("GET", "s") == value


@pytest.mark.parametrize("incr", ["abc", "1.0", "", " 1", "9223372036854775808", "1x"])
def test_incrby_bad_increment(conn, incr):
    """INCRBY with an increment that is not an integer answers the not-an-integer error and
    does not create the key."""
    assert_err(conn.call("INCRBY", "k", incr), "ERR value is not an integer or out of range")
    assert conn.call("EXISTS", "k") == 0


def test_append_strlen(conn):
    """APPEND answers the new length (creating a missing key); STRLEN answers the length, 0 for
    a missing key."""
    assert conn.call_raw("STRLEN", "k") == b":0\r\n"
    assert conn.call_raw("APPEND", "k", "abc") == b":3\r\n"
    assert conn.call("APPEND", "k", "") == 3
    assert conn.call("APPEND", "k", b"\x00\xff") == 5
    assert conn.call("GET", "k") == b"abc\x00\xff"
    assert conn.call("STRLEN", "k") == 5
    conn.call("SET", "n", "10")
    assert conn.call("APPEND", "n", "5") == 3
    assert conn.call("INCR", "n") == 106


def test_append_builds_value(conn):
    """APPEND of 600 chunks (crossing every small-value size) builds exactly the concatenation."""
    expect = bytearray()
    for i in range(600):
        chunk = bytes([(i * 7) & 0xFF]) * (i % 13)
        expect += chunk
        assert conn.call("APPEND", "big", chunk) == len(expect)
    assert conn.call("STRLEN", "big") == len(expect)
    assert conn.call("GET", "big") == bytes(expect)


# -- keyspace commands --------------------------------------------------------------------------

def test_dbsize_flushdb(conn):
    """DBSIZE answers an integer count; FLUSHDB answers +OK and empties the database."""
    assert conn.call_raw("DBSIZE") == b":0\r\n"
    conn.pipeline([("SET", f"k{i}", "v") for i in range(10)])
    assert conn.call("DBSIZE") == 10
    assert conn.call_raw("FLUSHDB") == b"+OK\r\n"
    assert conn.call("DBSIZE") == 0
    assert conn.call("GET", "k1") is None


def test_flushdb_sync_async(conn):
    """FLUSHDB SYNC and FLUSHDB ASYNC (sent by clients such as redis-py's
    flushdb(asynchronous=True)) answer +OK and empty the database; other arguments are errors."""
    for mode in ("SYNC", "ASYNC", "async"):
        conn.call("SET", "k", "v")
        assert conn.call("FLUSHDB", mode) == "OK", mode
        assert conn.call("DBSIZE") == 0
    assert is_err(conn.call("FLUSHDB", "LATER"))


def test_select(conn):
    """SELECT answers +OK for 0..15; out of range or non-numeric answers Redis's errors and the
    connection stays on its database."""
    assert conn.call_raw("SELECT", "15") == b"+OK\r\n"
    conn.call("SET", "k", "in15")
    assert_err(conn.call("SELECT", "16"), "ERR DB index is out of range")
    assert_err(conn.call("SELECT", "-1"), "ERR DB index is out of range")
    assert_err(conn.call("SELECT", "abc"), "ERR value is not an integer or out of range")
    assert conn.call("GET", "k") == b"in15"
    assert conn.call("SELECT", "0") == "OK"
    assert conn.call("GET", "k") is None


def test_scan_reply_shape(conn):
    """SCAN answers a two-element array: the next cursor as a bulk string and an array of keys;
    a full iteration of an empty database returns no keys (Redis answers cursor "0" at once;
    an empty page with a non-zero cursor is allowed by SCAN's contract)."""
    raw = conn.call_raw("SCAN", "0")
    assert raw.startswith(b"*2\r\n$") and raw.endswith(b"\r\n*0\r\n"), raw
    cur, calls = conn.call("SCAN", "0")[0], 1
    while cur != b"0":
        cur, keys = conn.call("SCAN", cur)
        assert keys == []
        calls += 1
        assert calls < 100000
    conn.call("SET", "only", "1")
    cur, keys = conn.call("SCAN", "0")
    assert isinstance(cur, bytes) and isinstance(keys, list)
    while cur != b"0":
        cur, more = conn.call("SCAN", cur)
        keys += more
    assert set(keys) == {b"only"}


def test_scan_errors(conn):
    """SCAN with a non-numeric cursor is 'ERR invalid cursor'; COUNT 0 or a bad option is
    'ERR syntax error'; COUNT not an integer is the not-an-integer error."""
    assert_err(conn.call("SCAN", "abc"), "ERR invalid cursor")
    assert_err(conn.call("SCAN", "0", "COUNT", "0"), "ERR syntax error")
    assert_err(conn.call("SCAN", "0", "BOGUS", "1"), "ERR syntax error")
    assert_err(conn.call("SCAN", "0", "COUNT"), "ERR syntax error")
    assert_err(conn.call("SCAN", "0", "COUNT", "x"), "ERR value is not an integer or out of range")


def test_scan_match_glob(conn):
    """SCAN MATCH applies Redis glob patterns: *, ?, [set], [^set], [a-c] and \\ escapes."""
    keys = ["user:1", "user:22", "usr:3", "a*b", "axb", "k1", "k2", "k10", "hello", "hallo", "hxllo", "hllo"]
    conn.pipeline([("SET", k, "v") for k in keys])

    def scan(pattern):
        cur, out = b"0", set()
        while True:
            cur, ks = conn.call("SCAN", cur, "MATCH", pattern, "COUNT", "3")
            out |= {k.decode() for k in ks}
            if cur == b"0":
                return out

    assert scan("user:*") == {"user:1", "user:22"}
    assert scan("k?") == {"k1", "k2"}
    assert scan("h[ae]llo") == {"hello", "hallo"}
    assert scan("h[^e]llo") == {"hallo", "hxllo"}
    assert scan("h[a-e]llo") == {"hello", "hallo"}
    assert scan("a\\*b") == {"a*b"}
    assert scan("*") == set(keys)
    assert scan("nomatch*") == set()


# -- server commands ----------------------------------------------------------------------------

def _info_fields(text):
    out, section = {}, None
    for line in text.decode().splitlines():
        if line.startswith("#"):
            section = line[1:].strip().lower()
            out.setdefault(section, {})
        elif ":" in line:
            k, v = line.split(":", 1)
            out.setdefault(section, {})[k] = v
    return out


def test_info(conn):
    """INFO answers a bulk string of '# Section' headers and 'field:value' lines (CRLF
    separated) with the server, clients, memory, stats and keyspace sections; the keyspace lists
    db0:keys=N."""
    conn.pipeline([("SET", f"k{i}", "v") for i in range(3)])
    r = conn.call("INFO")
    assert type(r) is bytes, r
    assert b"\r\n" in r
    info = _info_fields(r)
    for s in ("server", "clients", "memory", "stats", "keyspace"):
        assert s in info, f"INFO lacks section {s}: {sorted(info)}"
    assert info["keyspace"].get("db0", "").startswith("keys=3"), info["keyspace"]
    assert int(info["clients"]["connected_clients"]) >= 1
    assert int(info["server"]["tcp_port"]) == conn.port


def test_info_stats_counters(conn, srv):
    """INFO stats has total_connections_received and total_commands_processed, and the latter
    grows by at least the number of commands sent."""
    def stats():
        return _info_fields(conn.call("INFO", "stats"))["stats"]
    s0 = stats()
    for f in ("total_connections_received", "total_commands_processed"):
        assert f in s0, f"INFO stats lacks {f}: {sorted(s0)}"
    conn.pipeline([("PING",)] * 100)
    s1 = stats()
    assert int(s1["total_commands_processed"]) >= int(s0["total_commands_processed"]) + 100


def test_info_section(conn):
    """INFO <section> answers only that section; an unknown section answers an empty bulk."""
    r = _info_fields(conn.call("INFO", "server"))
    assert list(r) == ["server"], list(r)
    r = _info_fields(conn.call("INFO", "KEYSPACE"))
    assert list(r) == ["keyspace"], list(r)
    assert conn.call("INFO", "nosuchsection") == b""


@duet_only
def test_info_duet_section(conn):
    """INFO duet has the Duet fields: duet_device (cpu here, --device cpu), hot_cache_hit_rate in [0,1],
    router_model (non-empty), router_choice (the routing adaptive routing chose) and avg_batch_size
    (a number)."""
    conn.pipeline([("GET", f"k{i}") for i in range(50)])
    info = _info_fields(conn.call("INFO", "duet"))
    assert "duet" in info, info
    d = info["duet"]
    for f in ("duet_device", "hot_cache_hit_rate", "router_model", "router_choice", "avg_batch_size"):
        assert f in d, f"INFO duet lacks {f}: {d}"
    assert d["duet_device"].split(":")[0].strip() == "cpu", d  # "cpu" or "cpu: <details>"
    assert 0.0 <= float(d["hot_cache_hit_rate"]) <= 1.0, d
    assert d["router_model"].strip(), d
    assert d["router_choice"].strip() in ("learned", "all-cold", "all-hot"), d
    assert float(d["avg_batch_size"]) >= 0, d
    full = _info_fields(conn.call("INFO"))
    assert "duet" in full or IS_REDIS, f"plain INFO lacks the duet section: {sorted(full)}"


def test_config_get_set(conn, srv):
    """CONFIG GET answers a flat [name, value] array (RESP2); CONFIG SET of a live setting
    answers +OK and CONFIG GET then shows it; save is "" and appendonly "no" as in Redis."""
    r = conn.call("CONFIG", "GET", "maxclients")
    assert r[0] == b"maxclients" and len(r) == 2 and int(r[1]) > 0, r
    old = r[1]
    try:
        assert conn.call_raw("CONFIG", "SET", "maxclients", "1234") == b"+OK\r\n"
        assert conn.call("CONFIG", "GET", "maxclients") == [b"maxclients", b"1234"]
    finally:
        conn.call("CONFIG", "SET", "maxclients", old)
    assert conn.call("CONFIG", "GET", "save") == [b"save", b""]
    assert conn.call("CONFIG", "GET", "appendonly") == [b"appendonly", b"no"]
    for name in ("proto-max-bulk-len", "client-query-buffer-limit"):
        r = conn.call("CONFIG", "GET", name)
        assert len(r) == 2 and r[0] == name.encode() and int(r[1]) > 0, r


def test_config_get_pattern(conn):
    """CONFIG GET takes a glob pattern and answers every matching name with its value."""
    r = conn.call("CONFIG", "GET", "*max-*")
    d = dict(zip(r[0::2], r[1::2]))
    assert b"proto-max-bulk-len" in d, d
    r = conn.call("CONFIG", "GET", "maxclient?")
    assert r[0::2] == [b"maxclients"], r
    assert conn.call("CONFIG", "GET", "no-such-setting-xyz") == []


def test_config_errors(conn):
    """CONFIG SET of an unknown setting or a non-numeric value is an ERR error; bad arity too."""
    assert is_err(conn.call("CONFIG", "SET", "no-such-setting", "1"))
    assert is_err(conn.call("CONFIG", "SET", "maxclients", "abc"))
    assert is_err(conn.call("CONFIG", "GET"))
    assert is_err(conn.call("CONFIG", "SET", "maxclients"))
    assert is_err(conn.call("CONFIG", "NOSUCHSUB"))


@duet_only
def test_config_router_threshold(conn):
    """router-threshold is a live Duet setting: CONFIG GET shows a number and CONFIG SET
    changes it."""
    r = conn.call("CONFIG", "GET", "router-threshold")
    assert len(r) == 2 and r[0] == b"router-threshold", r
    old = r[1]
    float(old)
    try:
        assert conn.call("CONFIG", "SET", "router-threshold", "0.001") == "OK"
        assert float(conn.call("CONFIG", "GET", "router-threshold")[1]) == pytest.approx(0.001)
        assert is_err(conn.call("CONFIG", "SET", "router-threshold", "notanumber"))
    finally:
        conn.call("CONFIG", "SET", "router-threshold", old)


def test_config_set_of_several_settings_is_all_or_nothing(conn):
    """CONFIG SET with a refused pair changes none of the settings it names (Redis 7's rule); it
    used to keep the pairs before the refused one."""
    old = conn.call("CONFIG", "GET", "maxclients")[1]
    assert old != b"100"
    for bad in (["proto-max-bulk-len", "abc"], ["no-such-setting-xyz", "1"], ["port", "1"]):
        assert is_err(conn.call("CONFIG", "SET", "maxclients", "100", *bad)), bad
        assert conn.call("CONFIG", "GET", "maxclients")[1] == old, bad


@duet_only
def test_config_get_of_router_threshold_reads_back_exactly(conn):
    """CONFIG GET prints router-threshold so that setting the text back keeps the value (it
    printed 1e-07 as 0.000000)."""
    old = conn.call("CONFIG", "GET", "router-threshold")[1]
    try:
        for v in ("1e-07", "0.000013", "0.3333333333333333"):
            assert conn.call("CONFIG", "SET", "router-threshold", v) == "OK"
            text = conn.call("CONFIG", "GET", "router-threshold")[1]
            assert float(text) == float(v), (v, text)
            assert conn.call("CONFIG", "SET", "router-threshold", text) == "OK"
            assert conn.call("CONFIG", "GET", "router-threshold")[1] == text
    finally:
        conn.call("CONFIG", "SET", "router-threshold", old)


def test_client_id_setname_getname(srv):
    """CLIENT ID is a distinct integer per connection; CLIENT GETNAME is null until SETNAME;
    SETNAME rejects spaces and an empty name clears the name."""
    with srv.conn() as a, srv.conn() as b:
        ia, ib = a.call("CLIENT", "ID"), b.call("CLIENT", "ID")
        assert type(ia) is int and type(ib) is int and ia != ib
        assert a.call_raw("CLIENT", "GETNAME") == b"$-1\r\n"
        assert a.call_raw("CLIENT", "SETNAME", "worker-1") == b"+OK\r\n"
        assert a.call("CLIENT", "GETNAME") == b"worker-1"
        assert b.call("CLIENT", "GETNAME") is None
        assert_err(a.call("CLIENT", "SETNAME", "has space"),
                   "ERR Client names cannot contain spaces, newlines or special characters.")
        assert a.call("CLIENT", "GETNAME") == b"worker-1"
        assert a.call("CLIENT", "SETNAME", "") == "OK"
        assert a.call("CLIENT", "GETNAME") is None


def _client_line(line):
    return dict(f.split("=", 1) for f in line.split(" ") if "=" in f)


def test_client_list_info(srv):
    """CLIENT LIST answers a bulk string with one 'id=.. addr=.. name=..' line per connection;
    CLIENT INFO answers the calling connection's line."""
    with srv.conn() as a, srv.conn() as b:
        a.call("CLIENT", "SETNAME", "alpha")
        ida, idb = a.call("CLIENT", "ID"), b.call("CLIENT", "ID")
        r = a.call("CLIENT", "LIST")
        assert type(r) is bytes, r
        lines = [_client_line(x) for x in r.decode().splitlines() if x.strip()]
        by_id = {int(x["id"]): x for x in lines}
        assert ida in by_id and idb in by_id, r
        assert by_id[ida]["name"] == "alpha"
        assert "addr" in by_id[ida] and by_id[ida]["addr"].startswith("127.0.0.1:")
        info = a.call("CLIENT", "INFO")
        assert type(info) is bytes
        one = [x for x in info.decode().splitlines() if x.strip()]
        assert len(one) == 1, info
        f = _client_line(one[0])
        assert int(f["id"]) == ida and f["name"] == "alpha", f
        assert is_err(a.call("CLIENT", "NOSUCHSUB"))


@duet_only
def test_client_setinfo(conn):
    """CLIENT SETINFO lib-name / lib-ver answer +OK (clients such as redis-py 5 send them)."""
    assert conn.call("CLIENT", "SETINFO", "lib-name", "pytest") == "OK"
    assert conn.call("CLIENT", "SETINFO", "lib-ver", "1.0") == "OK"
    assert is_err(conn.call("CLIENT", "SETINFO", "lib-name", "bad name"))


def test_hello_2(conn):
    """HELLO 2 answers the server description as a flat array (RESP2) with proto 2; HELLO with
    SETNAME sets the connection name."""
    r = conn.call("HELLO", "2", "SETNAME", "hello-client")
    assert isinstance(r, list) and len(r) % 2 == 0, r
    d = dict(zip(r[0::2], r[1::2]))
    assert d[b"proto"] == 2, d
    assert b"server" in d and b"version" in d and type(d[b"id"]) is int
    assert conn.call("CLIENT", "GETNAME") == b"hello-client"
    assert conn.call_raw("GET", "missing") == b"$-1\r\n"


def test_hello_errors(conn):
    """HELLO 1 and HELLO 4 are NOPROTO; a non-numeric version is an ERR error; the connection
    stays on RESP2."""
    assert_err(conn.call("HELLO", "4"), "NOPROTO...")
    assert_err(conn.call("HELLO", "1"), "NOPROTO...")
    assert_err(conn.call("HELLO", "abc"), "ERR...")
    assert conn.call_raw("GET", "missing") == b"$-1\r\n"


EXPECTED_KEY_SPECS = {  # name: (arity, first key, last key, step), as Redis
    "get": (2, 1, 1, 1), "set": (-3, 1, 1, 1), "del": (-2, 1, -1, 1), "exists": (-2, 1, -1, 1),
    "mget": (-2, 1, -1, 1), "mset": (-3, 1, -1, 2), "incr": (2, 1, 1, 1), "incrby": (3, 1, 1, 1),
    "append": (3, 1, 1, 1), "getset": (3, 1, 1, 1), "strlen": (2, 1, 1, 1), "decr": (2, 1, 1, 1),
    "ping": (-1, 0, 0, 0), "echo": (2, 0, 0, 0), "dbsize": (1, 0, 0, 0), "select": (2, 0, 0, 0),
    "scan": (-2, 0, 0, 0), "flushdb": (-1, 0, 0, 0),
}
ALL_COMMANDS = ["ping", "echo", "get", "set", "getset", "del", "exists", "mget", "mset", "incr", "decr",
                "incrby", "append", "strlen", "dbsize", "flushdb", "scan", "select", "info", "config",
                "client", "hello", "command", "quit"]


def test_command_list_and_count(conn):
    """COMMAND answers one array per command (name first); every implemented command is there
    and COMMAND COUNT equals the list's length."""
    r = conn.call("COMMAND")
    assert isinstance(r, list) and r
    names = {c[0].decode().lower() for c in r}
    missing = [n for n in ALL_COMMANDS if n not in names]
    assert not missing, f"COMMAND lacks {missing}"
    assert conn.call_raw("COMMAND", "COUNT") == b":%d\r\n" % len(r)


def test_command_info(conn):
    """COMMAND INFO answers Redis's arity and key positions (first, last, step) for each
    command, and a null entry for an unknown name."""
    names = list(EXPECTED_KEY_SPECS)
    r = conn.call("COMMAND", "INFO", *names, "nosuchcmd")
    assert len(r) == len(names) + 1
    assert r[-1] is None, r[-1]
    for name, entry in zip(names, r):
        assert entry is not None, name
        assert entry[0].decode().lower() == name
        got = (entry[1], entry[3], entry[4], entry[5])
        assert got == EXPECTED_KEY_SPECS[name], f"COMMAND INFO {name}: (arity, first, last, step) = {got}"
        assert isinstance(entry[2], list)  # flags


def test_command_docs(conn):
    """COMMAND DOCS get answers [name, docs] where docs is a flat map with a summary; an
    unknown name answers an empty array; COMMAND DOCS with no name covers get and set."""
    r = conn.call("COMMAND", "DOCS", "get")
    assert isinstance(r, list) and len(r) == 2 and r[0] == b"get", r
    doc = dict(zip(r[1][0::2], r[1][1::2]))
    assert isinstance(doc.get(b"summary"), bytes) and doc[b"summary"], doc
    assert conn.call_raw("COMMAND", "DOCS", "nosuchcmd") == b"*0\r\n"
    allr = conn.call("COMMAND", "DOCS")
    names = {x.decode().lower() for x in allr[0::2]}
    assert {"get", "set"} <= names, sorted(names)[:20]


def _check_doc_args(cmd, args, path="arguments"):
    """Each argument doc is a flat map with name and type; 'block' and 'oneof' arguments hold
    their sub-arguments (redis-cli 7 builds its help from these and crashes without them)."""
    assert isinstance(args, list), f"{cmd}: {path} is {args!r}"
    for a in args:
        d = dict(zip(a[0::2], a[1::2]))
        assert isinstance(d.get(b"name"), bytes) and isinstance(d.get(b"type"), bytes), f"{cmd}: {path} entry {d}"
        if d[b"type"] in (b"block", b"oneof"):
            sub = d.get(b"arguments")
            assert sub, f"COMMAND DOCS {cmd}: {d[b'type'].decode()} argument '{d[b'name'].decode()}' has no sub-arguments"
            _check_doc_args(cmd, sub, path + "/" + d[b"name"].decode())
        for flag in d.get(b"flags", []):
            assert flag in ("optional", "multiple", "multiple_token"), f"{cmd}: flag {flag!r}"


def test_command_docs_structure(conn):
    """Every command's COMMAND DOCS entry has summary, since, group and well-formed arguments
    (the shape redis-cli parses; see _check_doc_args)."""
    r = conn.call("COMMAND", "DOCS")
    docs = dict(zip(r[0::2], r[1::2]))
    for name in ALL_COMMANDS:
        assert name.encode() in docs, f"COMMAND DOCS lacks {name}"
    for name, doc in docs.items():
        d = dict(zip(doc[0::2], doc[1::2]))
        for field in (b"summary", b"since", b"group"):
            assert isinstance(d.get(field), bytes), f"COMMAND DOCS {name.decode()} lacks {field.decode()}"
        if b"arguments" in d:
            _check_doc_args(name.decode(), d[b"arguments"])


def test_error_does_not_break_connection(conn):
    """After every kind of error reply the same connection keeps working."""
    for cmd in (("nosuch",), ("GET",), ("INCR", "x", "y"), ("SELECT", "99"), ("SET", "k", "v", "NX", "XX")):
        assert isinstance(conn.call(*cmd), RespError)
        assert conn.call("PING") == Simple("PONG")
    assert conn.call("SET", "k", "v") == "OK"


@pytest.mark.skipif(IS_REDIS or shutil.which("redis-server") is None,
                    reason="needs the duet server and redis-server to compare")
def test_command_flags_match_redis(conn, workdir):
    """For every command Redis also has, COMMAND INFO reports Redis's flags, arity and key
    positions (the registry is the single source of these)."""
    names = [n.decode() for n in conn.call("COMMAND", "LIST")]
    ours = {e[0].decode(): e for e in conn.call("COMMAND", "INFO", *names)}
    peer = ServerProcess(workdir, kind="redis").start()
    try:
        with peer.conn() as c:
            theirs_list = c.call("COMMAND", "INFO", *names)
    finally:
        peer.stop(check=False)
    compared = 0
    for name, theirs in zip(names, theirs_list):
        if theirs is None:
            continue
        mine = ours[name]
        as_set = lambda flags: sorted(f.decode() if isinstance(f, bytes) else str(f) for f in flags)  # noqa: E731
        assert as_set(mine[2]) == as_set(theirs[2]), f"{name}: flags {as_set(mine[2])} != redis {as_set(theirs[2])}"
        assert (mine[1], mine[3], mine[4], mine[5]) == (theirs[1], theirs[3], theirs[4], theirs[5]), name
        compared += 1
    # Duet's own families are dotted, as Redis modules' commands are (BATCH.*), except the
    # txn family's TXN, RANGE and SNAPSHOT (docs/txn.md) and PROCEDURE (native procedures,
    # docs/compute.md); every other command exists in Redis 7.
    own = [n for n in names if "." in n or n in ("txn", "range", "snapshot", "procedure")]
    assert compared == len(names) - len(own), "every undotted Duet command exists in Redis 7"
    assert all(theirs is None for n, theirs in zip(names, theirs_list) if "." in n), "a dotted name is Duet's own"
