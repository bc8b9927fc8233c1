"""The Prometheus endpoint (`--metrics-port`): valid text format, duet_ metric names, exact
command counters, consistent histograms, and an endpoint that survives bad HTTP clients.
Duet-specific: skipped with DUET_TEST_SERVER=redis."""

import http.client
import os
import re
import socket
import threading

import pytest

from server_util import IS_REDIS, free_port, poll_until

pytestmark = pytest.mark.skipif(IS_REDIS, reason="Duet-specific (metrics endpoint)")

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(\s+-?\d+)?$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?\s*')


def parse_prometheus(text):
    """Parses Prometheus text format 0.0.4 strictly. Returns (samples, types) where samples is
    a list of (name, frozenset(labels.items()), float value) and types maps family -> type."""
    samples, types = [], {}
    for ln, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        if line.startswith("#"):
            parts = line.split(None, 3)
            if len(parts) >= 3 and parts[1] == "TYPE":
                assert parts[3] in ("counter", "gauge", "histogram", "summary", "untyped"), line
                types[parts[2]] = parts[3]
            continue
        m = SAMPLE.match(line)
        assert m, f"line {ln} is not a Prometheus sample: {line!r}"
        name, labels_s, value = m.group(1), m.group(3) or "", m.group(4)
        labels = {}
        pos = 0
        while pos < len(labels_s):
            lm = LABEL.match(labels_s, pos)
            assert lm, f"line {ln}: bad labels {labels_s!r}"
            labels[lm.group(1)] = lm.group(2)
            pos = lm.end()
        v = float(value)  # accepts +Inf, -Inf, NaN
        samples.append((name, frozenset(labels.items()), v))
    return samples, types


class Scraper:
    def __init__(self, port):
        self.port = port

    def get(self, path="/metrics", method="GET"):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            c.request(method, path)
            r = c.getresponse()
            return r.status, r.getheader("Content-Type") or "", r.read().decode()
        finally:
            c.close()

    def scrape(self):
        status, ctype, body = self.get()
        assert status == 200, (status, body[:300])
        return parse_prometheus(body)

    def value(self, name, **labels):
        samples, _ = self.scrape()
        want = set(labels.items())
        vals = [v for n, ls, v in samples if n == name and want <= set(ls)]
        return sum(vals) if vals else None


@pytest.fixture
def metered(server_factory):
    """A server with --metrics-port, and a Scraper for it (polled until it answers)."""
    port = free_port()
    mport = free_port(exclude=(port,))
    s = server_factory(port=port, metrics_port=mport)
    sc = Scraper(mport)
    poll_until(lambda: sc.get()[0] == 200, 10, what="the metrics endpoint to answer")
    return s, sc


def test_metrics_format_and_names(metered):
    """GET /metrics answers 200 with text/plain Prometheus text; every sample is a duet_ metric,
    every family has a TYPE, and the contract's metrics are present."""
    s, sc = metered
    with s.conn() as c:
        c.call("SET", "a", "1")
        c.call("GET", "a")
    status, ctype, body = sc.get()
    assert status == 200
    assert ctype.startswith("text/plain"), ctype
    samples, types = parse_prometheus(body)
    names = {n for n, _, _ in samples}
    bad = [n for n in names if not n.startswith("duet_")]
    assert not bad, f"metrics without the duet_ prefix: {bad}"
    for n in names:
        family = re.sub(r"_(bucket|sum|count|total)$", "", n)
        assert n in types or family in types or n.removesuffix("_total") in types, f"no # TYPE for {n}"
    for n in ("duet_commands_total", "duet_command_duration_seconds_bucket", "duet_batch_size_bucket",
              "duet_memory_bytes"):
        assert n in names, f"missing {n}; have {sorted(names)}"
    assert any(n == "duet_commands_total" and ("cmd", "get") in ls for n, ls, _ in samples), \
        "no duet_commands_total{cmd=\"get\"}"


def test_commands_total_is_exact(metered):
    """duet_commands_total{cmd=...} rises by exactly the number of commands sent: 10 GET,
    5 SET, 3 INCR, 2 unknown commands not counted as any of these."""
    s, sc = metered
    before = {cmd: sc.value("duet_commands_total", cmd=cmd) or 0 for cmd in ("get", "set", "incr")}
    with s.conn() as c:
        c.pipeline([("GET", "x")] * 10 + [("SET", "x", "1")] * 5 + [("INCR", "n")] * 3 + [("NOPE",), ("NOPE",)])
    want = {"get": 10, "set": 5, "incr": 3}
    for cmd, n in want.items():
        poll_until(lambda: (sc.value("duet_commands_total", cmd=cmd) or 0) - before[cmd] >= n, 10,
                   what=f"duet_commands_total{{cmd=\"{cmd}\"}} to rise by {n}")
        got = (sc.value("duet_commands_total", cmd=cmd) or 0) - before[cmd]
        assert got == n, f"duet_commands_total{{cmd=\"{cmd}\"}} rose by {got}, expected {n}"


def _histograms(samples):
    """{(family, labels without le): ([(le, count)], sum, count)}"""
    out = {}
    for name, ls, v in samples:
        for suffix in ("_bucket", "_sum", "_count"):
            if name.endswith(suffix):
                fam = name[: -len(suffix)]
                d = dict(ls)
                le = d.pop("le", None)
                key = (fam, frozenset(d.items()))
                h = out.setdefault(key, {"buckets": [], "sum": None, "count": None})
                if suffix == "_bucket":
                    h["buckets"].append((float(le), v))
                else:
                    h[suffix[1:]] = v
    return out


def test_histograms_are_consistent(metered):
    """Every histogram's buckets are cumulative (non-decreasing in le), end in le="+Inf" equal
    to _count, and have a _sum; the GET latency histogram counts the GETs sent."""
    s, sc = metered
    with s.conn() as c:
        c.pipeline([("SET", f"k{i}", "v") for i in range(50)] + [("GET", f"k{i}") for i in range(50)])
    poll_until(lambda: (sc.value("duet_commands_total", cmd="get") or 0) >= 50, 10, what="GETs counted")
    samples, types = sc.scrape()
    hs = _histograms(samples)
    fams = {f for f, _ in hs}
    assert "duet_command_duration_seconds" in fams and "duet_batch_size" in fams, fams
    for (fam, labels), h in hs.items():
        b = sorted(h["buckets"])
        assert b, f"{fam}{dict(labels)} has no buckets"
        assert b[-1][0] == float("inf"), f"{fam}{dict(labels)} lacks le=\"+Inf\""
        counts = [c for _, c in b]
        assert counts == sorted(counts), f"{fam}{dict(labels)} buckets not cumulative: {b}"
        assert h["count"] is not None and h["sum"] is not None, f"{fam}{dict(labels)} lacks _sum/_count"
        assert counts[-1] == h["count"], f"{fam}{dict(labels)}: +Inf bucket {counts[-1]} != _count {h['count']}"
        assert types.get(fam) == "histogram", f"{fam} TYPE is {types.get(fam)}"
    get_count = sum(h["count"] for (fam, ls), h in hs.items()
                    if fam == "duet_command_duration_seconds" and ("cmd", "get") in ls)
    assert get_count >= 50, get_count
    batch = sum(h["count"] for (fam, _), h in hs.items() if fam == "duet_batch_size")
    assert batch > 0


def test_memory_bytes_tracks_data(metered):
    """duet_memory_bytes is positive and rises by at least 4 MiB after 8 MiB of values are
    written."""
    s, sc = metered
    m0 = sc.value("duet_memory_bytes")
    assert m0 is not None and m0 >= 0
    with s.conn(timeout=30) as c:
        for i in range(8):
            c.call("SET", f"mem{i}", os.urandom(1 << 20))
    poll_until(lambda: sc.value("duet_memory_bytes") >= m0 + (4 << 20), 10,
               what=f"duet_memory_bytes to rise by 4 MiB from {m0}")


def test_unknown_path_and_methods(metered):
    """An unknown path answers 404; HEAD/POST do not break the endpoint; /metrics keeps
    answering."""
    s, sc = metered
    status, _, _ = sc.get("/nosuch")
    assert status == 404, status
    try:
        sc.get("/metrics", method="POST")
    except (http.client.HTTPException, OSError):
        pass
    assert sc.get()[0] == 200


def test_endpoint_survives_bad_clients(metered):
    """Garbage, half-sent requests, idle connections and 50 concurrent scrapes on the metrics
    port neither kill the server nor stop the endpoint or the RESP port."""
    s, sc = metered
    for data in (b"\x00\xff" * 1000, b"GET /metrics HTTP/1.1\r\nHost: x\r\n", b"GET /" + b"a" * 100000 + b" HTTP/1.1\r\n\r\n",
                 b"\r\n\r\n", os.urandom(5000)):
        so = socket.create_connection(("127.0.0.1", sc.port), timeout=10)
        try:
            so.sendall(data)
        except OSError:
            pass
        so.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        so.close()
    idle = socket.create_connection(("127.0.0.1", sc.port), timeout=10)  # never sends anything
    try:
        errors = []

        def scrape():
            try:
                sc.scrape()
            except BaseException as e:  # noqa: BLE001
                errors.append(e)

        ts = [threading.Thread(target=scrape, daemon=True) for _ in range(50)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(30)
        assert not errors, errors[:3]
    finally:
        idle.close()
    s.check_alive("the metrics abuse")
    with s.conn() as c:
        assert c.call("PING") == "PONG"


def _listening_ports(pid):
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            t = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if t.startswith("socket:["):
            inodes.add(t[8:-1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = open(table).read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            if f[3] == "0A" and f[9] in inodes:  # LISTEN
                ports.add(int(f[1].split(":")[1], 16))
    return ports


def test_no_endpoint_without_flag(server_factory):
    """Without --metrics-port the server listens on its RESP port only."""
    s = server_factory()
    assert _listening_ports(s.proc.pid) == {s.port}


def test_metrics_port_listens_with_flag(metered):
    """With --metrics-port the server listens on exactly the RESP port and the metrics port."""
    s, sc = metered
    assert _listening_ports(s.proc.pid) == {s.port, sc.port}
