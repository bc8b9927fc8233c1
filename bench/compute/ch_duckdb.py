#!/usr/bin/env python3
"""CH's Q1, Q3 and Q6 in DuckDB over a copy of a Duet CH database, beside Duet's own times.

usage: bench/compute/ch_duckdb.py --dir DIR [--threads 1,2] [--reps 5] [--out FILE]

DIR is what `duet bench ch --export DIR` wrote: order_line.csv, customer.csv, orders.csv,
new_order.csv (one snapshot of a freshly loaded database) and duet.json (Duet's results and
times of the three queries on that snapshot). This script loads the CSV files into an in-memory
DuckDB database (timed: the copy's cost), runs each query --reps times at each thread count,
checks every result against Duet's (the run fails on a difference), and writes one JSON file
(bench/results/compute-ch/duckdb-<time>.json by default) with both systems' times.

The copy is stale by construction: it holds the database as of the export, and a query over it
sees no commit after that; a fresher copy costs the export and the load again (both reported).
Duet's queries read the live database at their start (0 ms stale). DuckDB comes from PyPI
(`pip install duckdb`); the script says so and exits 2 when it is missing.
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import time

Q1 = """SELECT ol_number, sum(ol_quantity), sum(ol_amount), count(*) FROM order_line
        WHERE ol_delivery_d > 1167696000 GROUP BY ol_number ORDER BY ol_number"""
Q6 = """SELECT coalesce(sum(ol_amount), 0) FROM order_line
        WHERE ol_delivery_d >= 915148800 AND ol_delivery_d < 1577836800 AND ol_quantity BETWEEN 1 AND 100000"""
Q3 = """SELECT ol_o_id, ol_w_id, ol_d_id, sum(ol_amount) AS revenue, o_entry_d
        FROM customer, new_order, orders, order_line
        WHERE c_state LIKE 'A%' AND c_id = o_c_id AND c_w_id = o_w_id AND c_d_id = o_d_id
          AND no_w_id = o_w_id AND no_d_id = o_d_id AND no_o_id = o_id
          AND ol_w_id = o_w_id AND ol_d_id = o_d_id AND ol_o_id = o_id AND o_entry_d > 1167696000
        GROUP BY ol_o_id, ol_w_id, ol_d_id, o_entry_d
        ORDER BY revenue DESC, o_entry_d, ol_w_id, ol_d_id, ol_o_id"""
TABLES = ["order_line", "customer", "orders", "new_order"]


def summary(ms):
    return {"median": statistics.median(ms), "min": min(ms), "max": max(ms), "all": ms}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out")
    a = ap.parse_args()
    try:
        import duckdb
    except ImportError:
        print("ch_duckdb.py: DuckDB is not installed (pip install duckdb)", file=sys.stderr)
        return 2
    with open(os.path.join(a.dir, "duet.json")) as f:
        duet = json.load(f)
    want = duet["records"][0]["results"]
    threads = [int(t) for t in a.threads.split(",")]
    con = duckdb.connect()
    t0 = time.perf_counter()
    for t in TABLES:
        con.execute(f"CREATE TABLE {t} AS SELECT * FROM read_csv('{os.path.join(a.dir, t + '.csv')}', header = true)")
    load_s = time.perf_counter() - t0
    rows = {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES}
    print(f"DuckDB {duckdb.__version__}: loaded the copy ({rows['order_line']} order lines) in {load_s:.2f} s")
    records, failures = [], []
    for n in threads:
        con.execute(f"SET threads = {n}")
        for name, sql in (("q1", Q1), ("q6", Q6), ("q3", Q3)):
            ms, got = [], None
            for _ in range(a.reps):
                s = time.perf_counter()
                got = con.execute(sql).fetchall()
                ms.append((time.perf_counter() - s) * 1e3)
            if name == "q6":
                ok = got[0][0] == want["q6"]
            else:
                ok = [list(r) for r in got] == want[name]
            if not ok:
                failures.append(f"{name} at {n} threads differs from Duet's result")
            records.append({"system": "duckdb", "query": name, "threads": n, "ms": summary(ms), "equal_to_duet": ok})
            print(f"duckdb {name} threads {n}: median {statistics.median(ms):.1f} ms "
                  f"[{min(ms):.1f}, {max(ms):.1f}] {'(equal to Duet)' if ok else '(DIFFERS)'}")
    times = duet["records"][0]["times"]
    for key, t in times.items():
        records.append({"system": "duet", "query": key[:-3], "threads": 1, "ms": t})
        print(f"duet   {key[:-3]}: median {t['median']:.1f} ms [{t['min']:.1f}, {t['max']:.1f}]")
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                            cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip()
    doc = {
        "machine": duet["machine"],  # the export ran on the same machine, just before
        "device": "cpu",
        "commit": commit,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "benchmark": "ch-duckdb",
        "config": {
            "duckdb": duckdb.__version__,
            "reps": a.reps,
            "threads": threads,
            "copy": {"export_s": duet["config"]["export_s"], "duckdb_load_s": load_s, "rows": rows},
            "duet_export": {k: duet[k] for k in ("commit", "date")} | {"config": duet["config"]},
            "staleness": "DuckDB queries a copy as of the export: stale by at least export_s + duckdb_load_s "
                         "when refreshed back to back; Duet's queries read the live database (0 ms)",
            "timing": "wall time of one query, from the call to its last row fetched; Duet's from "
                      "duet bench ch --export on the same snapshot, one query thread",
        },
        "records": records,
    }
    out = a.out or datetime.datetime.now(datetime.timezone.utc).strftime(
        "bench/results/compute-ch/duckdb-%Y%m%dT%H%M%SZ.json")
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"results: {out}")
    for msg in failures:
        print("ch_duckdb.py: " + msg, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
