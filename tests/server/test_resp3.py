"""RESP3 after HELLO 3, checked on the exact bytes of raw-socket replies: nulls are `_`, maps
are `%`, text replies are verbatim `=`, and everything else keeps its RESP2 encoding."""

import pytest

from resp_client import RespError, Verbatim


@pytest.fixture
def c3(srv):
    """A connection switched to RESP3 with HELLO 3."""
    c = srv.conn()
    c.call("HELLO", "3")
    yield c
    c.close()


def test_hello3_reply_is_a_map(srv):
    """HELLO 3 answers a RESP3 map (`%`) with server, version, proto=3, id, mode, role and
    modules."""
    with srv.conn() as c:
        raw = c.call_raw("HELLO", "3")
        assert raw.startswith(b"%"), raw[:40]
        d = c.call("HELLO", "3")
        assert isinstance(d, dict), d
        for k in (b"server", b"version", b"proto", b"id", b"mode", b"role", b"modules"):
            assert k in d, f"HELLO 3 map lacks {k}: {d}"
        assert d[b"proto"] == 3 and type(d[b"id"]) is int
        assert d[b"id"] == c.call("CLIENT", "ID")


def test_hello_without_version_keeps_protocol(srv):
    """HELLO with no version answers in the connection's current protocol: an array on a RESP2
    connection, a map after HELLO 3."""
    with srv.conn() as c:
        assert c.call_raw("HELLO").startswith(b"*14\r\n")
        c.call("HELLO", "3")
        raw = c.call_raw("HELLO")
        assert raw.startswith(b"%7\r\n"), raw[:40]


def test_null_replies(c3):
    """In RESP3 every null is `_\\r\\n`: GET of a missing key, refused SET NX/XX, SET GET of a
    missing key, GETSET of a missing key, CLIENT GETNAME without a name, COMMAND INFO of an
    unknown command, and nulls inside MGET's array."""
    assert c3.call_raw("GET", "missing") == b"_\r\n"
    c3.call("SET", "a", "1")
    assert c3.call_raw("SET", "a", "2", "NX") == b"_\r\n"
    assert c3.call_raw("SET", "b", "2", "XX") == b"_\r\n"
    assert c3.call_raw("SET", "c", "3", "GET") == b"_\r\n"
    assert c3.call_raw("GETSET", "d", "4") == b"_\r\n"
    assert c3.call_raw("CLIENT", "GETNAME") == b"_\r\n"
    assert c3.call_raw("MGET", "a", "missing", "c") == b"*3\r\n$1\r\n1\r\n_\r\n$1\r\n3\r\n"
    assert c3.call_raw("COMMAND", "INFO", "nosuchcmd") == b"*1\r\n_\r\n"


def test_unchanged_types(c3):
    """Status, integer, bulk and error replies are encoded as in RESP2."""
    assert c3.call_raw("PING") == b"+PONG\r\n"
    assert c3.call_raw("SET", "k", "v") == b"+OK\r\n"
    assert c3.call_raw("GET", "k") == b"$1\r\nv\r\n"
    assert c3.call_raw("INCR", "n") == b":1\r\n"
    assert c3.call_raw("EXISTS", "k", "n") == b":2\r\n"
    assert c3.call_raw("DBSIZE") == b":2\r\n"
    assert c3.call_raw("APPEND", "k", "w") == b":2\r\n"
    assert c3.call_raw("GET", "a", "b").startswith(b"-ERR wrong number of arguments")
    assert c3.call_raw("INCR", "k") == b"-ERR value is not an integer or out of range\r\n"
    assert c3.call_raw("ECHO", "") == b"$0\r\n\r\n"


def test_config_get_is_a_map(c3):
    """CONFIG GET answers a map `%` of name to value in RESP3."""
    raw = c3.call_raw("CONFIG", "GET", "maxclients")
    assert raw.startswith(b"%1\r\n$10\r\nmaxclients\r\n$"), raw
    d = c3.call("CONFIG", "GET", "*")
    assert isinstance(d, dict) and b"maxclients" in d and d[b"save"] == b"" and d[b"appendonly"] == b"no", d
    assert c3.call_raw("CONFIG", "GET", "no-such-setting-xyz") == b"%0\r\n"


def test_command_docs_is_a_map(c3):
    """COMMAND DOCS answers a map of name to a map of doc fields in RESP3."""
    d = c3.call("COMMAND", "DOCS", "get")
    assert isinstance(d, dict) and b"get" in d, d
    assert isinstance(d[b"get"], dict) and d[b"get"].get(b"summary"), d


def test_text_replies_are_verbatim(c3):
    """INFO, CLIENT LIST and CLIENT INFO answer verbatim strings (`=N\\r\\ntxt:...`) in RESP3, as
    Redis does."""
    for cmd in (("INFO",), ("INFO", "server"), ("CLIENT", "LIST"), ("CLIENT", "INFO")):
        raw = c3.call_raw(*cmd)
        assert raw.startswith(b"="), f"{' '.join(cmd)} in RESP3 answered {raw[:30]!r}, Redis answers '=N\\r\\ntxt:...'"
        assert raw.split(b"\r\n", 1)[1].startswith(b"txt:"), raw[:30]
    v = c3.call("CLIENT", "INFO")
    assert isinstance(v, Verbatim) and b"resp=3" in v, v


def test_scan_and_arrays(c3):
    """SCAN answers a two-element array (cursor bulk, keys array) in RESP3 too; MGET an array."""
    c3.call("MSET", "x", "1", "y", "2")
    cur, keys = c3.call("SCAN", "0", "COUNT", "100")
    while cur != b"0":
        cur, more = c3.call("SCAN", cur)
        keys += more
    assert sorted(keys) == [b"x", b"y"]
    assert c3.call_raw("MGET", "x", "y") == b"*2\r\n$1\r\n1\r\n$1\r\n2\r\n"


def test_back_to_resp2(c3):
    """HELLO 2 switches the same connection back: nulls are `$-1` and CONFIG GET is an array."""
    r = c3.call("HELLO", "2")
    assert isinstance(r, list) and dict(zip(r[0::2], r[1::2]))[b"proto"] == 2
    assert c3.call_raw("GET", "missing") == b"$-1\r\n"
    assert c3.call_raw("CONFIG", "GET", "appendonly") == b"*2\r\n$10\r\nappendonly\r\n$2\r\nno\r\n"


def test_protocol_is_per_connection(srv, c3):
    """HELLO 3 on one connection does not change another connection's protocol."""
    with srv.conn() as c2:
        assert c2.call_raw("GET", "missing") == b"$-1\r\n"
        assert c3.call_raw("GET", "missing") == b"_\r\n"


def test_resp3_errors_and_failed_hello(c3):
    """A failed HELLO (unsupported version) leaves the connection in RESP3."""
    r = c3.call("HELLO", "9")
    assert isinstance(r, RespError) and r.startswith("NOPROTO"), r
    assert c3.call_raw("GET", "missing") == b"_\r\n"


def test_resp3_pipeline(c3):
    """A pipeline of 300 mixed commands in RESP3 is answered in order with RESP3 encodings."""
    cmds, want = [], []
    for i in range(100):
        cmds += [("SET", f"p{i}", str(i)), ("GET", f"p{i}"), ("GET", f"none{i}")]
        want += [b"+OK\r\n", b"$%d\r\n%d\r\n" % (len(str(i)), i), b"_\r\n"]
    from resp_client import encode_many
    c3.send(encode_many(cmds))
    got = [c3.read_reply_raw() for _ in cmds]
    assert got == want
