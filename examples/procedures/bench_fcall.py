#!/usr/bin/env python3
"""FCALL's overhead against the same logic as an interactive transaction, through redis-py.

The work: bank transfers (examples/procedures/bank.c's `transfer`) between `--accounts`
accounts, pre-generated once with a fixed seed and replayed identically for every system:

  fcall          FCALL transfer 2 from to amount                       (1 round trip)
  txn            TXN BEGIN; GET from; GET to; SET from; SET to; TXN COMMIT, the check done by
                 the client, re-run on -ABORT                          (6 round trips)
  txn-pipelined  [TXN BEGIN, GET from, GET to] then [SET, SET, TXN COMMIT], each group sent as
                 one pipeline                                          (2 round trips)

Each system runs with 1 and with `--clients` client processes (each its own slice of the work)
for `--reps` repetitions; the table gives the median transfers/s with [min, max], and per-call
latency p50/p99 of the one-client runs. Every run ends by checking that the total balance is
unchanged. JSON goes to bench/results/compute-procedures/.

  python3 examples/procedures/bench_fcall.py --duet build/duet \\
      --lib build/tests/procedure/libduet_proc_bank.so
"""

import argparse
import datetime
import json
import multiprocessing as mp
import os
import platform
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import redis

REPO = Path(__file__).resolve().parents[2]
DB = 1


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(duet, libdir, threads):
    port = free_port()
    proc = subprocess.Popen([str(duet), "server", "--port", str(port), "--threads", str(threads), "--device", "cpu",
                             "--database-kinds", f"kv,{DB}=txn", "--procedure-enable", "yes",
                             "--procedure-dir", str(libdir)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while True:
        try:
            r = redis.Redis(port=port, db=DB)
            r.ping()
            return proc, port
        except redis.ConnectionError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                raise RuntimeError("the server did not start")
            time.sleep(0.05)


def do_fcall(r, pipe, f, t, amt):
    try:
        r.fcall("transfer", 2, f, t, amt)
    except redis.ResponseError as e:
        if not str(e).startswith("INSUFFICIENT"):
            raise
    return 0


def do_txn(r, pipe, f, t, amt):
    retries = 0
    while True:
        r.execute_command("TXN", "BEGIN")
        a = int(r.execute_command("GET", f) or 0)
        b = int(r.execute_command("GET", t) or 0)
        if a < amt:
            r.execute_command("TXN", "ABORT")
            return retries
        r.execute_command("SET", f, a - amt)
        r.execute_command("SET", t, b + amt)
        try:
            r.execute_command("TXN", "COMMIT")
            return retries
        except redis.ResponseError as e:
            if not str(e).startswith("conflict") and "conflict" not in str(e):
                raise
            retries += 1


def do_txn_pipelined(r, pipe, f, t, amt):
    retries = 0
    while True:
        pipe.execute_command("TXN", "BEGIN")
        pipe.execute_command("GET", f)
        pipe.execute_command("GET", t)
        _, a, b = pipe.execute()
        a, b = int(a or 0), int(b or 0)
        if a < amt:
            r.execute_command("TXN", "ABORT")
            return retries
        pipe.execute_command("SET", f, a - amt)
        pipe.execute_command("SET", t, b + amt)
        pipe.execute_command("TXN", "COMMIT")
        res = pipe.execute(raise_on_error=False)
        if not isinstance(res[2], Exception):
            return retries
        if "conflict" not in str(res[2]):
            raise res[2]
        retries += 1


SYSTEMS = {"fcall": do_fcall, "txn": do_txn, "txn-pipelined": do_txn_pipelined}


def client_main(port, system, work, barrier, out):
    r = redis.Redis(port=port, db=DB, single_connection_client=True)
    pipe = r.pipeline(transaction=False)
    fn = SYSTEMS[system]
    lat, retries = [], 0
    barrier.wait()
    t0 = time.perf_counter()
    for f, t, amt in work:
        s = time.perf_counter()
        retries += fn(r, pipe, f, t, amt)
        lat.append(time.perf_counter() - s)
    out.put((t0, time.perf_counter(), lat, retries))


def run_once(port, system, work, clients):
    slices = [work[i::clients] for i in range(clients)]
    barrier, out = mp.Barrier(clients), mp.Queue()
    procs = [mp.Process(target=client_main, args=(port, system, s, barrier, out)) for s in slices]
    for p in procs:
        p.start()
    res = [out.get() for _ in procs]
    for p in procs:
        p.join()
    start = min(x[0] for x in res)
    end = max(x[1] for x in res)
    lat = sorted(v for x in res for v in x[2])
    return len(work) / (end - start), lat, sum(x[3] for x in res)


def pct(sorted_vals, q):
    return sorted_vals[min(len(sorted_vals) - 1, int(q * len(sorted_vals)))]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duet", default=str(REPO / "build/duet"))
    ap.add_argument("--lib", default=str(REPO / "build/tests/procedure/libduet_proc_bank.so"))
    ap.add_argument("--transfers", type=int, default=4000)
    ap.add_argument("--accounts", type=int, default=1000)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--threads", type=int, default=2, help="server I/O threads")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", default=str(REPO / "bench/results/compute-procedures"))
    args = ap.parse_args()

    rng = random.Random(args.seed)
    accounts = [f"acct:{i:06d}" for i in range(args.accounts)]
    work = []
    for _ in range(args.transfers):
        f, t = rng.sample(accounts, 2)
        work.append((f, t, rng.randint(1, 20)))
    initial = 1000

    libdir = Path(tempfile.mkdtemp(prefix="duet-bench-procs-"))
    shutil.copy(args.lib, libdir / "bank.so")
    proc, port = start_server(args.duet, libdir, args.threads)
    records = []
    try:
        r = redis.Redis(port=port, db=DB)
        r.execute_command("PROCEDURE", "LOAD", "bank.so")
        for system in SYSTEMS:
            for clients in sorted({1, args.clients}):
                rates, lat_all, retries = [], [], 0
                for _ in range(args.reps):
                    r.mset({a: initial for a in accounts})
                    rate, lat, rt = run_once(port, system, work, clients)
                    total = sum(int(v) for v in r.mget(accounts))
                    assert total == initial * len(accounts), f"{system}: total {total} changed"
                    rates.append(rate)
                    lat_all.append(lat)
                    retries += rt
                med = statistics.median(rates)
                mid = lat_all[rates.index(sorted(rates)[len(rates) // 2])]
                rec = {"system": system, "clients": clients, "transfers": len(work),
                       "ops_per_s": med, "ops_per_s_min": min(rates), "ops_per_s_max": max(rates),
                       "p50_us": pct(mid, 0.50) * 1e6, "p99_us": pct(mid, 0.99) * 1e6,
                       "client_retries": retries}
                records.append(rec)
                print(f"{system:14s} clients {clients}: {med:9.0f} transfers/s [{min(rates):.0f}, {max(rates):.0f}]"
                      f"  p50 {rec['p50_us']:.0f} us  p99 {rec['p99_us']:.0f} us", flush=True)
        procs = {}
        for e in r.execute_command("PROCEDURE", "LIST"):
            d = dict(zip(e[::2], e[1::2]))
            procs[d[b"name"].decode()] = {k.decode(): (v.decode() if isinstance(v, bytes) else v)
                                          for k, v in d.items() if k != b"flags"}
    finally:
        proc.terminate()
        proc.wait(30)
        shutil.rmtree(libdir, ignore_errors=True)

    try:
        commit = subprocess.check_output(["git", "-C", str(REPO), "rev-parse", "HEAD"], text=True).strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    cpu = "unknown"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    out = {
        "machine": {"hostname": platform.node(), "cores": os.cpu_count(), "cpu_model": cpu},
        "device": "cpu",
        "commit": commit,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "benchmark": "fcall-vs-txn",
        "config": {"transfers": args.transfers, "accounts": args.accounts, "clients": args.clients,
                   "server_threads": args.threads, "reps": args.reps, "seed": args.seed,
                   "client": f"redis-py {redis.__version__}, one process per client",
                   "duet": os.path.relpath(args.duet, REPO), "lib": os.path.relpath(args.lib, REPO),
                   "timing": "transfers / wall time from a barrier to the last client's end; latency per call "
                             "(the transaction with its re-runs) from the median repetition"},
        "procedure_stats": procs,
        "records": records,
    }
    d = Path(args.out)
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"fcall-vs-txn-{platform.node()}-{os.cpu_count()}core.json"
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {os.path.relpath(path, REPO)}")


if __name__ == "__main__":
    sys.exit(main())
