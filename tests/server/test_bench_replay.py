"""The replay client (`duet_bench_replay`, OLDA's native client) against a real server: every
command of the file is answered once, per connection in file order; error replies are counted
and named, not fatal; a malformed file is refused before any connection."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from server_util import IS_REDIS, bench_net_bin

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "net"))
from resp_file import resp  # noqa: E402

pytestmark = pytest.mark.skipif(IS_REDIS, reason="duet's benchmark client against duet")


def replay(port, path, *extra):
    r = subprocess.run([str(bench_net_bin("duet_bench_replay")), "--port", str(port), "--commands", str(path), *extra],
                       capture_output=True, text=True, timeout=60)
    return r


@pytest.mark.parametrize("pipeline", [1, 8])
def test_every_command_is_answered_in_order_per_connection(server_factory, tmp_path, pipeline):
    srv = server_factory(threads=2)
    # Connection c gets commands c, c+4, ...: per key, APPENDs in file order build its value.
    cmds = [resp("APPEND", f"k{i % 4}", f"{i},") for i in range(400)]
    cmds += [resp("SET", "bin", b"a\r\nb\x00c"), resp("NOSUCH"), resp("GET", "bin")]
    path = tmp_path / "cmds.resp"
    path.write_bytes(b"".join(cmds))
    r = replay(srv.port, path, "--connections", "4", "--threads", "2", "--pipeline", str(pipeline),
               "--count-reply", "OK")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["requests"] == 403
    assert out["errors"] == 1 and "NOSUCH" in out["first_error"].upper()
    assert out["counted"] == 1  # the SET's +OK
    c = srv.redis()
    for k in range(4):
        assert c.get(f"k{k}") == "".join(f"{i}," for i in range(k, 400, 4)).encode()
    assert c.get("bin") == b"a\r\nb\x00c"


def test_a_malformed_file_is_refused(server_factory, tmp_path):
    srv = server_factory(threads=1)
    path = tmp_path / "bad.resp"
    path.write_bytes(resp("SET", "a", "1") + b"*2\r\n$3\r\nGET\r\n$9\r\nshort\r\n")
    r = replay(srv.port, path)
    assert r.returncode == 2
    assert "past the end" in r.stderr or "malformed" in r.stderr
