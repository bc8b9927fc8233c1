#!/usr/bin/env python3
"""Draws the figures of `duet_bench_epic` result files (one or more JSON files, merged).

usage: bench/batch/epic/plot.py OUT_PREFIX RESULT.json [RESULT.json ...]

OUT_PREFIX-sweep.png: for every workload run at several epoch sizes (--epoch-sizes), the
    artifact-formula throughput and the epoch's wall time against the epoch size, one line per
    system (log scales).
OUT_PREFIX-throughput.png: for every workload run at one epoch size, each system's wall-clock
    throughput, with bars from the epochs' min to max (log scale).
OUT_PREFIX-aborts.png: wall-clock throughput against the injected abort rate (--abort-rates).
A figure with nothing to draw is not written. Needs matplotlib (Debian: python3-matplotlib);
without it this says so and exits 0.
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "common"))
from plotting import start  # noqa: E402
from collections import defaultdict


def label(r):
    """The workload and its parameters, without the epoch size or abort rate."""
    if "warehouses" in r:
        return f"{r['workload']} w{r['warehouses']}"
    return f"{r['workload']} θ{r.get('theta', 0):g}{' split' if r.get('split') else ''}"


def load(paths):
    recs = []
    for path in paths:
        with open(path) as f:
            recs += json.load(f)["records"]
    return recs


def main():
    got = start(__doc__, sys.argv)
    if isinstance(got, int):
        return got
    plt, prefix, paths = got
    recs = load(paths)

    # Group: workload label -> system -> [(x, record)] by epoch size and by abort rate.
    by_size = defaultdict(lambda: defaultdict(dict))
    by_abort = defaultdict(lambda: defaultdict(dict))
    for r in recs:
        by_size[label(r)][r["system"]][r["epoch_txns"]] = r
        by_abort[label(r)][r["system"]][r.get("abort_rate", 0.0)] = r

    sweeps = {k: v for k, v in by_size.items() if any(len(xs) > 1 for xs in v.values())}
    if sweeps:
        fig, axes = plt.subplots(len(sweeps), 2, figsize=(11, 3.6 * len(sweeps)), squeeze=False)
        for row, (wl, systems) in enumerate(sorted(sweeps.items())):
            for system, pts in sorted(systems.items()):
                xs = sorted(pts)
                axes[row][0].plot(xs, [pts[x]["formula_ops_per_s"] / 1e6 for x in xs], marker="o", label=system)
                axes[row][1].plot(xs, [pts[x]["epoch_wall_ms_median"] for x in xs], marker="o", label=system)
            axes[row][0].set_title(f"{wl}: throughput (artifact formula)")
            axes[row][0].set_ylabel("M txn/s")
            axes[row][1].set_title(f"{wl}: epoch wall time")
            axes[row][1].set_ylabel("ms")
            for ax in axes[row]:
                ax.set_xscale("log")
                ax.set_yscale("log")
                ax.set_xlabel("epoch size (txns)")
                ax.grid(True, which="both", alpha=0.3)
            axes[row][0].legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(f"{prefix}-sweep.png", dpi=110)
        print(f"wrote {prefix}-sweep.png")

    singles = [(wl, systems) for wl, systems in sorted(by_size.items()) if wl not in sweeps
               and not any(len(by_abort[wl][s]) > 1 for s in systems)]
    if singles:
        fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(singles)), 4.5))
        names = sorted({s for _, systems in singles for s in systems})
        width = 0.8 / len(names)
        for i, name in enumerate(names):
            xs, ys, lo, hi = [], [], [], []
            for j, (_, systems) in enumerate(singles):
                if name not in systems:
                    continue
                r = next(iter(systems[name].values()))
                xs.append(j + i * width)
                ys.append(r["wall_ops_per_s"] / 1e6)
                lo.append(max(0.0, ys[-1] - r["wall_ops_per_s_min"] / 1e6))
                hi.append(max(0.0, r["wall_ops_per_s_max"] / 1e6 - ys[-1]))
            ax.bar(xs, ys, width, yerr=[lo, hi], capsize=2, label=name)
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(singles))])
        ax.set_xticklabels([wl for wl, _ in singles], rotation=20, fontsize=8)
        ax.set_yscale("log")
        ax.set_ylabel("M txn/s (wall clock, median of epochs 2..N)")
        ax.legend(fontsize=7, ncol=2)
        ax.grid(True, axis="y", which="both", alpha=0.3)
        fig.tight_layout()
        fig.savefig(f"{prefix}-throughput.png", dpi=110)
        print(f"wrote {prefix}-throughput.png")

    aborts = {k: v for k, v in by_abort.items() if any(len(xs) > 1 for xs in v.values())}
    if aborts:
        fig, axes = plt.subplots(1, len(aborts), figsize=(5.5 * len(aborts), 4), squeeze=False)
        for col, (wl, systems) in enumerate(sorted(aborts.items())):
            ax = axes[0][col]
            for system, pts in sorted(systems.items()):
                xs = sorted(pts)
                ax.plot([100 * x for x in xs], [pts[x]["wall_ops_per_s"] / 1e6 for x in xs], marker="o", label=system)
            ax.set_title(f"{wl}: injected aborts")
            ax.set_xlabel("txns aborting (%)")
            ax.set_ylabel("M txn/s (wall clock)")
            ax.set_yscale("log")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(f"{prefix}-aborts.png", dpi=110)
        print(f"wrote {prefix}-aborts.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
