#!/usr/bin/env python3
"""The OLDA benchmark's FeDB-style peer (docs/compute.md, "OLDA"): the same logic as separate
services, not atomic.

  state      redis-server: hash p:<user> {seq, lat, lon, home} (the newest payment) and list
             h:<user> of payments "lat lon id"
  inference  one Python process serving the same 5-128-2 model with numpy over loopback TCP
             (a thread per connection; 20 bytes in, 8 bytes out)
  a payment  1. HMGET p:<user> seq lat lon (the query)        2. features, one inference round trip
             3. when not flagged: RPUSH h:<user>, HSET p:<user> lat lon, HINCRBY p:<user> seq 1,
                sent as one pipeline without MULTI (the insert)

Nothing makes 1-3 atomic, so a decision can be made on stale history: the insert's HINCRBY
returns seq + 1 only if no other payment of the user was inserted since the query; every other
value counts as a decision on stale history.

The work is exported by the Duet benchmark, so both run the same model on the same payments:

  build/bench/duet_bench_olda --users 10^4 --payments 2^14 --export /tmp/olda-work
  python3 bench/compute/olda_fedb.py --work /tmp/olda-work --clients 2 --reps 3

JSON goes to bench/results/compute-olda/ (or --out).
"""

import argparse
import math
import multiprocessing as mp
import shutil
import socket
import socketserver
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import redis

sys.path.insert(0, str(Path(__file__).resolve().parent))
from olda_work import load_model, load_work, median_range, run_clients, set_summary, write_results  # noqa: E402

EARTH_KM = 6371.0088


def infer(layers, x):
    a = x
    for w, b, act in layers:
        a = a @ w.T + b
        if act == 1:
            a = np.maximum(a, 0)
        elif act == 2:
            with np.errstate(over="ignore"):  # exp(-z) overflows to inf for very negative z: y = 0
                a = 1.0 / (1.0 + np.exp(-a))
    return a


def haversine_km(lat1, lon1, lat2, lon2):
    r = math.pi / 180
    s = math.sin((lat2 - lat1) * r / 2)
    t = math.sin((lon2 - lon1) * r / 2)
    a = min(1.0, max(0.0, s * s + math.cos(lat1 * r) * math.cos(lat2 * r) * t * t))
    return 2 * EARTH_KM * math.asin(math.sqrt(a))


def features(plat, plon, lat, lon):
    km = haversine_km(plat, plon, lat, lon)
    return struct.pack("<5f", min(km / 1000.0, 2.0), plat / 90.0, plon / 180.0, lat / 90.0, lon / 180.0), km


def recv_exact(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return buf


def serve_inference(model_path, port_q):
    layers = load_model(model_path)

    class Handler(socketserver.BaseRequestHandler):
        def handle(self):
            self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            try:
                while True:
                    x = np.frombuffer(recv_exact(self.request, 20), dtype="<f4").reshape(1, 5)
                    y = infer(layers, x).astype("<f4")
                    self.request.sendall(y.tobytes())
            except ConnectionError:
                return

    class Server(socketserver.ThreadingTCPServer):
        daemon_threads = True
        allow_reuse_address = True

    with Server(("127.0.0.1", 0), Handler) as srv:
        port_q.put(srv.server_address[1])
        srv.serve_forever()


def client(k, nclients, port, inf_port, payments, start, out_q):
    r = redis.Redis(port=port)
    s = socket.create_connection(("127.0.0.1", inf_port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    mine = payments[k::nclients]
    lat_us, stale, declined, rule, agree = [], 0, 0, 0, 0
    while time.time() < start:
        time.sleep(0.0005)
    t_begin = time.perf_counter()
    for user, la, lo, pid in mine:
        t0 = time.perf_counter()
        seq, plat, plon = r.hmget(f"p:{user}", "seq", "lat", "lon")
        seq, plat, plon = int(seq), float(plat), float(plon)
        x, km = features(plat, plon, la, lo)
        s.sendall(x)
        y0, y1 = struct.unpack("<2f", recv_exact(s, 8))
        flagged = y0 > y1
        rule_fraud = km > 300.0
        rule += rule_fraud
        agree += rule_fraud == flagged
        if flagged:
            declined += 1
        else:
            p = r.pipeline(transaction=False)
            p.rpush(f"h:{user}", f"{la!r} {lo!r} {pid}")
            p.hset(f"p:{user}", mapping={"lat": repr(la), "lon": repr(lo)})
            p.hincrby(f"p:{user}", "seq", 1)
            new_seq = p.execute()[2]
            stale += new_seq != seq + 1
        lat_us.append((time.perf_counter() - t0) * 1e6)
    out_q.put((time.perf_counter() - t_begin, lat_us, stale, declined, rule, agree))


def load_state(r, users):
    p = r.pipeline(transaction=False)
    for n, (user, home, hist) in enumerate(users):
        p.hset(f"p:{user}", mapping={"seq": len(hist), "lat": repr(hist[-1][0]), "lon": repr(hist[-1][1]), "home": home})
        p.rpush(f"h:{user}", *[f"{a!r} {b!r} 0" for a, b in hist])
        if n % 1000 == 999:
            p.execute()
    p.execute()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", required=True, help="folder written by duet_bench_olda --export")
    ap.add_argument("--clients", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--redis-server", default=shutil.which("redis-server") or "redis-server")
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    if a.clients < 1 or a.reps < 1:
        sys.exit("olda_fedb: --clients and --reps must be positive")
    work = Path(a.work)
    users, payments = load_work(work)

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    tmp = tempfile.mkdtemp(prefix="olda-fedb-")
    srv = subprocess.Popen([a.redis_server, "--port", str(port), "--save", "", "--appendonly", "no", "--dir", tmp],
                           stdout=subprocess.DEVNULL)
    port_q = mp.Queue()
    inf = mp.Process(target=serve_inference, args=(str(work / "model.txt"), port_q), daemon=True)
    inf.start()
    inf_port = port_q.get(timeout=30)
    r = redis.Redis(port=port)
    for _ in range(200):
        try:
            r.ping()
            break
        except redis.exceptions.ConnectionError:
            time.sleep(0.05)
    runs = []
    try:
        for rep in range(a.reps):
            r.flushall()
            load_state(r, users)
            res = run_clients(client, a.clients, (port, inf_port, payments))
            n = len(payments)
            run = {
                **set_summary(res, n),
                "stale_decisions": sum(x[2] for x in res),
                "decline_rate": sum(x[3] for x in res) / n,
                "rule_fraud_rate": sum(x[4] for x in res) / n,
                "model_rule_agreement": sum(x[5] for x in res) / n,
            }
            runs.append(run)
            print(f"rep {rep}: {run['ops_per_s']:.0f} payments/s, p50 {run['p50_us']:.0f} us, p99 {run['p99_us']:.0f} us, "
                  f"stale decisions {run['stale_decisions']}, declined {run['decline_rate']:.4f}", flush=True)
    finally:
        srv.terminate()
        srv.wait()
        inf.terminate()
        shutil.rmtree(tmp, ignore_errors=True)

    def med(key):
        return median_range(runs, key)

    tps = med("ops_per_s")
    rec = {
        "name": "olda_users", "system": "fedb-style-peer", "op": "redis + numpy service, not atomic",
        "workload": "OLDA: query, inference service, insert (separate services over loopback)",
        "users": len(users), "extra": 0, "threads": a.clients, "payments": len(payments),
        "ops_per_s": tps[0], "ops_per_s_min": tps[1], "ops_per_s_max": tps[2],
        "p50_us": med("p50_us")[0], "p99_us": med("p99_us")[0],
        "stale_decisions": med("stale_decisions")[0], "decline_rate": med("decline_rate")[0],
        "rule_fraud_rate": med("rule_fraud_rate")[0], "model_rule_agreement": med("model_rule_agreement")[0],
        "reps": a.reps, "runs": runs,
    }
    config = {"clients": a.clients, "reps": a.reps, "users": len(users), "payments": len(payments),
              "redis": subprocess.check_output([a.redis_server, "--version"], text=True).strip(),
              "numpy": np.__version__, "inference": "one process, a thread per connection, one row per request",
              "work": "exported by duet_bench_olda --export (same model, users and payments)"}
    out = write_results(a.out, "olda-fedb", "olda_fedb_peer", config, [rec])
    print(f"median {tps[0]:.0f} payments/s [{tps[1]:.0f}, {tps[2]:.0f}], p50 {rec['p50_us']:.0f} us, p99 {rec['p99_us']:.0f} us, "
          f"stale decisions {rec['stale_decisions']}; wrote {out}")


if __name__ == "__main__":
    main()
