#!/usr/bin/env python3
"""Draws the figures of `duet bench transfer` result files (one or more JSON files, merged).

usage: bench/batch/plot.py OUT_PREFIX RESULT.json [RESULT.json ...]

OUT_PREFIX-throughput.png: median Mtx/s against the Zipf theta, one panel per (profile, block
size), one line per mode, bars from the repetitions' min to max (log scale).
OUT_PREFIX-aborts.png: the fast-path failure rate, re-run share and final abort rate against
theta (Fig. 4.7's shape), one panel per profile, from the first mode that ran the fast path.
Needs matplotlib (Debian: python3-matplotlib); without it this says so and exits 0.
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))
from plotting import start  # noqa: E402


def main():
    got = start(__doc__, sys.argv)
    if isinstance(got, int):
        return got
    plt, prefix, paths = got
    runs = []
    for path in paths:
        with open(path) as f:
            runs += [r for r in json.load(f)["records"] if r.get("kind") == "run"]
    if not runs:
        print("no run records")
        return 1
    panels = sorted({(r["profile"], r["block"]) for r in runs})
    fig, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 4.5), squeeze=False)
    for ax, (prof, block) in zip(axes[0], panels):
        modes = []
        for r in runs:
            if (r["profile"], r["block"]) == (prof, block) and r["mode"] not in modes:
                modes.append(r["mode"])
        for m in modes:
            rs = sorted((r for r in runs if (r["profile"], r["block"], r["mode"]) == (prof, block, m)),
                        key=lambda r: r["theta"])
            xs = [r["theta"] for r in rs]
            med = [r["mtx_per_s"]["median"] for r in rs]
            lo = [r["mtx_per_s"]["median"] - r["mtx_per_s"]["min"] for r in rs]
            hi = [r["mtx_per_s"]["max"] - r["mtx_per_s"]["median"] for r in rs]
            ax.errorbar(xs, med, yerr=[lo, hi], marker="o", capsize=3, label=m)
        ax.set_yscale("log")
        ax.set_xlabel("Zipf theta")
        ax.set_ylabel("Mtx/s (median, min-max)")
        ax.set_title(f"{prof}, blocks of {block}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(prefix + "-throughput.png", dpi=110)
    profiles = sorted({r["profile"] for r in runs})
    fig, axes = plt.subplots(1, len(profiles), figsize=(6 * len(profiles), 4), squeeze=False)
    for ax, prof in zip(axes[0], profiles):
        fast = [r for r in runs if r["profile"] == prof and r["mode"].startswith("commutative") and r["block"] == 1000]
        by_theta = {}
        for r in fast:
            by_theta.setdefault(r["theta"], r)
        xs = sorted(by_theta)
        for key, label in (("fast_path_failure_rate", "fast-path failures"), ("rerun_share", "re-run share"),
                           ("final_abort_rate", "final aborts")):
            ax.plot(xs, [100 * by_theta[x][key] for x in xs], marker="o", label=label)
        ax.set_xlabel("Zipf theta")
        ax.set_ylabel("% of transfers")
        ax.set_title(f"{prof}, 1000-transfer blocks")
        ax.grid(True, alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(prefix + "-aborts.png", dpi=110)
    print("wrote", prefix + "-throughput.png", prefix + "-aborts.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
