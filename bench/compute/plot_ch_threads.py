#!/usr/bin/env python3
"""CH-benCHmark against the worker threads, from `duet bench ch` result files (Fig. 3.5's axes).

usage: bench/compute/plot_ch_threads.py OUT_PREFIX RESULT.json...

Writes OUT_PREFIX-<mix>.png per mix found in the files: txn/s (median, with the [min, max] range
over runs as error bars) and the abort rate against the worker threads, one line per system, and
queries/s on a second panel. Prints the same figures as a Markdown table. Without matplotlib
(Debian: python3-matplotlib) it prints the tables only.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import plotting  # noqa: E402


def load(paths):
    """{mix: {system: [record, ...] sorted by threads}} over every file, and the commits seen."""
    out, commits = {}, set()
    for p in paths:
        with open(p) as f:
            doc = json.load(f)
        commits.add(doc.get("commit", "?")[:7])
        for r in doc["records"]:
            out.setdefault(r["mix"], {}).setdefault(r["system"], []).append(r)
    for systems in out.values():
        for recs in systems.values():
            recs.sort(key=lambda r: r["threads"])
    return out, sorted(commits)


def med(r, key):
    """A record's figure: {median, min, max} in the files, a bare number in older ones."""
    v = r[key]
    return v["median"] if isinstance(v, dict) else v


def spread(r):
    v = r["txn_per_s"]
    return (v["min"], v["max"]) if isinstance(v, dict) else (v, v)


def table(mix, systems, commits):
    print(f"\nCH {mix} mix, commit {', '.join(commits)}: txn/s median [min, max], abort rate, queries/s\n")
    print("| system | workers | txn/s | abort | queries/s |")
    print("|---|---|---|---|---|")
    for sys_name, recs in systems.items():
        for r in recs:
            lo, hi = spread(r)
            print(f"| {sys_name} | {r['threads']} | {med(r, 'txn_per_s'):,.0f} [{lo:,.0f}, {hi:,.0f}] | "
                  f"{100 * med(r, 'abort_rate'):.1f}% | {med(r, 'queries_per_s'):,.1f} |")


def main(argv):
    if len(argv) < 3:
        print(__doc__)
        return 2
    data, commits = load(argv[2:])
    for mix, systems in data.items():
        table(mix, systems, commits)
    plt = plotting.pyplot()
    if plt is None:
        return 0
    for mix, systems in data.items():
        fig, (ax, aq) = plt.subplots(1, 2, figsize=(11, 4.2))
        for sys_name, recs in systems.items():
            x = [r["threads"] for r in recs]
            y = [med(r, "txn_per_s") for r in recs]
            lo = [y[i] - spread(r)[0] for i, r in enumerate(recs)]
            hi = [spread(r)[1] - y[i] for i, r in enumerate(recs)]
            ax.errorbar(x, y, yerr=[lo, hi], marker="o", capsize=3, label=sys_name)
            aq.plot(x, [med(r, "queries_per_s") for r in recs], marker="o", label=sys_name)
        ax.set_xlabel("worker threads")
        ax.set_ylabel("transactions/s (median, [min, max])")
        ax.set_title(f"CH {mix} mix: OLTP")
        ax.set_ylim(bottom=0)
        ax.legend()
        aq.set_xlabel("worker threads")
        aq.set_ylabel("queries/s (one query thread)")
        aq.set_title("queries beside the workers")
        aq.set_ylim(bottom=0)
        fig.suptitle(f"commit {', '.join(commits)}", fontsize=8)
        fig.tight_layout()
        out = f"{argv[1]}-{mix}.png"
        fig.savefig(out, dpi=110)
        print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
