#!/usr/bin/env python3
"""Fig. 3.7 from `duet bench ch --q3-sweep` result files: Q3's plans against its selectivity.

usage: bench/compute/plot_q3.py OUT_PREFIX RESULT.json...

Writes OUT_PREFIX-<warehouses>w.png per result file (OUT_PREFIX-<warehouses>w-<N>workers.png for
a sweep beside N OLTP workers, `--q3-workers N`): queries/s (median, with the [min, max] range over
rounds as error bars) and p90 latency against the selectivity, one line per plan. Prints the same
figures as a Markdown table, with the workers' txn/s during each point when they ran. Without matplotlib (Debian: python3-matplotlib) it
prints the tables only.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import plotting  # noqa: E402

PLANS = ["read", "snapshot-keys", "snapshot-tables"]


def wh(doc):
    n = doc["config"]["warehouses"]
    text = f"{n} warehouse" + ("" if n == 1 else "s")
    workers = doc["config"].get("workers", 0)
    if workers:
        text += f", beside {workers} {doc['config']['worker_mix']}-mix worker" + ("" if workers == 1 else "s")
    return text


def out_path(prefix, doc):
    workers = doc["config"].get("workers", 0)
    return f"{prefix}-{doc['config']['warehouses']}w" + (f"-{workers}workers" if workers else "") + ".png"


def table(doc):
    recs = doc["records"]
    sels = sorted({r["selectivity"] for r in recs})
    by = {(r["selectivity"], r["plan"]): r for r in recs}
    plans = [p for p in PLANS if any(r["plan"] == p for r in recs)]
    print(f"\nQ3, {wh(doc)}, commit {doc['commit'][:7]}: queries/s "
          "(median [min, max] over rounds), p90 ms\n")
    print("| selectivity | " + " | ".join(plans) + " | snapshot-keys / read |")
    print("|---" * (len(plans) + 2) + "|")
    for s in sels:
        cells = []
        for p in plans:
            r = by.get((s, p))
            if r is None:
                cells.append("-")
                continue
            q = r["queries_per_s"]
            cell = f"{q['median']:.3g} [{q['min']:.3g}, {q['max']:.3g}], p90 {r['p90_ms']['median']:.3g}"
            if "worker_txn_per_s" in r:
                cell += f", workers {r['worker_txn_per_s']['median']:.0f} txn/s"
            cells.append(cell)
        k, rd = by.get((s, "snapshot-keys")), by.get((s, "read"))
        ratio = f"{k['queries_per_s']['median'] / rd['queries_per_s']['median']:.2f}x" if k and rd else "-"
        print(f"| {s:g} | " + " | ".join(cells) + f" | {ratio} |")


def plot(plt, doc, path):
    recs = doc["records"]
    fig, (ax_q, ax_l) = plt.subplots(1, 2, figsize=(10, 4))
    for p in PLANS:
        rs = sorted((r for r in recs if r["plan"] == p), key=lambda r: r["selectivity"])
        if not rs:
            continue
        x = [r["selectivity"] for r in rs]
        med = [r["queries_per_s"]["median"] for r in rs]
        lo = [m - r["queries_per_s"]["min"] for m, r in zip(med, rs)]
        hi = [r["queries_per_s"]["max"] - m for m, r in zip(med, rs)]
        ax_q.errorbar(x, med, yerr=[lo, hi], marker="o", capsize=3, label=p)
        ax_l.plot(x, [r["p90_ms"]["median"] for r in rs], marker="o", label=p)
    ax_q.set_xlabel("selectivity (fraction of customers selected)")
    ax_q.set_ylabel("queries/s (one thread)")
    ax_q.set_yscale("log")
    ax_l.set_xlabel("selectivity (fraction of customers selected)")
    ax_l.set_ylabel("p90 latency, ms")
    ax_l.set_yscale("log")
    ax_q.legend()
    fig.suptitle(f"CH Q3, READ vs SNAPSHOT, {wh(doc)} "
                 f"({doc['machine'].get('cpu_model', '?')}, commit {doc['commit'][:7]})", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"wrote {path}")


def main(argv):
    if len(argv) < 3:
        print(__doc__)
        return 2
    docs = []
    for p in argv[2:]:
        with open(p) as f:
            docs.append(json.load(f))
    for d in docs:
        table(d)
    plt = plotting.pyplot()
    if plt is None:
        return 0
    for d in docs:
        plot(plt, d, out_path(argv[1], d))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
