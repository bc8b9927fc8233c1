"""Native procedures through a real server and redis-py (docs/compute.md, "Procedures";
docs/server.md): PROCEDURE LOAD/LIST/DELETE, FCALL and FCALL_RO (redis-py's fcall, fcall_ro),
admin gating (procedure-enable), path refusal (procedure-dir), bad libraries, errors that abort
with nothing applied, re-runs on conflict (two clients on different I/O threads incrementing one
key 1000 times each), and PROCEDURE DELETE while a call is in flight.

The procedure libraries are the ones tests/procedure builds (build/tests/procedure/*.so beside
$DUET_BIN); each test copies what it needs into its own procedure-dir."""

import shutil
import threading
from pathlib import Path

import pytest

from server_util import IS_REDIS, duet_bin, poll_until

redis = pytest.importorskip("redis")
pytestmark = pytest.mark.skipif(IS_REDIS, reason="Duet-specific (native procedures)")

TXN_DB = 1
LIBS = ("duet_proc_test", "duet_proc_bad_abi", "duet_proc_no_symbol", "duet_proc_dup", "duet_proc_bank")


def lib_file(name):
    p = duet_bin().resolve().parent / "tests" / "procedure" / f"lib{name}.so"
    if not p.exists():
        pytest.skip(f"{p} is not built (build the duet_proc_* targets)")
    return p


@pytest.fixture
def procdir(tmp_path):
    d = tmp_path / "procs"
    d.mkdir()
    for name in LIBS:
        shutil.copy(lib_file(name), d / f"{name}.so")
    return d


def start(server_factory, procdir, enable=True, threads=2, extra=()):
    flags = ["--database-kinds", "kv,1=txn", "--procedure-dir", str(procdir)]
    if enable:
        flags += ["--procedure-enable", "yes"]
    return server_factory(threads=threads, extra=flags + list(extra))


def client(s, db=TXN_DB, **kw):
    kw.setdefault("decode_responses", True)
    return redis.Redis(host="127.0.0.1", port=s.port, db=db, **kw)


def procedures(r):
    """PROCEDURE LIST as {name: {field: value}} (each entry is a map: a flat list in RESP2)."""
    out = {}
    for entry in r.execute_command("PROCEDURE", "LIST"):
        d = entry if isinstance(entry, dict) else dict(zip(entry[::2], entry[1::2]))
        out[d["name"]] = d
    return out


def test_load_list_call_delete(server_factory, procdir):
    s = start(server_factory, procdir)
    r = client(s)
    assert r.execute_command("PROCEDURE", "LOAD", "duet_proc_test.so") == "testlib"
    procs = procedures(r)
    assert procs["incr"]["library"] == "testlib" and procs["incr"]["flags"] == []
    assert procs["get_ro"]["flags"] == ["no-writes"]
    assert r.fcall("incr", 1, "n", 5) == 5
    assert r.fcall("incr", 1, "n", -2) == 3
    assert r.get("n") == "3"
    assert r.fcall_ro("get_ro", 1, "n") == "3"
    assert r.fcall_ro("get_ro", 1, "absent") is None
    assert r.fcall_ro("echo", 2, "k1", "k2", "a1") == [["k1", "k2"], ["a1"]]
    assert r.fcall_ro("types", 0) == [1, "bulk", "simple", None, [-2, []]]
    assert r.fcall_ro("mlp", 0, 2, 4) == 2125
    # Binary-safe keys and arguments.
    rb = client(s, decode_responses=False)
    assert rb.fcall_ro("echo", 1, b"a\x00b", b"\r\n\x00") == [[b"a\x00b"], [b"\r\n\x00"]]
    assert procedures(r)["incr"]["calls"] == 2
    assert r.execute_command("PROCEDURE", "DELETE", "testlib") == "OK"
    assert procedures(r) == {}
    with pytest.raises(redis.ResponseError, match="Function not found"):
        r.fcall("incr", 1, "n")
    # Loaded again, it works again.
    assert r.execute_command("PROCEDURE", "LOAD", "duet_proc_test.so") == "testlib"
    assert r.fcall("incr", 1, "n") == 4


def test_errors_abort_with_nothing_applied(server_factory, procdir):
    s = start(server_factory, procdir)
    r = client(s)
    r.execute_command("PROCEDURE", "LOAD", "duet_proc_test.so")
    with pytest.raises(redis.ResponseError, match="^MYERR custom failure"):
        r.fcall("fail", 1, "f")
    with pytest.raises(redis.ResponseError, match=r"procedure 'fail_code' failed \(code 7\)"):
        r.fcall("fail_code", 1, "f")
    with pytest.raises(redis.ResponseError, match="returned without a reply"):
        r.fcall("noreply", 0)
    with pytest.raises(redis.ResponseError, match="incomplete reply"):
        r.fcall("partial", 0)
    assert r.get("f") is None, "an aborted procedure applies nothing"
    # An error value from a procedure that returned DUET_OK is its reply (it committed).
    with pytest.raises(redis.ResponseError, match="^MYERR an error value"):
        r.fcall_ro("err_value", 0)
    # FCALL_RO refuses a procedure that may write; a read-only one that writes anyway is refused at the write.
    with pytest.raises(redis.ResponseError, match="FCALL_RO calls only procedures flagged read-only"):
        r.fcall_ro("incr", 1, "n")
    assert r.fcall_ro("liar", 1, "n") == -2
    assert r.get("n") is None
    # Wrong arguments.
    with pytest.raises(redis.ResponseError, match="Function not found"):
        r.fcall("nope", 0)
    with pytest.raises(redis.ResponseError, match="numkeys"):
        r.execute_command("FCALL", "incr", "x")
    with pytest.raises(redis.ResponseError, match="greater than number of args"):
        r.execute_command("FCALL", "incr", "3", "k")
    with pytest.raises(redis.ResponseError, match="wrong number of arguments"):
        r.execute_command("FCALL", "incr")
    with pytest.raises(redis.ResponseError, match="delta is not an integer"):
        r.fcall("incr", 1, "n", "x")
    # FCALL runs on txn databases only, and not inside an open transaction.
    with pytest.raises(redis.ResponseError, match="not supported by database 0"):
        client(s, db=0).fcall("incr", 1, "n")
    c = client(s, single_connection_client=True)
    assert c.execute_command("TXN", "BEGIN") == "OK"
    with pytest.raises(redis.ResponseError, match="inside an open transaction"):
        c.fcall("incr", 1, "n")
    assert c.execute_command("TXN", "ABORT") == "OK"
    assert c.fcall("incr", 1, "n") == 1


def test_admin_gating_and_paths(server_factory, procdir, tmp_path):
    off = start(server_factory, procdir, enable=False)
    r = client(off)
    with pytest.raises(redis.ResponseError, match="PROCEDURE LOAD is disabled"):
        r.execute_command("PROCEDURE", "LOAD", "duet_proc_test.so")
    with pytest.raises(redis.ResponseError, match="PROCEDURE DELETE is disabled"):
        r.execute_command("PROCEDURE", "DELETE", "testlib")
    with pytest.raises(redis.ResponseError, match="immutable config"):
        r.config_set("procedure-enable", "yes")
    assert r.config_get("procedure-enable") == {"procedure-enable": "no"}
    assert r.execute_command("PROCEDURE", "LIST") == []
    with pytest.raises(redis.ResponseError, match="Function not found"):
        r.fcall("incr", 1, "n")

    s = start(server_factory, procdir)
    r = client(s)
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.copy(lib_file("duet_proc_test"), outside / "evil.so")
    (procdir / "link.so").symlink_to(outside / "evil.so")
    (procdir / "sub").mkdir()
    for path, why in [("../outside/evil.so", "must not contain '..'"),
                      ("sub/../../outside/evil.so", "must not contain '..'"),
                      (str(outside / "evil.so"), "must be relative to procedure-dir"),
                      ("link.so", "resolves outside procedure-dir"),
                      ("missing.so", "no procedure library 'missing.so'"),
                      ("duet_proc_bad_abi.so", "built for procedure ABI version 999"),
                      ("duet_proc_no_symbol.so", "does not export the symbol duet_procedure_register")]:
        with pytest.raises(redis.ResponseError, match=why):
            r.execute_command("PROCEDURE", "LOAD", path)
    assert procedures(r) == {}
    assert r.execute_command("PROCEDURE", "LOAD", "duet_proc_test.so") == "testlib"
    with pytest.raises(redis.ResponseError, match="already loaded"):
        r.execute_command("PROCEDURE", "LOAD", "duet_proc_test.so")
    with pytest.raises(redis.ResponseError, match="procedure 'incr' is already loaded from library 'testlib'"):
        r.execute_command("PROCEDURE", "LOAD", "duet_proc_dup.so")
    with pytest.raises(redis.ResponseError, match="no procedure library named 'nolib'"):
        r.execute_command("PROCEDURE", "DELETE", "nolib")
    with pytest.raises(redis.ResponseError, match="unknown subcommand"):
        r.execute_command("PROCEDURE", "FROB")


class Hold:
    """Holds the I/O thread serving connection c: c runs the `block` procedure, which waits for
    a gate file. While it waits, that thread accepts no connection, so new connections go to the
    other threads. release() opens the gate and returns the call's reply."""

    def __init__(self, c, d, name):
        self.c, self.entered, self.gate = c, d / f"{name}.entered", d / f"{name}.gate"
        self.result = {}
        self.t = threading.Thread(target=self._run)
        self.t.start()
        poll_until(self.entered.exists, 30, what=f"{name} to hold its thread")

    def _run(self):
        self.result["reply"] = self.c.fcall_ro("block", 0, str(self.entered), str(self.gate))

    def release(self):
        self.gate.touch()
        self.t.join(30)
        return self.result.get("reply")


def conn1(s):
    return client(s, single_connection_client=True)


def tid(c):
    return c.fcall_ro("tid", 0)


def two_threads(s, d):
    """Two connections served by different I/O threads (a server with 2 threads)."""
    a, h = conn1(s), conn1(s)
    ta = tid(a)
    if tid(h) != ta:
        return a, h
    hold = Hold(h, d, "pair")  # a's thread is held: the next connection goes to the other one
    b = conn1(s)
    assert tid(b) != ta
    assert hold.release() == "released"
    return a, b


def test_long_procedure_runs_off_the_io_thread(server_factory, procdir):
    # One I/O thread. A's call of block_long (flagged DUET_PROC_LONG) waits at a gate file on a
    # procedure thread; meanwhile B, on the same and only I/O thread, is served, and A's own
    # pipelined command after the call runs too, its reply queued behind the call's.
    s = start(server_factory, procdir, threads=1, extra=("--procedure-threads", "2"))
    r = client(s)
    assert r.config_get("procedure-threads") == {"procedure-threads": "2"}
    r.execute_command("PROCEDURE", "LOAD", "duet_proc_test.so")
    assert procedures(r)["block_long"]["flags"] == ["no-writes", "long"]
    assert procedures(r)["block"]["flags"] == ["no-writes"]
    entered, gate = procdir / "long.entered", procdir / "long.gate"
    result = {}

    def run_a():
        p = conn1(s).pipeline(transaction=False)
        p.fcall_ro("block_long", 0, str(entered), str(gate))
        p.fcall("incr", 1, "n", 1)
        result["replies"] = p.execute()

    t = threading.Thread(target=run_a)
    t.start()
    poll_until(entered.exists, 30, what="the long call to start")
    b = client(s, socket_timeout=30)
    # A's increment, sent after its long call, runs while that call still waits.
    poll_until(lambda: b.fcall_ro("get_ro", 1, "n") == "1", 30, what="A's pipelined increment")
    assert b.fcall("incr", 1, "n", 1) == 2
    gate.touch()
    t.join(30)
    assert result["replies"] == ["released", 1]


def test_compute_device_setting(server_factory, procdir):
    """procedure-compute-device places procedures' inference; it is fixed at startup."""
    s = start(server_factory, procdir, extra=("--procedure-compute-device", "cpu"))
    r = client(s)
    assert r.config_get("procedure-compute-device") == {"procedure-compute-device": "cpu"}
    with pytest.raises(redis.ResponseError, match="immutable config"):
        r.config_set("procedure-compute-device", "gpu")
    r.execute_command("PROCEDURE", "LOAD", "duet_proc_test.so")
    # The test library's 2-2-1 network: relu(x) then 0.5 x0 + 0.25 x1 + 0.125, scaled by 1000.
    assert r.fcall_ro("mlp", 0, "2", "4") == 2125


def test_conflicts_rerun_the_procedure(server_factory, procdir):
    # Two clients served by different I/O threads each increment one key 1000 times through
    # the procedure. A's first call stops between its read and its write (a gate file) until B
    # has committed an increment, so at least that call must lose its commit and run again; the
    # rest run freely (with a spin inside the procedure that widens the conflict window).
    s = start(server_factory, procdir, threads=2)
    client(s).execute_command("PROCEDURE", "LOAD", "duet_proc_test.so")
    a, b = two_threads(s, procdir)
    entered, gate = procdir / "incr.entered", procdir / "incr.gate"
    a_held, done_b, errors = threading.Event(), [0], []

    def run_a():
        try:
            a.fcall("incr", 1, "counter", 1, 0, str(entered), str(gate))
            for _ in range(999):
                a.fcall("incr", 1, "counter", 1, 50000)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    def run_b():
        try:
            a_held.wait(30)
            for _ in range(1000):
                b.fcall("incr", 1, "counter", 1, 50000)
                done_b[0] += 1
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    ts = [threading.Thread(target=run_a), threading.Thread(target=run_b)]
    for t in ts:
        t.start()
    poll_until(entered.exists, 30, what="A's first call to read the key")
    a_held.set()
    poll_until(lambda: done_b[0] > 0 or errors, 30, what="B to commit an increment")
    gate.touch()
    for t in ts:
        t.join()
    assert not errors, errors
    r = client(s)
    assert r.get("counter") == "2000"
    incr = procedures(r)["incr"]
    assert incr["calls"] == 2000 and incr["failures"] == 0
    conflicts = r.info("duet")[f"txn_db{TXN_DB}"]["conflicts"]
    assert incr["retries"] >= 1 and conflicts >= incr["retries"], (incr, conflicts)


def test_delete_waits_for_a_call_in_flight(server_factory, procdir):
    # Three I/O threads: A's call holds one, B's another, C's PROCEDURE DELETE the third (it
    # waits for A and B). B's call then returns, and B's next FCALL is refused while A's call
    # keeps the unload waiting; when A's gate opens, the DELETE completes.
    s = start(server_factory, procdir, threads=3)
    client(s).execute_command("PROCEDURE", "LOAD", "duet_proc_test.so")
    a = conn1(s)
    hold_a = Hold(a, procdir, "a")
    b = conn1(s)
    hold_b = Hold(b, procdir, "b")
    c = conn1(s)  # on the third thread: the other two are held
    results = {}

    def delete():
        results["delete"] = c.execute_command("PROCEDURE", "DELETE", "testlib")

    td = threading.Thread(target=delete)
    td.start()
    assert hold_b.release() == "released"

    def refused():
        try:
            b.fcall_ro("get_ro", 1, "k")  # succeeds until the DELETE has begun
        except redis.ResponseError as e:
            assert "being unloaded" in str(e), e
            return True
        return False

    poll_until(refused, 30, what="FCALL to be refused while the library unloads")
    with pytest.raises(redis.ResponseError, match="being unloaded"):
        b.fcall("incr", 1, "k")
    assert "delete" not in results, "the unload waits for A's call"
    assert hold_a.release() == "released"
    td.join(30)
    assert results == {"delete": "OK"}
    with pytest.raises(redis.ResponseError, match="Function not found"):
        b.fcall("incr", 1, "k")
    assert b.get("k") is None


def test_example_bank_library(server_factory, procdir):
    # examples/procedures/bank.c: transfers between accounts from two I/O threads keep the
    # total exact; an overdraft aborts with nothing applied.
    s = start(server_factory, procdir)
    r = client(s)
    assert r.execute_command("PROCEDURE", "LOAD", "duet_proc_bank.so") == "bank"
    r.execute_command("PROCEDURE", "LOAD", "duet_proc_test.so")  # two_threads asks `tid`
    for acct in ("acct:a", "acct:b", "acct:c"):
        assert r.fcall("deposit", 1, acct, 100) == 100
    with pytest.raises(redis.ResponseError, match="^INSUFFICIENT"):
        r.fcall("transfer", 2, "acct:a", "acct:b", 101)
    assert r.fcall_ro("balance", 1, "acct:a") == 100
    a, b = two_threads(s, procdir)
    errors = []

    def run(c, src, dst):
        try:
            for i in range(200):
                try:
                    c.fcall("transfer", 2, src, dst, 1 + i % 7)
                except redis.ResponseError as e:
                    assert str(e).startswith("INSUFFICIENT"), e
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    ts = [threading.Thread(target=run, args=(a, "acct:a", "acct:b")),
          threading.Thread(target=run, args=(b, "acct:b", "acct:c"))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors
    assert r.fcall_ro("total", 0, "acct:", "acct:~") == 300
    assert all(r.fcall_ro("balance", 1, k) >= 0 for k in ("acct:a", "acct:b", "acct:c"))
