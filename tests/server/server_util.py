"""Shared pieces of the `duet server` integration tests: which server runs (duet, or
redis-server with DUET_TEST_SERVER=redis), the ServerProcess that starts and stops it, and small
helpers (free ports, polling with deadlines). conftest.py turns these into fixtures."""

import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from resp_client import Conn, ConnectionClosed  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
MODE = os.environ.get("DUET_TEST_SERVER", "duet").strip().lower()
if MODE not in ("duet", "redis"):
    raise pytest.UsageError("DUET_TEST_SERVER must be 'duet' or 'redis'")
IS_REDIS = MODE == "redis"
IS_DUET = not IS_REDIS
REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"
REDIS_CLI = shutil.which("redis-cli")
# Extra `duet server` flags for every duet server the tests start (e.g. "--orchestrators 2", so
# that the engine's store runs on its own threads and the I/O threads' batches are really in
# flight while they serve their sockets). Flags a test passes itself come after these.
DUET_SERVER_EXTRA = os.environ.get("DUET_SERVER_EXTRA", "").split()
NUM_DBS = 16
START_TIMEOUT = 30.0
STOP_TIMEOUT = 30.0
TEST_WATCHDOG_S = 150  # a test running longer than this dumps every thread's stack and exits
BAD_STDERR = ("AddressSanitizer", "terminate called", "Segmentation", "ThreadSanitizer",
              "runtime error:", "LeakSanitizer")


def duet_bin():
    p = Path(os.environ.get("DUET_BIN", "build/duet"))
    if not p.is_absolute():
        p = REPO / p
    return p


def bench_net_bin(name):
    """A program of bench/net built beside DUET_BIN (duet_bench_net, duet_bench_replay); skips
    the test when it was not built (DUET_BENCH off)."""
    p = duet_bin().parent / "bench" / "net" / name
    if not p.exists():
        pytest.skip(f"{p} is not built (DUET_BENCH off)")
    return p


duet_only = pytest.mark.skipif(IS_REDIS, reason="Duet-specific (DUET_TEST_SERVER=redis)")


def free_port(exclude=()):
    """A TCP port that was free a moment ago (the server cannot bind port 0)."""
    for _ in range(100):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in exclude:
            return port
    raise RuntimeError("no free port")


def _die_with_parent():
    """Runs in the child before exec: SIGKILL the server if pytest dies (PR_SET_PDEATHSIG)."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)
    except Exception:
        pass


def poll_until(predicate, timeout, interval=0.02, what="condition"):
    """Calls predicate() until it returns a true value or the deadline passes (then raises
    AssertionError). Returns the true value. This is the only way tests wait for anything."""
    deadline = time.monotonic() + timeout
    last_exc = None
    while True:
        try:
            v = predicate()
            if v:
                return v
        except (OSError, ConnectionClosed, ValueError) as e:
            last_exc = e
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}"
                                 + (f" (last error: {last_exc!r})" if last_exc else ""))
        time.sleep(interval)


class ServerProcess:
    """One server process (duet, or redis-server in redis mode) on 127.0.0.1."""

    _seq = 0

    def __init__(self, workdir, port=None, *, threads=2, device="cpu", databases=None,
                 maxclients=None, proto_max_bulk_len=None, client_query_buffer_limit=None,
                 maxmemory=None, metrics_port=None, config=None, pass_port=True, extra=(), kind=None):
        self.kind = kind or MODE  # "duet" or "redis"
        self.workdir = Path(workdir)
        self.port = port or free_port()
        self.threads = threads
        self.device = device
        self.databases = databases
        self.maxclients = maxclients
        self.proto_max_bulk_len = proto_max_bulk_len
        self.client_query_buffer_limit = client_query_buffer_limit
        self.maxmemory = maxmemory
        self.metrics_port = metrics_port
        self.config = config
        self.pass_port = pass_port
        self.extra = list(extra)
        self.proc = None
        self.returncode = None
        self.stdout_path = self.stderr_path = None

    # -- command line -------------------------------------------------------------------------
    def argv(self):
        opts = []
        if self.databases is not None:
            opts += ["--databases", str(self.databases)]
        if self.maxclients is not None:
            opts += ["--maxclients", str(self.maxclients)]
        if self.proto_max_bulk_len is not None:
            opts += ["--proto-max-bulk-len", str(self.proto_max_bulk_len)]
        if self.client_query_buffer_limit is not None:
            opts += ["--client-query-buffer-limit", str(self.client_query_buffer_limit)]
        if self.maxmemory is not None:
            opts += ["--maxmemory", str(self.maxmemory)]
        port = ["--port", str(self.port)] if self.pass_port else []
        if self.kind == "redis":
            if self.metrics_port is not None:
                raise RuntimeError("redis-server has no metrics endpoint")
            argv = [REDIS_SERVER]
            if self.config is not None:
                argv.append(str(self.config))
            return argv + ["--bind", "127.0.0.1"] + port + [
                "--save", "", "--appendonly", "no", "--dir", str(self.workdir),
                "--protected-mode", "no"] + opts + self.extra
        argv = [str(duet_bin()), "server", "--bind", "127.0.0.1"] + port + [
            "--threads", str(self.threads), "--device", self.device] + opts + DUET_SERVER_EXTRA
        if self.metrics_port is not None:
            argv += ["--metrics-port", str(self.metrics_port)]
        if self.config is not None:
            argv += ["--config", str(self.config)]
        return argv + self.extra

    # -- lifecycle ----------------------------------------------------------------------------
    def spawn(self):
        """Starts the process without waiting for it to listen."""
        if self.kind == "duet" and not duet_bin().exists():
            pytest.skip(f"no duet binary at {duet_bin()} (set DUET_BIN)")
        ServerProcess._seq += 1
        n = ServerProcess._seq
        self.stdout_path = self.workdir / f"server-{n}-{self.port}.stdout"
        self.stderr_path = self.workdir / f"server-{n}-{self.port}.stderr"
        env = dict(os.environ)
        env.setdefault("DUET_LOG", "info")
        with open(self.stdout_path, "wb") as out, open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(self.argv(), stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                         cwd=str(self.workdir), env=env, preexec_fn=_die_with_parent)
        self.returncode = None
        return self

    def start(self, timeout=START_TIMEOUT):
        self.spawn()
        self.wait_ready(timeout)
        return self

    def wait_ready(self, timeout=START_TIMEOUT):
        """Waits until the server answers PING on its port; fails with its stderr if it exits
        or does not answer within the timeout."""
        deadline = time.monotonic() + timeout
        last = None
        while True:
            rc = self.proc.poll()
            if rc is not None:
                self.returncode = rc
                pytest.fail(f"server exited with code {rc} before accepting connections\n"
                            f"argv: {' '.join(self.argv())}\n--- stderr ---\n{self.log_tail()}")
            try:
                with Conn(self.port, timeout=2.0) as c:
                    r = c.call("PING")
                    if r == "PONG":
                        return
                    last = r
            except (OSError, ConnectionClosed, ValueError) as e:
                last = e
            if time.monotonic() >= deadline:
                self.kill()
                pytest.fail(f"server did not answer PING on port {self.port} within {timeout}s "
                            f"(last: {last!r})\nargv: {' '.join(self.argv())}\n--- stderr ---\n{self.log_tail()}")
            time.sleep(0.02)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def kill(self):
        if self.alive():
            self.proc.kill()
            self.proc.wait(10)

    def signal_and_wait(self, sig=signal.SIGTERM, timeout=STOP_TIMEOUT):
        """Sends sig and waits for exit; returns the exit code (None if it did not exit, after
        which the process has been killed)."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
                self.returncode = None
                return None
        self.returncode = self.proc.returncode
        return self.returncode

    def stop(self, sig=signal.SIGTERM, check=True):
        """Stops the server with sig; with check, asserts a clean exit (code 0, no sanitizer
        report, no std::terminate, no segfault)."""
        was_alive = self.alive()
        rc = self.signal_and_wait(sig)
        if check:
            self.check_clean(rc, was_alive, sig)
        return rc

    def check_clean(self, rc, was_alive=True, sig=signal.SIGTERM):
        problems = []
        if not was_alive:
            problems.append(f"server had already exited (code {self.proc.returncode}) before {sig.name}")
        elif rc is None:
            problems.append(f"server did not exit within {STOP_TIMEOUT}s of {sig.name}")
        elif rc != 0:
            problems.append(f"server exited with code {rc} after {sig.name} (expected 0)")
        log = self.stderr_text()
        for bad in BAD_STDERR:
            if bad in log:
                problems.append(f"stderr contains {bad!r}")
        if problems:
            pytest.fail("; ".join(problems) + f"\n--- stderr ---\n{self.log_tail()}")

    def stderr_text(self):
        try:
            return self.stderr_path.read_text(errors="replace")
        except (OSError, AttributeError):
            return ""

    def log_text(self):
        """stderr, plus stdout (redis-server logs to stdout)."""
        out = ""
        try:
            out = self.stdout_path.read_text(errors="replace")
        except (OSError, AttributeError):
            pass
        return self.stderr_text() + out

    def log_tail(self, n=6000):
        t = self.log_text()
        return t[-n:] if len(t) > n else t

    # -- clients ------------------------------------------------------------------------------
    def conn(self, timeout=10.0):
        return Conn(self.port, timeout=timeout)

    def redis(self, db=0, **kw):
        import redis
        kw.setdefault("socket_timeout", 10)
        kw.setdefault("socket_connect_timeout", 10)
        return redis.Redis(host="127.0.0.1", port=self.port, db=db, **kw)

    def flush_all_dbs(self, dbs=NUM_DBS):
        with self.conn() as c:
            cmds = []
            for db in range(dbs):
                cmds += [("SELECT", db), ("FLUSHDB",)]
            for cmd, r in zip(cmds, c.pipeline(cmds)):
                assert r == "OK", f"{cmd} answered {r!r}"

    def unresponsive(self, timeout=5.0):
        """None if a new connection gets +PONG within timeout, else what went wrong."""
        try:
            with Conn(self.port, timeout=timeout) as c:
                r = c.call("PING")
                return None if r == "PONG" else f"PING answered {r!r}"
        except (OSError, ConnectionClosed, ValueError) as e:
            return repr(e)

    def check_alive(self, what="the test"):
        if not self.alive():
            rc = self.proc.poll() if self.proc else None
            pytest.fail(f"server died during {what} (exit code {rc})\n--- stderr ---\n{self.log_tail()}")


