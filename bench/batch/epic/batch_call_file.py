#!/usr/bin/env python3
"""Writes a file of BATCH.CALL commands for duet_bench_replay (bench/net/replay.cpp): first one
SELECT of the batch database per connection (command i goes to connection i mod C), then TXNS
calls of the Mix read-modify-write (procedure 0) over table `t`: each reads READS keys and writes
the first WRITES of them, keys drawn uniformly from RECORDS. With --hot, every txn's first write
is record 0, a chain of versions through one record (the contended case). Same seed, same file.

  bench/batch/epic/batch_call_file.py OUT --txns N --connections C [--records R] [--reads 4]
      [--writes 2] [--hot] [--db 1] [--seed 1]
"""
import argparse
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "net"))
from resp_file import resp  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out")
    p.add_argument("--txns", type=int, required=True)
    p.add_argument("--connections", type=int, required=True)
    p.add_argument("--records", type=int, default=1000000)
    p.add_argument("--reads", type=int, default=4)
    p.add_argument("--writes", type=int, default=2)
    p.add_argument("--hot", action="store_true")
    p.add_argument("--db", type=int, default=1)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    if not 1 <= a.writes <= a.reads or a.reads > a.records or a.txns < 1 or a.connections < 1:
        p.error("need 1 <= writes <= reads <= records, txns >= 1 and connections >= 1")
    rng = random.Random(a.seed)
    with open(a.out, "wb") as f:
        f.write(resp("SELECT", a.db) * a.connections)
        for _ in range(a.txns):
            keys = rng.sample(range(1 if a.hot else 0, a.records), a.reads)
            if a.hot:
                keys[0] = 0
            reads = [f"t:{k}" for k in keys]
            f.write(resp("BATCH.CALL", 0, len(reads), *reads, a.writes, *reads[:a.writes], rng.randrange(1 << 32), 0))


if __name__ == "__main__":
    main()
