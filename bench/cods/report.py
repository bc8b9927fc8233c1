#!/usr/bin/env python3
"""Tables of duet_bench_cods result files, and the issue's targets checked against them.

usage: bench/cods/report.py RESULT.json... [--targets]

Prints one Markdown table per (figure, structure, mix, threads) group: a row per system with the
median ops/s (millions) and the range over the repeats. With --targets, prints the issue-18 target
ratios computed from the records (the later file wins where two files measured the same point).
"""
import json
import sys
from collections import OrderedDict


def load(paths):
    recs = OrderedDict()
    for p in paths:
        with open(p) as f:
            doc = json.load(f)
        for r in doc["records"]:
            if not r.get("available", True) or "ops_per_s" not in r or not r.get("ok", True):
                continue
            key = (r["name"], r.get("structure", ""), r.get("contains_percent", 100), r.get("threads", 0), r["system"])
            recs[key] = r
    return recs


def mops(recs, name, structure, mix, threads, system):
    r = recs.get((name, structure, mix, threads, system))
    return r["ops_per_s"]["median"] / 1e6 if r else None


def tables(recs):
    groups = OrderedDict()
    for (name, st, mix, thr, sysname), r in recs.items():
        groups.setdefault((name, st, mix, thr), []).append(r)
    for (name, st, mix, thr), rs in groups.items():
        print(f"\n{name}, {st}, contains {mix:g}%" + (f", {thr} threads" if thr else "") + "\n")
        print("| system | M ops/s (median) | range |")
        print("|---|---|---|")
        for r in rs:
            s = r["ops_per_s"]
            print(f"| {r['system']} | {s['median']/1e6:.2f} | {s['min']/1e6:.2f}-{s['max']/1e6:.2f} |")


def ratio(a, b):
    return f"{a / b:.2f}x ({(a / b - 1) * 100:+.0f}%)" if a and b else "n/a"


def targets(recs):
    top = max((k[3] for k in recs if k[0] in ("list", "hash", "tree")), default=1)
    print("\n| target | measured | threads / mix |")
    print("|---|---|---|")
    for thr in sorted({1, top}):
        # list: tuned K over K = 1 (each regime's best K in the sweep).
        for reg in ("fa", "ew"):
            ks = {k: mops(recs, "list-k", "list", 90, thr, f"cods-list-{reg}-k{k}") for k in range(1, 17)}
            ks = {k: v for k, v in ks.items() if v}
            if ks and ks.get(1):
                best = max(ks, key=ks.get)
                print(f"| list, tuned K ({best}) over K=1, {reg} (>= 42-79%) | {ratio(ks[best], ks[1])} | {thr} / 90 |")
            h2, h8 = mops(recs, "hash-k", "hash", 90, thr, f"cods-hash-{reg}-k2"), mops(recs, "hash-k", "hash", 90, thr, f"cods-hash-{reg}-k8")
            print(f"| hash set K 2 -> 8, {reg} (>= 4-19%) | {ratio(h8, h2)} | {thr} / 90 |")
            t1, t2, t4 = (mops(recs, "tree-k", "tree", 90, thr, f"cods-tree-{reg}-k{k}") for k in (1, 2, 4))
            print(f"| tree K 1 -> 2, {reg} (>= 49-61%) | {ratio(t2, t1)} | {thr} / 90 |")
            print(f"| tree K 2 -> 4, {reg} (>= 22-30%) | {ratio(t4, t2)} | {thr} / 90 |")
    for mix in (80, 90, 95, 100):
        for st, peers in (("hash", ("cds-michael-hash", "cds-split-list", "tbb-hash-map")),
                          ("tree", ("cds-skip-list", "tbb-set", "lit"))):
            fig = st
            cods = {s: v for (n, s2, m, t, s), r in recs.items()
                    if n in (fig, fig + "-k") and s2 == st and m == mix and t == top and s.startswith("cods-")
                    for v in [r["ops_per_s"]["median"] / 1e6]}
            peer = {p: mops(recs, fig, st, mix, top, p) for p in peers}
            peer = {p: v for p, v in peer.items() if v}
            if cods and peer:
                bc, bp = max(cods, key=cods.get), max(peer, key=peer.get)
                print(f"| {st} at {top} threads, best CODS ({bc}) over best peer ({bp}) (>= 1.5x) | {ratio(cods[bc], peer[bp])} | {top} / {mix} |")
    # GPU targets.
    def g(st, mix, sysname):
        return mops(recs, "gpu", st, mix, 0, sysname)
    lim = mops(recs, "gpu-limit", "", 100, 0, "random-8B-loads-4GiB")
    for mix in (80, 90, 95, 100):
        a, b = g("list", mix, "cods-gpu-list-fa-k14-g16"), g("list", mix, "cods-gpu-list-fa-k30-g32")
        print(f"| GPU list, fully atomic half warp over full warp (>= 14-27% at 80-95%) | {ratio(a, b)} | gpu / {mix} |")
    for mix in (80, 90, 95, 100):
        for k, gr in ((30, 32), (14, 16)):
            v = g("hash", mix, f"cods-gpu-hash-fa-k{k}-g{gr}")
            ls = g("hash", mix, "lslab-gpu-w8")
            if v:
                extra = f", {v / lim:.3f} of the random-load limit" if lim else ""
                print(f"| GPU hash set K={k} G={gr} (>= 5,000 M ops/s at 90%) | {v:.0f} M ops/s{extra}; L-Slab {ls:.0f} | gpu / {mix} |")
        for reg in ("fa", "ew"):
            v = g("tree", mix, f"cods-gpu-tree-{reg}-k14-g16")
            lt = g("tree", mix, "lit-gpu")
            if v:
                print(f"| GPU B-link tree K=14 G=16 {reg}, 10^7 keys | {v:.0f} M ops/s; GPU LIT {lt:.0f} | gpu / {mix} |")


def main(argv):
    paths = [a for a in argv if not a.startswith("--")]
    if not paths:
        print(__doc__)
        return 2
    recs = load(paths)
    if "--targets" in argv:
        targets(recs)
    else:
        tables(recs)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
