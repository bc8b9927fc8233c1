#!/usr/bin/env python3
"""Merges duet_bench_hydralist result files of one run that differ only in --systems (one
invocation per system, as bench/hydralist/gpu-run.sh makes them) into one result file.

usage: bench/hydralist/merge.py OUT.json IN.json...

Every input must have the same key types, key counts, operation counts, thread counts,
repetitions, workloads, distributions and seed (so that the work was identical); otherwise the
merge stops with an error naming the field. Records, peak-RSS entries and timed-out runs are
concatenated; config.systems becomes the union in input order; config.command lists every
input's command; date is the earliest.
"""
import json
import sys

SAME = ("keys_int", "keys_str", "ops_per_workload", "ops_per_workload_e", "threads", "reps", "workloads",
        "distributions", "seed", "load_once", "sweep")


def main(argv):
    if len(argv) < 3:
        print(__doc__)
        return 2
    docs = []
    for path in argv[2:]:
        with open(path) as f:
            docs.append((path, json.load(f)))
    first_path, out = docs[0]
    out = json.loads(json.dumps(out))
    commands = [out["config"].get("command", "")]
    for path, d in docs[1:]:
        for k in SAME:
            if d["config"].get(k) != out["config"].get(k):
                print("merge.py: %s and %s differ in config.%s" % (first_path, path, k), file=sys.stderr)
                return 1
        if d.get("commit") != out.get("commit"):
            print("merge.py: %s and %s come from different commits" % (first_path, path), file=sys.stderr)
            return 1
        out["records"] += d["records"]
        out["peak_rss"] = out.get("peak_rss", []) + d.get("peak_rss", [])
        out["timed_out"] = out.get("timed_out", []) + d.get("timed_out", [])
        for s in d["config"].get("systems", []):
            if s not in out["config"]["systems"]:
                out["config"]["systems"].append(s)
        out["config"]["key_types"] = sorted(set(out["config"].get("key_types", [])) |
                                            set(d["config"].get("key_types", [])))
        commands.append(d["config"].get("command", ""))
        out["date"] = min(out["date"], d["date"])
    out["config"]["command"] = commands
    with open(argv[1], "w") as f:
        json.dump(out, f, indent=2)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
