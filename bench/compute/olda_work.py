"""What the two OLDA drivers share (docs/compute.md, "OLDA"): the work exported by
`duet_bench_olda --export DIR` (users, payments, model), the run of one set of client processes,
the summary of repeated sets, and the results file.

Both drivers (olda_server.py: Duet through the server; olda_fedb.py: the FeDB-style peer) run the
same users, payments and model, so their figures compare one to one.
"""

import datetime
import json
import multiprocessing as mp
import os
import platform
import socket
import statistics
import subprocess
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]


def load_work(folder):
    """Returns (users, payments) from an export folder: users as (user, home, [(lat, lon), ...]),
    payments as (user, lat, lon, id). Raises OSError when a file is missing."""
    work = Path(folder)
    users = []
    for line in (work / "users.txt").read_text().split("\n"):
        if line:
            f = line.split()
            pts = [float(v) for v in f[2:]]
            users.append((int(f[0]), int(f[1]), list(zip(pts[0::2], pts[1::2]))))
    payments = []
    for line in (work / "payments.txt").read_text().split("\n"):
        if line:
            f = line.split()
            payments.append((int(f[0]), float(f[1]), float(f[2]), int(f[3])))
    return users, payments


def load_model(path):
    """Returns the model's layers as (weights[n_out][n_in], bias[n_out], activation) with
    activation 1 = ReLU, 2 = sigmoid, from the text file `--export` writes."""
    lines = Path(path).read_text().split("\n")
    layers = []
    i = 0
    while i + 2 < len(lines) and lines[i].strip():
        n_in, n_out, act = (int(x) for x in lines[i].split())
        w = np.array(lines[i + 1].split(), dtype=np.float32).reshape(n_out, n_in)
        b = np.array(lines[i + 2].split(), dtype=np.float32)
        layers.append((w, b, act))
        i += 3
    return layers


def run_clients(target, nclients, args):
    """Starts `nclients` processes running target(k, nclients, *args, start, out_q), all released
    at the same instant, and returns what each put on out_q. Each client must put one tuple whose
    first two fields are its elapsed seconds and its per-payment latencies in microseconds."""
    out_q = mp.Queue()
    start = time.time() + 0.5
    ps = [mp.Process(target=target, args=(k, nclients, *args, start, out_q)) for k in range(nclients)]
    for p in ps:
        p.start()
    res = [out_q.get(timeout=600) for _ in ps]
    for p in ps:
        p.join()
    return res


def set_summary(res, payments):
    """The wall-clock rate and per-payment latency percentiles of one set of clients."""
    secs = max(x[0] for x in res)
    lat = sorted(v for x in res for v in x[1])
    return {"ops_per_s": payments / secs, "p50_us": lat[len(lat) // 2],
            "p99_us": lat[min(len(lat) - 1, len(lat) * 99 // 100)]}


def median_range(runs, key):
    """(median, min, max) of one field over the repeated sets."""
    v = [x[key] for x in runs]
    return statistics.median(v), min(v), max(v)


def gpu_name():
    """The first GPU's name from nvidia-smi, or None where there is none."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=20)
        if out.returncode != 0:
            return None
        return out.stdout.strip().split("\n")[0] or None
    except (OSError, subprocess.SubprocessError):
        return None


def write_results(out, prefix, benchmark, config, records, device="cpu"):
    """Writes the results file (machine with its GPU if any, device: the processor the measured
    system computed on, commit, date, config, records) to `out`, or to
    bench/results/compute-olda/<prefix>-<date>.json, and returns its path. The commit is
    $DUET_COMMIT or the repository's HEAD."""
    try:
        commit = os.environ.get("DUET_COMMIT") or subprocess.check_output(
            ["git", "-C", str(REPO), "rev-parse", "HEAD"], text=True).strip()
    except Exception:
        commit = "unknown"
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")),
               platform.processor())
    doc = {
        "machine": {"hostname": socket.gethostname(), "cores": os.cpu_count(), "memory_bytes": mem, "cpu_model": cpu,
                    "gpu": gpu_name()},
        "device": device, "commit": commit,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "benchmark": benchmark, "config": config, "records": records,
    }
    path = Path(out) if out else REPO / "bench/results/compute-olda" / \
        f"{prefix}-{doc['date'].replace(':', '').replace('-', '')}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2) + "\n")
    full = path.resolve()
    return full.relative_to(REPO) if full.is_relative_to(REPO) else path
