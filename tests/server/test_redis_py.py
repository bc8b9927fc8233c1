"""The stock redis-py client (4.3, RESP2) against the server: its reply parsers for INFO,
CONFIG GET, CLIENT LIST and SCAN accept what the server sends, and non-transactional
pipelines work."""

import pytest

redis = pytest.importorskip("redis")


@pytest.fixture
def r(srv):
    c = srv.redis()
    yield c
    c.close()


def test_basic_commands(r):
    """set/get/getset/incr/append/strlen/exists/delete/mset/mget through redis-py."""
    assert r.ping() is True
    assert r.echo("x") == b"x"
    assert r.set("a", "1") is True
    assert r.set("a", "2", nx=True) is None
    assert r.set("a", "3", xx=True, get=True) == b"1"
    assert r.get("a") == b"3"
    assert r.getset("a", "4") == b"3"
    assert r.incr("n") == 1 and r.incrby("n", 9) == 10 and r.decr("n") == 9
    assert r.append("s", "ab") == 2 and r.strlen("s") == 2
    assert r.mset({"x": "1", "y": "2"}) is True
    assert r.mget(["x", "y", "z"]) == [b"1", b"2", None]
    assert r.exists("x", "y", "z") == 2
    assert r.delete("x", "y", "z") == 2
    assert r.dbsize() == 3


def test_pipeline_without_transaction(r):
    """A 500-command non-transactional pipeline returns every result in order."""
    p = r.pipeline(transaction=False)
    for i in range(250):
        p.set(f"p{i}", i)
        p.incr("count")
    res = p.execute()
    assert res[0::2] == [True] * 250
    assert res[1::2] == list(range(1, 251))


def test_scan_iter(r):
    """scan_iter with match and count yields every matching key."""
    r.mset({f"si:{i}": i for i in range(500)})
    r.mset({f"other:{i}": i for i in range(100)})
    assert sorted(set(r.scan_iter(match="si:*", count=50))) == sorted(f"si:{i}".encode() for i in range(500))


def test_info_config_client_parsers(r, srv):
    """redis-py parses INFO (and INFO keyspace), CONFIG GET and CLIENT LIST replies."""
    r.set("k", "v")
    info = r.info()
    assert info["tcp_port"] == srv.port and info["connected_clients"] >= 1
    ks = r.info("keyspace")
    assert ks["db0"]["keys"] == 1, ks
    assert r.config_get("maxclients")["maxclients"].isdigit()
    r.client_setname("pyclient")
    assert r.client_getname() == "pyclient" or r.client_getname() == b"pyclient"
    assert any(c.get("name") == "pyclient" for c in r.client_list())
    assert isinstance(r.client_id(), int)


def test_select_via_db_argument(srv):
    """redis.Redis(db=5) (which sends SELECT 5 on connect) works in database 5 only."""
    r5, r0 = srv.redis(db=5), srv.redis(db=0)
    try:
        r5.set("k", "five")
        assert r5.get("k") == b"five" and r0.get("k") is None
    finally:
        r5.close()
        r0.close()


def test_errors_raise(r):
    """Error replies surface as redis-py ResponseError with the server's text."""
    r.set("s", "abc")
    with pytest.raises(redis.ResponseError, match="not an integer"):
        r.incr("s")
    with pytest.raises(redis.ResponseError, match="unknown command"):
        r.execute_command("NOSUCHCMD")
