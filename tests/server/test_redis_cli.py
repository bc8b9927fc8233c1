"""The stock redis-cli against the server: one-shot commands, --pipe mass insertion, -n
database selection, --scan, RESP3 (-3), COMMAND DOCS and INFO. Skipped without redis-cli."""

from server_util import IS_DUET


def out(p):
    return p.stdout.decode(errors="replace")


def test_set_get(srv, redis_cli):
    """`redis-cli set a b` prints OK and `redis-cli get a` prints b; a missing key prints an
    empty line (raw mode, stdout not a terminal)."""
    assert out(redis_cli(srv.port, "set", "a", "b")).strip() == "OK"
    assert out(redis_cli(srv.port, "get", "a")).strip() == "b"
    assert out(redis_cli(srv.port, "get", "missing")).strip() == ""
    assert out(redis_cli(srv.port, "incr", "n")).strip() == "1"
    assert out(redis_cli(srv.port, "ping")).strip() == "PONG"


def test_error_output(srv, redis_cli):
    """An error reply is printed with its text (redis-cli prints 'ERR ...' and still exits 0
    in one-shot mode for server errors)."""
    p = redis_cli(srv.port, "nosuchcommand", "x", check=False)
    text = out(p) + p.stderr.decode(errors="replace")
    assert "ERR unknown command 'nosuchcommand'" in text, text


def test_commands_on_stdin(srv, redis_cli):
    """`redis-cli -p P` with commands on stdin (how scripts drive it) runs each line; redis-cli
    first loads COMMAND DOCS to build its help, so a malformed docs reply would crash it."""
    p = redis_cli(srv.port, input=b"SET stdin:k v\nGET stdin:k\nSELECT 2\nDBSIZE\nPING\n", check=False)
    assert p.returncode == 0, f"redis-cli exited with {p.returncode} (-11 = SIGSEGV); stderr {p.stderr[-500:]!r}"
    assert out(p).split() == ["OK", "v", "OK", "0", "PONG"], out(p)


def test_pipe_mass_insertion(srv, redis_cli):
    """`redis-cli --pipe` inserts 10,000 keys from RESP on stdin and reports 0 errors and
    10000 replies; DBSIZE and spot checks agree."""
    n = 10000
    proto = b"".join(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(k), k, len(v), v)
                     for k, v in ((b"mass:%d" % i, b"value-%d" % i) for i in range(n)))
    p = redis_cli(srv.port, "--pipe", input=proto, timeout=120)
    text = out(p)
    assert "errors: 0" in text and f"replies: {n}" in text, text
    with srv.conn() as c:
        assert c.call("DBSIZE") == n
        assert c.call("MGET", "mass:0", "mass:4999", "mass:9999") == [b"value-0", b"value-4999", b"value-9999"]


def test_db_option(srv, redis_cli):
    """`redis-cli -n 3` works in database 3 only (redis-cli sends SELECT)."""
    redis_cli(srv.port, "-n", "3", "set", "x", "three")
    assert out(redis_cli(srv.port, "-n", "3", "get", "x")).strip() == "three"
    assert out(redis_cli(srv.port, "get", "x")).strip() == ""
    assert out(redis_cli(srv.port, "-n", "3", "dbsize")).strip() == "1"


def test_scan_option(srv, redis_cli):
    """`redis-cli --scan --pattern 'sc:*'` lists exactly the matching keys via SCAN."""
    with srv.conn() as c:
        c.pipeline([("SET", f"sc:{i}", "v") for i in range(300)] + [("SET", f"other:{i}", "v") for i in range(50)])
    keys = out(redis_cli(srv.port, "--scan", "--pattern", "sc:*")).split()
    assert sorted(set(keys)) == sorted(f"sc:{i}" for i in range(300))


def test_resp3_option(srv, redis_cli):
    """`redis-cli -3` (HELLO 3 on connect) works for ping, set, get and a missing key."""
    assert out(redis_cli(srv.port, "-3", "ping")).strip() == "PONG"
    redis_cli(srv.port, "-3", "set", "r3", "v3")
    assert out(redis_cli(srv.port, "-3", "get", "r3")).strip() == "v3"
    p = redis_cli(srv.port, "-3", "config", "get", "maxclients")
    assert "maxclients" in out(p), out(p)


def test_command_docs(srv, redis_cli):
    """`redis-cli COMMAND DOCS get` prints the command's documentation (a summary)."""
    text = out(redis_cli(srv.port, "COMMAND", "DOCS", "get"))
    assert "summary" in text and "get" in text.lower(), text


def test_info(srv, redis_cli):
    """`redis-cli INFO` prints the Server, Clients, Memory, Stats and Keyspace sections (and
    Duet's own section)."""
    with srv.conn() as c:
        c.call("SET", "k", "v")
    text = out(redis_cli(srv.port, "INFO"))
    headers = {line.strip().lower() for line in text.splitlines() if line.startswith("#")}
    for s in ("server", "clients", "memory", "stats", "keyspace"):
        assert f"# {s}" in headers, f"INFO lacks '# {s.capitalize()}': {headers}"
    assert "db0:keys=1" in text
    if IS_DUET:
        duet = out(redis_cli(srv.port, "INFO", "duet"))
        assert "duet_device:" in duet and "router_model:" in duet, duet


def test_latency_of_cli_roundtrips(srv, redis_cli):
    """`redis-cli -r 200 incr c` (repeat) runs 200 commands on one connection."""
    redis_cli(srv.port, "-r", "200", "incr", "c")
    with srv.conn() as c:
        assert c.call("GET", "c") == b"200"
