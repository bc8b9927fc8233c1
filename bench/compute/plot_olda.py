#!/usr/bin/env python3
"""Draws OLDA figures from `duet bench olda` (duet_bench_olda) and olda_server.py result files
(one or more JSON files, merged).

usage: bench/compute/plot_olda.py OUT_PREFIX RESULT.json [RESULT.json ...]

OUT_PREFIX-threads.png: payments/s (median, bars min-max) and p99 latency against payment
threads, one line per system and inference mode (and per user count when the files hold
several), when the files hold more than one thread count.
OUT_PREFIX-users.png: the same against the user count, when they hold more than one.
Only the `olda_users` records count (one transaction per payment, nothing extra snapshotted).
Needs matplotlib (Debian: python3-matplotlib); without it this says so and exits 0.
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))
from plotting import run, save  # noqa: E402


def load(paths):
    rows = []
    for path in paths:
        with open(path) as f:
            rows += [r for r in json.load(f)["records"] if r.get("name") == "olda_users"]
    return rows


def figure(plt, rows, x_key, x_label, path, log_x):
    # One line per system and mode, and per value of the other axis's key when it varies.
    other = "users" if x_key == "threads" else "threads"
    split = len({r[other] for r in rows}) > 1

    def line_label(r):
        return f"{r['system']} {r.get('op', '')}" + (f" {other}={r[other]}" if split else "")

    fig, (ax, lat) = plt.subplots(1, 2, figsize=(12, 4.5))
    for label in sorted({line_label(r) for r in rows}):
        rs = sorted((r for r in rows if line_label(r) == label), key=lambda r: r[x_key])
        xs = [r[x_key] for r in rs]
        med = [r["ops_per_s"] for r in rs]
        lo = [r["ops_per_s"] - r.get("ops_per_s_min", r["ops_per_s"]) for r in rs]
        hi = [r.get("ops_per_s_max", r["ops_per_s"]) - r["ops_per_s"] for r in rs]
        ax.errorbar(xs, med, yerr=[lo, hi], marker="o", capsize=3, label=label)
        lat.plot(xs, [r["p99_us"] for r in rs], marker="o", label=label)
    for a in (ax, lat):
        if log_x:
            a.set_xscale("log")
        a.set_xlabel(x_label)
        a.grid(True, which="both", alpha=0.3)
        a.legend(fontsize=7)
    ax.set_ylabel("payments/s (median, min-max)")
    lat.set_ylabel("p99 latency per payment (µs)")
    lat.set_yscale("log")
    fig.suptitle("OLDA: one transaction per payment")
    save(plt, fig, path)


def draw(plt, prefix, rows):
    wrote = []
    if len({r["threads"] for r in rows}) > 1:
        figure(plt, rows, "threads", "payment threads", prefix + "-threads.png", False)
        wrote.append(prefix + "-threads.png")
    if len({r["users"] for r in rows}) > 1:
        figure(plt, rows, "users", "users", prefix + "-users.png", True)
        wrote.append(prefix + "-users.png")
    return wrote


def main():
    return run(__doc__, sys.argv, load, draw)


if __name__ == "__main__":
    sys.exit(main())
