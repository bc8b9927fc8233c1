#!/usr/bin/env python3
"""Tables and plots of duet_bench_mvrlu result files.

usage: bench/mvrlu/plot.py RESULT.json... [--markdown] [--png DIR]

--markdown prints one Markdown table per figure: a row per (structure, size, theta, update %,
threads), a column per system, each cell the median Mops/s (and, for systems that abort, the
median abort percentage in parentheses when above zero). --png DIR writes one throughput-vs-
threads plot per (figure, structure, size, theta, update %), or vs theta for figure 3.7.
"""
import json
import sys
from collections import OrderedDict, defaultdict


def load(paths):
    recs = []
    for p in paths:
        with open(p) as f:
            doc = json.load(f)
        for r in doc["records"]:
            if r.get("available", True) and "mops_median" in r:
                r["_machine"] = doc["machine"].get("cpu_model", "?")
                recs.append(r)
    return recs


def key_of(r):
    return (r["figure"], r["structure"], r["items"], r["buckets"], r["distribution"], r["theta"], r["update_percent"])


def markdown(recs):
    by_fig = OrderedDict()
    for r in recs:
        by_fig.setdefault(r["figure"], []).append(r)
    for fig, rs in by_fig.items():
        systems = list(OrderedDict((r["system"], 1) for r in rs))
        rows = OrderedDict()
        for r in rs:
            rows.setdefault(key_of(r)[1:] + (r["threads"],), {})[r["system"]] = r
        print(f"\nFigure {fig} (median Mops/s; abort % in parentheses where above 0.05)\n")
        print("| set | items/buckets | dist | θ | upd % | thr | " + " | ".join(systems) + " |")
        print("|---" * (6 + len(systems)) + "|")
        for k, cells in rows.items():
            structure, items, buckets, dist, theta, upd, thr = k
            size = f"{items}" if structure != "hash" else f"{items}/{buckets}"
            out = []
            for s in systems:
                r = cells.get(s)
                if r is None:
                    out.append("—")
                    continue
                c = f"{r['mops_median']:.3g}"
                if r.get("abort_percent_median", 0) > 0.05:
                    c += f" ({r['abort_percent_median']:.1f}%)"
                if not r.get("ok", True):
                    c += " ERR"
                out.append(c)
            print(f"| {structure} | {size} | {dist} | {theta:g} | {upd:g} | {thr} | " + " | ".join(out) + " |")


def plots(recs, outdir):
    import os
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    os.makedirs(outdir, exist_ok=True)
    groups = defaultdict(list)
    for r in recs:
        k = key_of(r)
        if r["figure"] == "3.7":
            k = k[:5] + (None, k[6])
        groups[k].append(r)
    for k, rs in groups.items():
        fig, structure, items, buckets, dist, theta, upd = k
        xkey = "theta" if fig == "3.7" else "threads"
        plt.figure(figsize=(5, 3.5))
        series = defaultdict(list)
        for r in rs:
            series[r["system"]].append((r[xkey], r["mops_median"], r["mops_min"], r["mops_max"]))
        for s, pts in series.items():
            pts.sort()
            xs = [p[0] for p in pts]
            plt.errorbar(xs, [p[1] for p in pts], yerr=[[p[1] - p[2] for p in pts], [p[3] - p[1] for p in pts]],
                         marker="o", capsize=2, label=s)
        plt.xlabel(xkey)
        plt.ylabel("Mops/s")
        t = f"fig {fig}: {structure} {items}" + (f"/{buckets}" if structure == "hash" else "")
        t += f", {dist}" + (f" θ={theta:g}" if theta else "") + f", {upd:g}% upd"
        plt.title(t, fontsize=9)
        plt.legend(fontsize=7)
        plt.tight_layout()
        name = f"mvrlu-{fig}-{structure}-{items}-{buckets}-{dist}-{theta}-{upd:g}.png".replace(" ", "")
        plt.savefig(os.path.join(outdir, name), dpi=90)
        plt.close()


def main(argv):
    files = [a for a in argv if not a.startswith("--")]
    recs = load([a for a in files if a.endswith(".json")])
    if "--markdown" in argv or "--png" not in argv:
        markdown(recs)
    if "--png" in argv:
        plots(recs, argv[argv.index("--png") + 1])


if __name__ == "__main__":
    main(sys.argv[1:])
