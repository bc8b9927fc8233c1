"""The server process: its ready line, graceful shutdown on SIGTERM/SIGINT with connected
clients, restarting on the same port (no persistence), the config file and flag precedence,
and clean failure on bad settings or a port in use."""

import os
import signal
import subprocess

import pytest

from resp_client import Conn, encode
from server_util import IS_DUET, IS_REDIS, duet_only, free_port, poll_until


def test_ready_line(server_factory):
    """The server logs a line containing 'ready to accept connections' once it listens (on
    stderr for Duet)."""
    s = server_factory()
    text = (lambda: s.stderr_text()) if IS_DUET else (lambda: s.log_text())
    poll_until(lambda: "ready to accept connections" in text().lower(), 10,
               what="'ready to accept connections' in the log")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=lambda s: s.name)
def test_graceful_shutdown_with_clients(server_factory, sig):
    """SIGTERM and SIGINT stop the server with exit code 0 even with an idle client, a client
    in the middle of a request, and a client with unread replies connected; connected clients
    then see their connection closed."""
    s = server_factory()
    idle = s.conn()
    idle.call("PING")
    partial = s.conn()
    partial.send(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$100\r\nabc")
    unread = s.conn()
    unread.call("SET", "big", b"x" * (1 << 20))
    unread.send(encode("GET", "big") * 20)
    rc = s.stop(sig)  # asserts exit code 0 and a clean stderr
    assert rc == 0
    for c in (idle, partial):
        _, closed = c.read_until_close(10)
        assert closed
        c.close()
    unread.close()


@duet_only
def test_no_thread_dies_of_a_stop_signal(server_factory):
    """SIGTERM and SIGINT stop the server in order whichever thread the kernel hands them to:
    every thread of the process either blocks them or they have a handler. Threads that
    libraries start before main (the OpenBLAS pool) block nothing, and a SIGTERM delivered to
    one of them once killed the server (exit code -15) instead of stopping it."""
    s = server_factory()
    s.conn().call("PING")
    pid = s.proc.pid

    def mask(path, field):
        with open(path) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1], 16)
        raise AssertionError(f"{field} missing from {path}")

    caught = mask(f"/proc/{pid}/status", "SigCgt")
    for tid in os.listdir(f"/proc/{pid}/task"):
        blocked = mask(f"/proc/{pid}/task/{tid}/status", "SigBlk")
        for sig in (signal.SIGTERM, signal.SIGINT):
            bit = 1 << (sig - 1)
            assert caught & bit or blocked & bit, \
                f"thread {tid} would die of {sig.name}: neither blocked ({blocked:#x}) nor caught ({caught:#x})"


def test_restart_same_port(server_factory):
    """After a SIGTERM with clients connected (which leaves the server side of their
    connections in TIME_WAIT), a new server process starts on the same port within 30 s,
    comes up empty (no persistence) and serves reads and writes."""
    s1 = server_factory()
    port = s1.port
    conns = [s1.conn() for _ in range(3)]
    for i, c in enumerate(conns):
        assert c.call("SET", f"before:{i}", "1") == "OK"
    s1.stop()
    for c in conns:
        c.close()
    s2 = server_factory(port=port)
    assert s2.port == port
    with s2.conn() as c:
        assert c.call("DBSIZE") == 0
        assert c.call("GET", "before:0") is None
        assert c.call("SET", "after", "restart") == "OK"
        assert c.call("GET", "after") == b"restart"
        for db in (1, 15):
            c.call("SELECT", db)
            assert c.call("DBSIZE") == 0
    s2.stop()
    s3 = server_factory(port=port)
    with s3.conn() as c:
        assert c.call("GET", "after") is None and c.call("PING") == "PONG"


def test_port_in_use_fails_cleanly(server_factory):
    """A second server on a port already in use exits with a non-zero code within 30 s instead
    of hanging or reporting ready; the first one keeps serving."""
    s1 = server_factory()
    s2 = server_factory(port=s1.port, wait=False)
    try:
        rc = s2.proc.wait(30)
    except subprocess.TimeoutExpired:
        s2.kill()
        pytest.fail(f"second server on busy port {s1.port} still running after 30 s\n{s2.log_tail()}")
    assert rc != 0, f"second server on a busy port exited with code 0\n{s2.log_tail()}"
    s2.returncode = rc
    with s1.conn() as c:
        assert c.call("PING") == "PONG"


def _write_conf(tmp_path, lines, name="duet.conf"):
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    return p


def test_config_file(server_factory, tmp_path):
    """A redis.conf-style file (comments, blank lines, 'name value') sets the port, databases
    and maxclients; a command-line flag overrides the file (maxclients)."""
    port = free_port()
    conf = _write_conf(tmp_path, ["# test configuration", "", f"port {port}", "databases 4",
                                  "   # indented comment", "maxclients 7", "proto-max-bulk-len 2097152"])
    s = server_factory(port=port, pass_port=False, config=conf, maxclients=9)
    with s.conn() as c:
        assert c.call("SELECT", 3) == "OK"
        assert c.call("SELECT", 4) == "ERR DB index is out of range"
        assert c.call("CONFIG", "GET", "maxclients") == [b"maxclients", b"9"]
        assert c.call("CONFIG", "GET", "proto-max-bulk-len") == [b"proto-max-bulk-len", b"2097152"]


def test_config_file_port_overridden_by_flag(server_factory, tmp_path):
    """--port on the command line wins over 'port' in the config file."""
    file_port = free_port()
    flag_port = free_port(exclude=(file_port,))
    conf = _write_conf(tmp_path, [f"port {file_port}"])
    s = server_factory(port=flag_port, config=conf)
    with s.conn() as c:
        assert c.call("PING") == "PONG"
    with pytest.raises(OSError):
        Conn(file_port, timeout=2).close()


def test_config_file_with_redis_conf_directives(server_factory, tmp_path):
    """A config file with the persistence lines of a typical redis.conf (save "", appendonly
    no) is accepted, and CONFIG GET reports them as Redis does."""
    port = free_port()
    conf = _write_conf(tmp_path, [f"port {port}", 'save ""', "appendonly no"])
    s = server_factory(port=port, pass_port=False, config=conf)
    with s.conn() as c:
        assert c.call("CONFIG", "GET", "save") == [b"save", b""]
        assert c.call("CONFIG", "GET", "appendonly") == [b"appendonly", b"no"]


def _expect_startup_failure(server_factory, what, **opts):
    s = server_factory(wait=False, **opts)
    try:
        rc = s.proc.wait(30)
    except subprocess.TimeoutExpired:
        s.kill()
        pytest.fail(f"server with {what} still running after 30 s\n{s.log_tail()}")
    s.returncode = rc
    assert rc != 0, f"server with {what} exited with code 0\n{s.log_tail()}"
    for bad in ("AddressSanitizer", "terminate called", "Segmentation"):
        assert bad not in s.stderr_text(), s.log_tail()
    return s


def test_bad_config_directive_fails(server_factory, tmp_path):
    """An unknown directive in the config file stops startup with a non-zero exit and a message
    naming it."""
    conf = _write_conf(tmp_path, ["nosuchdirective 5"])
    s = _expect_startup_failure(server_factory, "an unknown config directive", config=conf)
    assert "nosuchdirective" in s.log_text(), s.log_tail()


def test_missing_config_file_fails(server_factory, tmp_path):
    """A config file that does not exist stops startup with a non-zero exit."""
    _expect_startup_failure(server_factory, "a missing config file", config=tmp_path / "absent.conf")


@duet_only
@pytest.mark.parametrize("extra", [["--no-such-flag"], ["--maxclients", "abc"], ["--device", "quantum"],
                                   ["--databases", "0"], ["--threads", "-1"], ["--database-kinds", "nosuchkind"],
                                   ["--database-kinds", "kv,99=kv"]])
def test_bad_flags_fail(server_factory, extra):
    """Unknown flags and invalid flag values stop startup with a non-zero exit (never a crash or
    a server silently running with defaults)."""
    _expect_startup_failure(server_factory, " ".join(extra), extra=extra)


@duet_only
@pytest.mark.parametrize("threads", [1, 4])
def test_thread_counts(server_factory, threads):
    """The server works with --threads 1 and --threads 4 (more threads than cores)."""
    s = server_factory(threads=threads)
    with s.conn() as a, s.conn() as b:
        a.call("SET", "k", "1")
        assert b.call("INCR", "k") == 2


@pytest.mark.skipif(IS_REDIS, reason="Duet-specific")
def test_help_mentions_server_flags():
    """`duet server --help` exits 0 and lists the flags of the contract."""
    from server_util import duet_bin
    if not duet_bin().exists():
        pytest.skip("no duet binary")
    p = subprocess.run([str(duet_bin()), "server", "--help"], capture_output=True, timeout=30)
    out = (p.stdout + p.stderr).decode(errors="replace")
    assert p.returncode == 0, out
    for flag in ("--port", "--bind", "--threads", "--device", "--maxclients", "--proto-max-bulk-len",
                 "--metrics-port", "--config"):
        assert flag in out, f"--help does not mention {flag}"
