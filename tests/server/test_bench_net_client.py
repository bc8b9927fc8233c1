"""The network benchmark's client (`duet_bench_net`) against a real server: a client thread that
is descheduled or stopped for longer than `--stall` must not declare a stall when the replies
are waiting in its sockets (it checked for a stall before reading the replies of its pass, and
once failed a run so), while a server that stops answering must be reported as a stall, with
the waiting connections' socket state. Also: the CPU time per request the client reports for
its measured phase, its own and (given its pid) the server's."""

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from server_util import IS_REDIS, bench_net_bin

pytestmark = pytest.mark.skipif(IS_REDIS, reason="duet's benchmark client against duet")


def start_client(port, tmp_path, seconds):
    args = [str(bench_net_bin("duet_bench_net")), "--host", "127.0.0.1", "-p", str(port), "-t", "1", "-c", "4", "-P", "16",
            "-k", "1000", "-s", str(seconds), "--warmup", "0", "--stall", "2", "--out", str(tmp_path), "-q"]
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_a_stopped_client_does_not_report_a_stall(server_factory, tmp_path):
    srv = server_factory(threads=2)
    client = start_client(srv.port, tmp_path, seconds=6)
    time.sleep(1.5)
    os.kill(client.pid, signal.SIGSTOP)  # past --stall, with replies arriving meanwhile
    time.sleep(3)
    os.kill(client.pid, signal.SIGCONT)
    out, err = client.communicate(timeout=60)
    assert client.returncode == 0, err
    assert "stall" not in err


def test_a_stopped_server_is_reported_with_its_connections(server_factory, tmp_path):
    srv = server_factory(threads=2)
    client = start_client(srv.port, tmp_path, seconds=20)
    time.sleep(1.5)
    os.kill(srv.proc.pid, signal.SIGSTOP)
    try:
        out, err = client.communicate(timeout=30)
    finally:
        os.kill(srv.proc.pid, signal.SIGCONT)
    assert client.returncode != 0
    assert "stall" in err and "the server has not answered" in err, err
    assert "INFO failed" in err, err  # the stopped server cannot answer the INFO either


def test_the_measured_phase_reports_the_client_and_server_cpu(server_factory, tmp_path):
    """With the server's pid the result gives both processes' CPU time over the measured phase
    alone; with a pid that names no process the server's is null and the run still passes."""
    srv = server_factory(threads=2)
    for pid, expect_server in ((srv.proc.pid, True), (2**31 - 1, False)):
        out = tmp_path / f"cpu-{pid}.json"
        args = [str(bench_net_bin("duet_bench_net")), "--host", "127.0.0.1", "-p", str(srv.port), "-t", "1", "-c",
                "8", "-P", "16", "-k", "1000", "--mix", "get=1", "-s", "1", "--warmup", "0", "--server-pid", str(pid),
                "--out", str(out)]
        run = subprocess.run(args, capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, run.stderr
        assert "CPU per request: client" in run.stdout
        rec = next(r for r in json.loads(out.read_text())["records"] if r.get("op") == "all")
        assert rec["requests"] > 0
        # The client was busy for most of the second it measured, and never more than its one thread.
        assert 0.05 < rec["client_cpu_s"] < 1.5, rec
        assert rec["client_cpu_us_per_request"] > 0
        if expect_server:
            # The server answered every request of that second: some CPU, at most its two threads' worth.
            assert 0 < rec["server_cpu_s"] <= 2 * rec["seconds"] + 0.1, rec
            assert rec["server_cpu_us_per_request"] > 0
        else:
            assert rec["server_cpu_s"] is None and rec["server_cpu_us_per_request"] is None, rec
