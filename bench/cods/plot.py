#!/usr/bin/env python3
"""Draws the figures of `duet_bench_cods` result files (one or more JSON files, merged as
report.py merges them: a later file's record replaces an earlier one of the same point).

usage: bench/cods/plot.py [--figures F,...] OUT_PREFIX RESULT.json [RESULT.json ...]

OUT_PREFIX-{list,hash,tree}-k.png: the CPU K sweeps, M ops/s (median, bars from the repeats' min
to max) against K, one line per regime (fully atomic / elementwise) and thread count, one panel
per mix.
OUT_PREFIX-{list,hash,tree}.png: the CPU peer comparison at the figure's largest thread count,
one bar per system at each mix (peers hatched).
OUT_PREFIX-gpu-{list,hash,tree}.png: the GPU rows (processor gpu) as bars per mix, with the
random 8-byte-load limits (the gpu-limit records) as horizontal lines.
An axis is logarithmic where its values span more than 20 times.
--figures draws only the named ones (list-k, hash, gpu-tree, ...; default all).
Each title names the shape, the machine, and the source files with their commits. A figure whose
records are absent is skipped with a line on stdout. Needs matplotlib (Debian:
python3-matplotlib); without it this says so and exits 0.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "common")]
import plotting  # noqa: E402
import report  # noqa: E402  (bench/cods/report.py: the records' loading and keys)

REPO = os.path.dirname(os.path.dirname(HERE))
REGIMES = {"fully-atomic": "fully atomic", "elementwise": "elementwise"}


def load(paths):
    """report.load's records, each tagged with its file's source line (file, commit, machine)."""
    recs = {}
    for p in paths:
        with open(p) as f:
            doc = json.load(f)
        m, dev = doc.get("machine", {}), doc.get("device", "cpu")
        host = f"{m.get('cores', '?')}-core {m.get('cpu_model', '?')}, {m.get('memory_bytes', 0) / 2**30:.0f} GiB"
        gpu = f"GPU: {doc.get('config', {}).get('gpu', dev)} (host {host})"
        src = f"{os.path.basename(p)} ({doc.get('commit', '?')[:7]})"
        for key, r in report.load([p]).items():
            r["_machine"] = gpu if r.get("processor") == "gpu" else f"CPU: {host}"
            r["_src"] = src
            recs[key] = r
    return list(recs.values())


def mops(r):
    s = r["ops_per_s"]
    return s["median"] / 1e6, s["median"] / 1e6 - s["min"] / 1e6, s["max"] / 1e6 - s["median"] / 1e6


def title(rows, what):
    """`what`, the shape (range, keys, buckets), then the machine(s) and source files."""
    def vals(field):
        return " / ".join(f"{v:,}" for v in sorted({r[field] for r in rows if r.get(field)}))
    shape = f"range {vals('range')}, {vals('keys')} keys"
    if any(r.get("buckets", 1) > 1 for r in rows):
        shape += f", {vals('buckets')} buckets"
    machines = " | ".join(sorted({r["_machine"] for r in rows}))
    srcs = ", ".join(sorted({r["_src"] for r in rows}))
    return f"{what}: {shape}\n{machines}\n{srcs}"


def log_if_spread(ax, values, spread=20):
    """Log scale (ticks as plain numbers) when the values span more than `spread` times."""
    if values and min(values) > 0 and max(values) / min(values) > spread:
        from matplotlib import ticker  # here: the script exits 0 earlier without matplotlib
        ax.set_yscale("log")
        # labels at 1, 2 and 5 times each power of ten, or at the powers alone past 3 decades
        subs = (1.0,) if max(values) / min(values) > 1000 else (1.0, 2.0, 5.0)
        ax.yaxis.set_major_locator(ticker.LogLocator(subs=subs))
        plain = ticker.FuncFormatter(lambda v, _: f"{v:,g}")
        ax.yaxis.set_major_formatter(plain)
        ax.yaxis.set_minor_formatter(ticker.NullFormatter())


def sweep(plt, rows, name, path):
    rows = [r for r in rows if r["name"] == name and r.get("processor") == "cpu"]
    if not rows:
        return False
    mixes = sorted({r["contains_percent"] for r in rows})
    fig, axes = plt.subplots(1, len(mixes), figsize=(7.5 * len(mixes), 5), squeeze=False)
    for ax, mix in zip(axes[0], mixes):
        here = [r for r in rows if r["contains_percent"] == mix]
        for reg in REGIMES:
            for thr in sorted({r["threads"] for r in here}):
                line = sorted((r for r in here if r["regime"] == reg and r["threads"] == thr), key=lambda r: r["k"])
                if not line:
                    continue
                med, lo, hi = zip(*(mops(r) for r in line))
                ax.errorbar([r["k"] for r in line], med, yerr=[lo, hi], marker="o", capsize=3,
                            linestyle="-" if reg == "fully-atomic" else "--",
                            label=f"{REGIMES[reg]}, {thr} thread" + ("" if thr == 1 else "s"))
        log_if_spread(ax, [mops(r)[0] for r in here])
        ax.set_xticks(sorted({r["k"] for r in here}))
        ax.set_xlabel("K (keys per node)")
        ax.set_ylabel("M ops/s (median, min-max)")
        ax.set_title(title(here, f"{name} sweep, contains {mix:g}%"), fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    plotting.save(plt, fig, path)
    return True


def bars(ax, rows, limits=()):
    """Grouped bars: one group per mix, one bar per system (first-seen order; peers hatched),
    log scale where the bars (and limits) span more than 20 times."""
    mixes = sorted({r["contains_percent"] for r in rows})
    systems = list(dict.fromkeys(r["system"] for r in rows))
    step = 0.8 / len(systems)
    for i, s in enumerate(systems):
        pts = [(mixes.index(r["contains_percent"]), mops(r)) for r in rows if r["system"] == s]
        xs = [x - 0.4 + (i + 0.5) * step for x, _ in pts]
        ax.bar(xs, [m[0] for _, m in pts], step, yerr=[[m[1] for _, m in pts], [m[2] for _, m in pts]],
               capsize=2, label=s, hatch="" if s.startswith("cods-") else "//")
    for j, lim in enumerate(limits):
        ax.axhline(mops(lim)[0], color="black", linestyle=["-", ":"][j % 2],
                   label=f"{lim['system']} (limit): {mops(lim)[0]:,.0f}")
    log_if_spread(ax, [mops(r)[0] for r in list(rows) + list(limits)])
    ax.set_xticks(range(len(mixes)))
    ax.set_xticklabels([f"{m:g}% contains" for m in mixes])
    ax.set_ylabel("M ops/s (median, min-max)")
    ax.grid(True, axis="y", which="both", alpha=0.3)
    ax.legend(fontsize=7, bbox_to_anchor=(1.01, 1), loc="upper left")


def peers(plt, rows, name, path):
    rows = [r for r in rows if r["name"] == name and r.get("processor") == "cpu"]
    if not rows:
        return False
    top = max(r["threads"] for r in rows)
    rows = [r for r in rows if r["threads"] == top]
    fig, ax = plt.subplots(figsize=(11, 5))
    bars(ax, rows)
    ax.set_title(title(rows, f"{name}, {top} thread" + ("" if top == 1 else "s")), fontsize=9)
    plotting.save(plt, fig, path)
    return True


def gpu(plt, rows, structure, path):
    here = [r for r in rows if r["name"] == "gpu" and r.get("processor") == "gpu" and r.get("structure") == structure]
    if not here:
        return False
    limits = [r for r in rows if r["name"] == "gpu-limit"]
    fig, ax = plt.subplots(figsize=(11, 5))
    bars(ax, here, limits)
    ax.set_title(title(here, f"GPU {structure}, one batch of {here[0].get('batch_ops', 0):,} requests"), fontsize=9)
    plotting.save(plt, fig, path)
    return True


def draw(plt, prefix, rows, only=None):
    wrote = []
    jobs = [(f"{s}-k", sweep, f"{s}-k") for s in ("list", "hash", "tree")]
    jobs += [(s, peers, s) for s in ("list", "hash", "tree")]
    jobs += [(f"gpu-{s}", gpu, s) for s in ("list", "hash", "tree")]
    for suffix, fn, arg in jobs:
        if only is not None and suffix not in only:
            continue
        path = f"{prefix}-{suffix}.png"
        if fn(plt, rows, arg, path):
            full = os.path.abspath(path)  # printed relative to the repository when inside it
            wrote.append(os.path.relpath(full, REPO) if full.startswith(REPO + os.sep) else full)
        else:
            print(f"skipped {suffix}: no such records")
    return wrote


def main(argv):
    only = None
    if "--figures" in argv[:-1]:
        i = argv.index("--figures")
        only, argv = set(argv[i + 1].split(",")), argv[:i] + argv[i + 2:]
    return plotting.run(__doc__, argv, load, lambda plt, prefix, rows: draw(plt, prefix, rows, only))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
