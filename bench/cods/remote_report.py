#!/usr/bin/env python3
"""Tabulates duet_bench_cods --figures remote results (bench/cods/remote.cpp) as Markdown:
one row per structure and K, with the round trips per operation and the throughput (median
and range over the repeats) of each regime and thread count.

usage: bench/cods/remote_report.py FILE.json [FILE.json ...]
"""
import json
import sys


def main(paths):
    rows = {}
    threads = set()
    meta = None
    for p in paths:
        with open(p) as f:
            doc = json.load(f)
        meta = doc
        for r in doc["records"]:
            if r.get("name") != "remote" or not r.get("ok"):
                continue
            key = (r["structure"], r["k"])
            reg = "fa" if r["regime"] == "fully-atomic" else "ew"
            t = r["round_trips_per_op"]
            cell = {"trips": t["total"], "reads": t["reads"], "writes": t["writes"], "cases": t["cases"],
                    "nodes": t["node_reads"], "tput": {}}
            for x in r["throughput"]:
                threads.add(x["threads"])
                s = x["ops_per_s"]
                cell["tput"][x["threads"]] = (s["median"], s["min"], s["max"])
            rows.setdefault(key, {})[reg] = cell
    if not rows:
        print("no remote records")
        return 1
    ths = sorted(threads)
    print(f"machine: {meta['machine'].get('cpu_model', '?')}, {meta['machine'].get('cores', '?')} hardware threads; "
          f"commit {meta['commit'][:10]}; date {meta['date']}")
    head = "| structure | K | regime | round trips/op (reads + writes + CASes) | node gets/op |"
    head += "".join(f" k ops/s, {t} thr |" for t in ths)
    print(head)
    print("|---|---|---|---|---|" + "---|" * len(ths))
    order = {"list": 0, "hash": 1, "tree": 2}
    for (st, k) in sorted(rows, key=lambda x: (order.get(x[0], 9), x[1])):
        for reg in ("fa", "ew"):
            c = rows[(st, k)].get(reg)
            if not c:
                continue
            line = (f"| {st} | {k} | {reg} | {c['trips']:.2f} ({c['reads']:.2f} + {c['writes']:.2f} + {c['cases']:.2f}) "
                    f"| {c['nodes']:.2f} |")
            for t in ths:
                m = c["tput"].get(t)
                line += f" {m[0] / 1e3:.1f} [{m[1] / 1e3:.1f}-{m[2] / 1e3:.1f}] |" if m else " - |"
            print(line)
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(sys.argv[1:]))
