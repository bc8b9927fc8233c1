#!/usr/bin/env python3
"""Tables and plots of duet_bench_hydralist result files.

usage: bench/hydralist/plot.py RESULT.json... [--png DIR]

Prints one Markdown table per file: a row per (keys, workload, distribution, threads), a column
per system with the median Mops/s and [min-max] over repetitions, and the ratio of Hydralist to
the best ordered peer (tbb, libcds, lit; libcuckoo is a hash map, shown but never counted).
A cell over fewer samples than the run's repetitions says so ("n=1": the one load of
--load-once, or a run cut by --child-timeout). Then the peak-RSS table and the runs that timed
out, when the file has them. --png DIR writes one throughput-vs-threads plot per (keys,
workload, distribution), if matplotlib is installed; for a file holding one thread count, one
bar chart per key type instead; for a key-set sweep (key type "str-sweep"), throughput against
the key count; for the factor analysis (systems f1-sorted .. f6-backoff), a table and a bar
chart of the cumulative steps, each step's ratio to the one before.
"""
import json
import sys
from collections import OrderedDict

PEERS = ("tbb", "libcds", "lit")
ORDER = ("hydralist", "tbb", "libcds", "lit", "libcuckoo")
STEPS = ("f1-sorted", "f2-fp", "f3-simd", "f4-async", "f5-2rep", "f6-backoff")
STEP_NAMES = {"f1-sorted": "sorted slots (sync layer, 1 replica, no backoff)", "f2-fp": "+ fingerprints (scalar)",
              "f3-simd": "+ SIMD", "f4-async": "+ async search layer", "f5-2rep": "+ 2 replicas",
              "f6-backoff": "+ backoff"}


def factor_table(doc):
    """The cumulative steps: median Mops/s [min-max] per workload, and each step over the one before."""
    recs = [r for r in doc["records"] if r["system"] in STEPS]
    if not recs:
        return
    wls = OrderedDict()
    for r in sorted(recs, key=lambda r: (r["key_type"], r["workload"], r["distribution"], r["threads"])):
        wls.setdefault((r["key_type"], r["workload"], r["distribution"], r["threads"]), {})[r["system"]] = r
    print("| step | " + " | ".join("%s %s" % (w, d if w not in ("load",) else "") for (_, w, d, _) in wls) + " |")
    print("|" + "---|" * (len(wls) + 1))
    prev = None
    for st in STEPS:
        cells = []
        for key, row in wls.items():
            r = row.get(st)
            if r is None:
                cells.append("-")
                continue
            c = "%.2f [%.2f-%.2f]" % (r["ops_per_s_median"] / 1e6, r["ops_per_s_min"] / 1e6, r["ops_per_s_max"] / 1e6)
            if prev and prev in row:
                c += " (%.2fx)" % (r["ops_per_s_median"] / row[prev]["ops_per_s_median"])
            cells.append(c)
        print("| %s | %s |" % (STEP_NAMES[st], " | ".join(cells)))
        prev = st
    print("\n(Mops/s, median [min-max]; in parentheses: this step over the one above)")


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
    """Writes PNGs under outdir (see the module's doc for which)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no plots", file=sys.stderr)
        return
    import os
    os.makedirs(outdir, exist_ok=True)
    recs = doc["records"]
    sweep = [r for r in recs if r["key_type"] == "str-sweep"]
    if sweep:
        plt.figure(figsize=(4.5, 3.2))
        for s in OrderedDict((r["system"], 1) for r in sweep):
            pts = sorted((r["keys"], r["ops_per_s_median"] / 1e6) for r in sweep if r["system"] == s)
            plt.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=s)
        plt.xscale("log")
        plt.xlabel("keys loaded")
        plt.ylabel("Mops/s")
        plt.title("YCSB B, Zipf, string keys, %d threads" % sweep[0]["threads"])
        plt.legend(fontsize=7)
        plt.tight_layout()
        plt.savefig("%s/sweep-b-zipf.png" % outdir)
        plt.close()
        recs = [r for r in recs if r["key_type"] != "str-sweep"]
    steps = [s for s in STEPS if any(r["system"] == s for r in recs)]
    if steps:
        wls = list(OrderedDict(((r["workload"], r["distribution"]), 1) for r in recs))
        plt.figure(figsize=(7, 3.4))
        width = 0.8 / (len(steps) + 1)
        for i, s in enumerate(steps + ["hydralist"]):
            ys = []
            for (w, d) in wls:
                m = [r["ops_per_s_median"] / 1e6 for r in recs if r["system"] == s and (r["workload"], r["distribution"]) == (w, d)]
                ys.append(m[0] if m else 0)
            plt.bar([j + i * width for j in range(len(wls))], ys, width, label=STEP_NAMES.get(s, s + " (default)"))
        plt.xticks([j + 0.4 for j in range(len(wls))], [("%s %s" % (w, d)).rstrip(" -") for (w, d) in wls], fontsize=7)
        plt.ylabel("Mops/s")
        plt.title("Factor analysis, %s keys, %d threads" % (recs[0]["key_type"], recs[0]["threads"]))
        plt.legend(fontsize=6)
        plt.tight_layout()
        plt.savefig("%s/factor.png" % outdir)
        plt.close()
        return
    if recs and len({r["threads"] for r in recs}) == 1:
        for kt in OrderedDict((r["key_type"], 1) for r in recs):
            rs = [r for r in recs if r["key_type"] == kt]
            wls = list(OrderedDict(((r["workload"], r["distribution"]), 1) for r in rs))
            systems = sorted(OrderedDict((r["system"], 1) for r in rs), key=lambda s: ORDER.index(s) if s in ORDER else 9)
            plt.figure(figsize=(7, 3.4))
            width = 0.8 / len(systems)
            for i, s in enumerate(systems):
                ys, lo, hi = [], [], []
                for (w, d) in wls:
                    m = [r for r in rs if r["system"] == s and (r["workload"], r["distribution"]) == (w, d)]
                    y = m[0]["ops_per_s_median"] / 1e6 if m else 0
                    ys.append(y)
                    lo.append(y - m[0]["ops_per_s_min"] / 1e6 if m else 0)
                    hi.append(m[0]["ops_per_s_max"] / 1e6 - y if m else 0)
                plt.bar([j + i * width for j in range(len(wls))], ys, width, yerr=[lo, hi], capsize=1.5, label=s)
            plt.xticks([j + 0.4 - width / 2 for j in range(len(wls))], [("%s %s" % (w, d)).rstrip(" -") for (w, d) in wls],
                       fontsize=6, rotation=30)
            plt.ylabel("Mops/s (median, min-max)")
            plt.title("%s keys, %d loaded, %d threads" % (kt, rs[0]["keys"], rs[0]["threads"]))
            plt.legend(fontsize=7)
            plt.tight_layout()
            plt.savefig("%s/%s-%dt.png" % (outdir, kt, rs[0]["threads"]))
            plt.close()
        return
    groups = OrderedDict()
    for r in recs:
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
        if any(r["system"] in STEPS for r in doc["records"]):
            factor_table(doc)
            print()
        if png:
            plots(doc, png)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
