#!/usr/bin/env python3
"""Tables and plots of duet_bench_hydralist result files.

usage: bench/hydralist/plot.py RESULT.json... [--png DIR]

Prints one Markdown table per file: a row per (keys, workload, distribution, threads), a column
per system with the median Mops/s and [min-max] over repetitions, and the ratio of Hydralist to
the best ordered peer (tbb, libcds, lit; libcuckoo is a hash map, shown but never counted).
A cell over fewer samples than the run's repetitions says so ("n=1": the one load of
--load-once, or a run cut by --child-timeout). Then the peak-RSS table and the runs that timed
out, when the file has them. --png DIR writes one throughput-vs-threads plot per (keys,
workload, distribution), if matplotlib is installed.
"""
import json
import sys
from collections import OrderedDict

PEERS = ("tbb", "libcds", "lit")
ORDER = ("hydralist", "tbb", "libcds", "lit", "libcuckoo")


def table(doc):
    recs = doc["records"]
    systems = [s for s in doc["config"].get("systems", []) if any(r["system"] == s for r in recs)]
    systems += [s for s in OrderedDict((r["system"], 1) for r in recs) if s not in systems]
    systems.sort(key=lambda s: ORDER.index(s) if s in ORDER else len(ORDER))
    reps = doc["config"].get("reps", 0)
    rows = OrderedDict()
    for r in sorted(recs, key=lambda r: (r["key_type"], r["workload"], r["distribution"], r["threads"], r["keys"])):
        rows.setdefault((r["key_type"], r["workload"], r["distribution"], r["threads"], r["keys"]), {})[r["system"]] = r
    head = "| keys | workload | dist | threads | loaded | " + " | ".join(systems) + " | hydralist / best peer |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for (kt, wl, dist, th, n), cells in rows.items():
        out = []
        for s in systems:
            r = cells.get(s)
            if r is None:
                out.append("-")
                continue
            n_s = len(r.get("ops_per_s_samples", []))
            out.append("%.2f [%.2f-%.2f]%s" % (
                r["ops_per_s_median"] / 1e6, r["ops_per_s_min"] / 1e6, r["ops_per_s_max"] / 1e6,
                " n=%d" % n_s if n_s and n_s != reps else ""))
        best = max([cells[p]["ops_per_s_median"] for p in PEERS if p in cells] or [0])
        ratio = "%.2fx" % (cells["hydralist"]["ops_per_s_median"] / best) if best and "hydralist" in cells else "-"
        print("| %s | %s | %s | %d | %d | %s | %s |" % (kt, wl, dist, th, n, " | ".join(out), ratio))
    if doc.get("peak_rss"):
        print()
        print("| keys | system | loaded | peak RSS added (MiB) | bytes/key |")
        print("|---|---|---|---|---|")
        for r in doc["peak_rss"]:
            if r.get("peak_rss_added_bytes") is None:
                continue
            print("| %s | %s | %d | %.1f | %.1f |" % (r["key_type"], r["system"], r["keys"],
                                                   r["peak_rss_added_bytes"] / 2**20, r["bytes_per_key"]))
    if doc.get("timed_out"):
        print()
        print("Timed out (killed at --child-timeout; samples before kept): " + ", ".join(doc["timed_out"]))


def plots(doc, outdir):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no plots", file=sys.stderr)
        return
    import os
    os.makedirs(outdir, exist_ok=True)
    groups = OrderedDict()
    for r in doc["records"]:
        groups.setdefault((r["key_type"], r["workload"], r["distribution"]), []).append(r)
    for (kt, wl, dist), rs in groups.items():
        plt.figure(figsize=(4, 3))
        for s in OrderedDict((r["system"], 1) for r in rs):
            pts = sorted((r["threads"], r["ops_per_s_median"] / 1e6) for r in rs if r["system"] == s)
            plt.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=s)
        plt.xlabel("threads")
        plt.ylabel("Mops/s")
        plt.title("%s keys, YCSB %s, %s" % (kt, wl.upper(), dist))
        plt.legend(fontsize=7)
        plt.tight_layout()
        plt.savefig("%s/%s-%s-%s.png" % (outdir, kt, wl, dist))
        plt.close()


def main(argv):
    png = None
    files = []
    i = 1
    while i < len(argv):
        if argv[i] == "--png":
            png = argv[i + 1]
            i += 2
            continue
        files.append(argv[i])
        i += 1
    if not files:
        print(__doc__)
        return 2
    for f in files:
        with open(f) as fh:
            doc = json.load(fh)
        print("### %s (%s, %s cores, commit %s)\n" % (f, doc["machine"].get("cpu_model", "?"),
                                                     doc["machine"].get("cores", "?"), doc["commit"][:10]))
        table(doc)
        print()
        if png:
            plots(doc, png)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
