#!/usr/bin/env python3
"""Summarizes a server-gpu.sh results folder: per workload and placement, the median and range
of wall-clock calls/s and of the p50 and p99 latency over its rounds (replay-W-P-rN.json), and
from each round's INFO line the epochs on the GPU. Prints a table; writes summary.json there."""
import json
import pathlib
import re
import statistics
import sys


def info_fields(path):
    """The batch_db1_epic INFO line of one run as a dict (values as text), or {} if absent."""
    try:
        line = path.read_text().strip()
    except OSError:
        return {}
    if ":" not in line:
        return {}
    return dict(kv.split("=", 1) for kv in line.split(":", 1)[1].split(",") if "=" in kv)


def main(out):
    out = pathlib.Path(out)
    cells = {}
    for f in sorted(out.glob("replay-*-r*.json")):
        m = re.fullmatch(r"replay-(\w+)-([\w-]+)-r(\d+)\.json", f.name)
        if not m:
            continue
        try:
            run = json.loads(f.read_text())
        except (OSError, ValueError):
            continue  # a run that died: its .err says why
        info = info_fields(out / f"info-{m[1]}-{m[2]}-r{m[3]}.txt")
        run["device_epochs"] = info.get("device_epochs")
        run["epochs"] = info.get("epochs")
        cells.setdefault((m[1], m[2]), []).append(run)
    summary = []
    print(f"{'workload':9} {'placement':9} {'rounds':>6} {'calls/s median [range]':>30} {'p50 ms':>8} {'p99 ms':>8}  GPU epochs")
    for (w, pl), runs in sorted(cells.items()):
        ops = [r["ops_per_s"] for r in runs]
        p50 = statistics.median(r["p50_us"] for r in runs) / 1e3
        p99 = statistics.median(r["p99_us"] for r in runs) / 1e3
        gpu = " ".join(f"{r['device_epochs']}/{r['epochs']}" for r in runs)
        summary.append({"workload": w, "placement": pl, "rounds": len(runs), "ops_per_s_median": statistics.median(ops),
                        "ops_per_s_min": min(ops), "ops_per_s_max": max(ops), "p50_ms_median": p50, "p99_ms_median": p99,
                        "device_epochs_per_round": [r["device_epochs"] for r in runs],
                        "epochs_per_round": [r["epochs"] for r in runs]})
        rng = f"{statistics.median(ops) / 1e6:.3f}M [{min(ops) / 1e6:.3f}-{max(ops) / 1e6:.3f}]"
        print(f"{w:9} {pl:9} {len(runs):>6} {rng:>30} {p50:8.1f} {p99:8.1f}  {gpu}")
    machine = (out / "machine.txt").read_text().splitlines() if (out / "machine.txt").exists() else []
    (out / "summary.json").write_text(json.dumps({"machine": machine, "cells": summary}, indent=1) + "\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "gpu-out")
