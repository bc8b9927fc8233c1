#!/usr/bin/env python3
"""Draws the figures of `duet_bench_txn` result files (one or more JSON files, merged; a later
file's row replaces an earlier one with the same experiment, configuration, system and threads).

usage: bench/txn/plot.py OUT_PREFIX RESULT.json [RESULT.json ...]

OUT_PREFIX-ycsbt.png: YCSB-T committed txn/s per configuration, one bar per system, bars from
the sets' min to max (log scale), one panel per thread count.
OUT_PREFIX-smallbank.png: the same for SmallBank.
OUT_PREFIX-snapshot.png: SNAPSHOT pairs/s per shape and system.
OUT_PREFIX-commit.png: disjoint writers' commits/s against threads, one line per system.
A figure whose experiment is absent from the files is not drawn. Needs matplotlib (Debian:
python3-matplotlib); without it this says so and exits 0.
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))
from plotting import run, save  # noqa: E402

SYSTEM_ORDER = ["duet", "rocksdb-pessimistic", "rocksdb-optimistic"]


def load(paths):
    """Rows keyed by (experiment, config, system, threads), later files winning."""
    rows = {}
    for path in paths:
        with open(path) as f:
            for r in json.load(f)["records"]:
                if "experiment" in r:
                    rows[(r["experiment"], r["config"], r["system"], r["threads"])] = r
    return list(rows.values())


def short(config):
    """A configuration label short enough for an axis: drops keys=..., shortens words."""
    parts = [p for p in config.split() if not p.startswith("keys=")]
    return " ".join(parts).replace("zipf0.99", "zipf").replace("uniform", "unif")


def systems_of(rows):
    seen = {r["system"] for r in rows}
    return [s for s in SYSTEM_ORDER if s in seen] + sorted(seen - set(SYSTEM_ORDER))


def bars(plt, rows, experiment, unit, path):
    """Grouped bars, one panel per thread count; returns whether a figure was written."""
    rows = [r for r in rows if r["experiment"] == experiment]
    if not rows:
        return False
    threads = sorted({r["threads"] for r in rows})
    systems = systems_of(rows)
    configs = []
    for r in rows:
        if r["config"] not in configs:
            configs.append(r["config"])
    width = max(6.0, 0.55 * len(configs) * max(1, len(systems)) / 2)
    fig, axes = plt.subplots(len(threads), 1, figsize=(width, 4.2 * len(threads)), squeeze=False)
    step = 0.8 / len(systems)
    for ax, thr in zip(axes[:, 0], threads):
        for k, system in enumerate(systems):
            xs, med, lo, hi = [], [], [], []
            for i, c in enumerate(configs):
                r = next((r for r in rows if (r["config"], r["system"], r["threads"]) == (c, system, thr)), None)
                if r is None:
                    continue
                xs.append(i - 0.4 + step * (k + 0.5))
                med.append(r["txn_per_s_median"])
                lo.append(r["txn_per_s_median"] - r["txn_per_s_min"])
                hi.append(r["txn_per_s_max"] - r["txn_per_s_median"])
            if xs:
                ax.bar(xs, med, width=step, yerr=[lo, hi], capsize=2, label=system)
        ax.set_yscale("log")
        ax.set_xticks(range(len(configs)))
        ax.set_xticklabels([short(c) for c in configs], rotation=35, ha="right", fontsize=7)
        ax.set_ylabel(f"{unit} (median, min-max)")
        ax.set_title(f"{experiment}, {thr} thread{'s' if thr != 1 else ''}")
        ax.grid(True, axis="y", which="both", alpha=0.3)
        ax.legend(fontsize=7)
    save(plt, fig, path)
    return True


def commit_lines(plt, rows, path):
    rows = [r for r in rows if r["experiment"] in ("commit", "disjoint") and "ts source" not in r["config"]]
    if not rows:
        return False
    fig, ax = plt.subplots(figsize=(6, 4.2))
    for system in systems_of(rows):
        rs = sorted((r for r in rows if r["system"] == system), key=lambda r: r["threads"])
        xs = [r["threads"] for r in rs]
        med = [r["txn_per_s_median"] for r in rs]
        lo = [r["txn_per_s_median"] - r["txn_per_s_min"] for r in rs]
        hi = [r["txn_per_s_max"] - r["txn_per_s_median"] for r in rs]
        ax.errorbar(xs, med, yerr=[lo, hi], marker="o", capsize=3, label=system)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("threads")
    ax.set_ylabel("commits/s (median, min-max)")
    ax.set_title("disjoint writers, one key per transaction")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    save(plt, fig, path)
    return True


def draw(plt, prefix, rows):
    wrote = []
    for experiment, unit in (("ycsbt", "txn/s"), ("smallbank", "txn/s"), ("snapshot", "pairs/s")):
        if bars(plt, rows, experiment, unit, f"{prefix}-{experiment}.png"):
            wrote.append(f"{prefix}-{experiment}.png")
    if commit_lines(plt, rows, prefix + "-commit.png"):
        wrote.append(prefix + "-commit.png")
    return wrote


def main():
    return run(__doc__, sys.argv, load, draw)


if __name__ == "__main__":
    sys.exit(main())
