"""Fixtures for the `duet server` integration tests.

The server under test is `$DUET_BIN server ...` (default: build/duet relative to the repository
root). With DUET_TEST_SERVER=redis the same tests run against `redis-server` instead, to check
that what they expect is what Redis does; tests of Duet-only features are skipped then.

Fixtures:
  server          the session's server process (started once, restarted if a test kills it)
  srv             the same, after every database 0..15 was flushed; fails the test if the
                  server died during it
  conn            a raw RESP connection (resp_client.Conn) to srv, closed afterwards
  server_factory  starts servers with their own flags (maxclients, limits, metrics, config
                  file); each is stopped with SIGTERM at the end of the test and checked
  redis_cli       runs `redis-cli -p PORT ...` (skips when redis-cli is missing)
"""

import faulthandler
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from server_util import (  # noqa: E402
    IS_REDIS, REDIS_CLI, REDIS_SERVER, TEST_WATCHDOG_S, ServerProcess, duet_bin)
from resp_client import ConnectionClosed  # noqa: E402


# -- session server -----------------------------------------------------------------------------

@pytest.fixture(scope="session")
def workdir():
    d = tempfile.mkdtemp(prefix="duet-server-tests-")
    yield Path(d)
    shutil.rmtree(d, ignore_errors=True)


class _Session:
    def __init__(self, workdir):
        self.workdir = workdir
        self.server = None

    def get(self):
        if self.server is None or not self.server.alive():
            # first use, or a previous test killed or wedged it (that test was failed)
            self.server = ServerProcess(self.workdir).start()
        return self.server

    def discard(self):
        """Kills a wedged server so that the next test starts a fresh one."""
        if self.server is not None:
            self.server.kill()
        self.server = None


@pytest.fixture(scope="session")
def session(workdir):
    s = _Session(workdir)
    yield s
    if s.server is not None and s.server.proc is not None:
        if s.server.alive():
            s.server.stop()


@pytest.fixture
def srv(session):
    """The session server with all databases flushed. Fails the test if the server dies
    during it, or no longer answers PING on a new connection afterwards (then the server is
    killed and the next test gets a fresh one, so one wedged server fails one test, not all)."""
    server = session.get()
    try:
        server.flush_all_dbs()
    except (OSError, ConnectionClosed, ValueError, AssertionError) as e:
        log = server.log_tail()
        session.discard()
        server = session.get()
        try:
            server.flush_all_dbs()
        except (OSError, ConnectionClosed, ValueError, AssertionError) as e2:
            pytest.fail(f"a fresh server could not flush its databases either ({e2!r}; before: {e!r})\n{log}")
    yield server
    if not server.alive():
        server.check_alive()
    problem = server.unresponsive()
    if problem:
        log = server.log_tail()
        session.discard()
        pytest.fail(f"after this test the server no longer answers PING on a new connection ({problem}); "
                    f"it was killed and replaced\n--- stderr ---\n{log}")


@pytest.fixture
def conn(srv):
    c = srv.conn()
    yield c
    c.close()


@pytest.fixture
def server_factory(workdir):
    """start(**opts) -> a started ServerProcess with its own flags (see ServerProcess); all are
    stopped with SIGTERM and checked when the test ends."""
    started = []

    def start(wait=True, **opts):
        s = ServerProcess(workdir, **opts)
        started.append(s)
        return s.start() if wait else s.spawn()

    yield start
    errors = []
    for s in started:
        if s.proc is None or s.returncode is not None and not s.alive():
            continue  # the test stopped it itself (and checked it)
        try:
            s.stop()
        except BaseException as e:  # pytest.fail raises an Exception subclass (Failed)
            errors.append(str(e))
    if errors:
        pytest.fail("\n".join(errors))


@pytest.fixture
def redis_cli():
    """run(port, *args, input=None, timeout=60) -> CompletedProcess of `redis-cli -p port args`."""
    if REDIS_CLI is None:
        pytest.skip("redis-cli is not installed")

    def run(port, *args, input=None, timeout=60, check=True):
        p = subprocess.run([REDIS_CLI, "-h", "127.0.0.1", "-p", str(port), *args], input=input,
                           capture_output=True, timeout=timeout)
        if check:
            assert p.returncode == 0, (f"redis-cli {' '.join(map(str, args))} exited {p.returncode}\n"
                                       f"stdout: {p.stdout[-2000:]!r}\nstderr: {p.stderr[-2000:]!r}")
        return p

    return run


@pytest.fixture(autouse=True)
def _watchdog():
    """A hung test dumps all thread stacks and ends the run instead of hanging forever."""
    faulthandler.dump_traceback_later(TEST_WATCHDOG_S, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


def pytest_report_header(config):
    if IS_REDIS:
        return f"server under test: {REDIS_SERVER} (DUET_TEST_SERVER=redis)"
    return f"server under test: {duet_bin()} server"
