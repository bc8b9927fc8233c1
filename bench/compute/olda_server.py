#!/usr/bin/env python3
"""OLDA through the server (docs/compute.md, "OLDA"): each payment is one `FCALL olda_pay`, the
native procedure in bench/compute/olda_proc.c, run by `duet server` inside one snapshot-isolation
transaction (SNAPSHOT of the profile and the last payment, features, inference in the server's
compute engine, writes, commit only when not flagged; a write conflict re-runs it). Clients are
separate processes with redis-py, one round trip per payment, on the same work as the FeDB-style
peer (bench/compute/olda_fedb.py), exported by `duet_bench_olda --export`:

  build/bench/duet_bench_olda --users 10^4 --payments 2^14 --export /tmp/olda-work
  python3 bench/compute/olda_server.py --duet build/duet --proc build/bench/libduet_olda_proc.so \\
      --work /tmp/olda-work --clients 2 --reps 3

With --native-client (build/bench/net/duet_bench_replay) the payments are written once as RESP
FCALL commands and replayed by that C++ client instead: --connections connections over
--client-threads threads, one payment in flight per connection unless --pipeline says more. The
same payments, the same server; it measures what the server sustains where the Python clients'
own time bounds the rate.

JSON goes to bench/results/compute-olda/ (or --out).
"""

import argparse
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import redis

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "net"))
from resp_file import resp  # noqa: E402
from olda_work import gpu_name, load_model, load_work, median_range, run_clients, set_summary, write_results  # noqa: E402


def key(user, slot):
    return struct.pack(">II", user, slot)


def start_server(duet, libdir, threads):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([str(duet), "server", "--port", str(port), "--threads", str(threads), "--database-kinds", "txn",
                             "--procedure-enable", "yes", "--procedure-dir", str(libdir)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while True:
        try:
            r = redis.Redis(port=port)
            r.ping()
            return proc, port
        except redis.ConnectionError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                raise RuntimeError("the server did not start")
            time.sleep(0.05)


def load_users(r, users):
    p = r.pipeline(transaction=False)
    for n, (user, home, hist) in enumerate(users):
        for s, (la, lo) in enumerate(hist, start=1):
            p.set(key(user, 0xFFFFFFFF - s), struct.pack("<ddq", la, lo, 0))
        p.set(key(user, 0), struct.pack("<qq", len(hist), home))
        if n % 500 == 499:
            p.execute()
    p.execute()


def client(k, nclients, port, payments, start, out_q):
    r = redis.Redis(port=port)
    mine = payments[k::nclients]
    lat_us, declined, committed = [], 0, 0
    while time.time() < start:
        time.sleep(0.0005)
    t_begin = time.perf_counter()
    for user, la, lo, pid in mine:
        t0 = time.perf_counter()
        rep = r.fcall("olda_pay", 1, key(user, 0), struct.pack("<d", la), struct.pack("<d", lo), pid)
        if rep == b"DECLINED":
            declined += 1
        else:
            committed += 1
        lat_us.append((time.perf_counter() - t0) * 1e6)
    out_q.put((time.perf_counter() - t_begin, lat_us, declined, committed))


def write_commands(payments, path):
    """The payments as FCALL olda_pay commands, in order, for duet_bench_replay."""
    with open(path, "wb") as f:
        for user, la, lo, pid in payments:
            f.write(resp(b"FCALL", b"olda_pay", 1, key(user, 0), struct.pack("<d", la), struct.pack("<d", lo), pid))


def replay(native, port, commands, a):
    """Runs duet_bench_replay once; returns the set's summary in set_summary's form plus counts."""
    out = subprocess.run([native, "--port", str(port), "--commands", str(commands), "--connections", str(a.connections),
                          "--threads", str(a.client_threads), "--pipeline", str(a.pipeline), "--count-reply", "DECLINED"],
                         capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise RuntimeError(f"duet_bench_replay failed ({out.returncode}): {out.stderr.strip()}")
    r = json.loads(out.stdout)
    if r["errors"]:
        raise RuntimeError(f"{r['errors']} error replies, the first: {r['first_error']}")
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duet", required=True)
    ap.add_argument("--proc", required=True, help="libduet_olda_proc.so")
    ap.add_argument("--work", required=True, help="folder written by duet_bench_olda --export")
    ap.add_argument("--clients", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2, help="server threads")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", default="")
    ap.add_argument("--native-client", default="", help="duet_bench_replay: replay the payments with it")
    ap.add_argument("--connections", type=int, default=32, help="native client: connections")
    ap.add_argument("--client-threads", type=int, default=4, help="native client: threads")
    ap.add_argument("--pipeline", type=int, default=1, help="native client: payments in flight per connection")
    a = ap.parse_args()
    if a.clients < 1 or a.reps < 1 or a.threads < 1:
        sys.exit("olda_server: --clients, --threads and --reps must be positive")
    work = Path(a.work)
    users, payments = load_work(work)
    layers = load_model(work / "model.txt")
    blobs = [layers[0][0].astype("<f4").tobytes(), layers[0][1].astype("<f4").tobytes(),
             layers[1][0].astype("<f4").tobytes(), layers[1][1].astype("<f4").tobytes()]

    libdir = Path(tempfile.mkdtemp(prefix="olda-proc-"))
    shutil.copy(a.proc, libdir / "olda.so")
    commands = libdir / "payments.resp"
    if a.native_client:
        write_commands(payments, commands)
    srv, port = start_server(a.duet, libdir, a.threads)
    runs = []
    try:
        r = redis.Redis(port=port)
        r.execute_command("PROCEDURE", "LOAD", "olda.so")
        r.fcall("olda_model", 0, *blobs)
        for rep in range(a.reps):
            r.flushdb()
            load_users(r, users)
            n = len(payments)
            if a.native_client:
                nr = replay(a.native_client, port, commands, a)
                run = {"ops_per_s": nr["ops_per_s"], "p50_us": nr["p50_us"], "p99_us": nr["p99_us"],
                       "decline_rate": nr["counted"] / n, "committed": n - nr["counted"]}
            else:
                res = run_clients(client, a.clients, (port, payments))
                run = {
                    **set_summary(res, n),
                    "decline_rate": sum(x[2] for x in res) / n,
                    "committed": sum(x[3] for x in res),
                }
            runs.append(run)
            print(f"rep {rep}: {run['ops_per_s']:.0f} payments/s, p50 {run['p50_us']:.0f} us, p99 {run['p99_us']:.0f} us, "
                  f"declined {run['decline_rate']:.4f}", flush=True)
        listing = r.execute_command("PROCEDURE", "LIST")
    finally:
        srv.terminate()
        srv.wait()
        shutil.rmtree(libdir, ignore_errors=True)

    def med(k):
        return median_range(runs, k)

    retries = 0
    for e in listing:
        d = dict(zip(e[0::2], e[1::2]))
        if d.get(b"name") == b"olda_pay":
            retries = int(d.get(b"retries", 0))
    tps = med("ops_per_s")
    rec = {
        "name": "olda_users", "system": "duet-server", "op": "FCALL olda_pay (one transaction per payment)",
        "workload": "OLDA through the server: one FCALL per payment, " +
                    (f"duet_bench_replay ({a.connections} connections, {a.client_threads} threads, "
                     f"{a.pipeline} in flight each)" if a.native_client else "redis-py clients"),
        "users": len(users), "extra": 0, "threads": a.connections if a.native_client else a.clients, "server_threads": a.threads, "payments": len(payments),
        "ops_per_s": tps[0], "ops_per_s_min": tps[1], "ops_per_s_max": tps[2],
        "p50_us": med("p50_us")[0], "p99_us": med("p99_us")[0], "decline_rate": med("decline_rate")[0],
        "stale_decisions": 0, "reps": a.reps, "runs": runs,
        "retries_total": retries, "retries_per_txn": retries / (len(payments) * a.reps),
    }
    config = {"clients": a.connections if a.native_client else a.clients, "server_threads": a.threads,
              "client": ("duet_bench_replay" if a.native_client else "redis-py processes"), "reps": a.reps, "users": len(users),
              "payments": len(payments), "work": "exported by duet_bench_olda --export (same model, users and payments)"}
    if a.native_client:
        config.update({"connections": a.connections, "client_threads": a.client_threads, "pipeline": a.pipeline})
    # The server's compute engine runs inference on the GPU where one is present, unless DUET_NO_GPU=1.
    gpu = None if os.environ.get("DUET_NO_GPU") == "1" else gpu_name()
    config["inference_on"] = gpu or "cpu"
    out = write_results(a.out, "olda-server", "olda_server", config, [rec], device=gpu or "cpu")
    print(f"median {tps[0]:.0f} payments/s [{tps[1]:.0f}, {tps[2]:.0f}], p50 {rec['p50_us']:.0f} us, p99 {rec['p99_us']:.0f} us; "
          f"{retries} procedure re-runs on conflict in all; wrote {out}")


if __name__ == "__main__":
    main()
