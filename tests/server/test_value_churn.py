"""Value churn over the network: many clients replace, grow, read and delete values while each
checks every reply against its own model of its keys.

A release server keeps freed blocks of values of up to 128 bytes in per-thread caches for reuse
and returns larger ones to malloc (builds with AddressSanitizer or invariant checks return every
block, so the sanitizer sees each free), so a workload that keeps replacing values of 1 to 200 bytes (both sides of
that boundary, and across it when APPEND grows a value) recycles value blocks all the time. A
block read after it was freed and reused shows up as a reply holding another key's bytes, an
older value of the same key, or garbage. Every value written here starts with 4 bytes of a hash
of (client, key, sequence number), then a readable "c<client>k<key>s<seq>|" tag, then more bytes
derived from that hash. A value from another key or an earlier write can equal the expected one
only if both are shorter than 4 bytes, or by a 2^-32 chance if both end before the tag does. In
a failure message the tags say where a wrong reply's bytes came from.

24 clients, more than a CI machine's cores, each on its own connection and with its own 12
keys, run seeded random SET / GET / DEL / APPEND / GETSET, sometimes several pipelined in one
write (half of those pipelines on a single key), for at most OPS_PER_CLIENT operations or
DURATION_S seconds. Every reply is checked exactly, reply type included; a client stops at its
first mismatch. At the end every key is read back with MGET, DBSIZE must equal the number of
keys the models hold, and the server must still answer PING. Against a server built with
AddressSanitizer a use after free is also caught where it happens: the server exits at the
report, and the srv fixture fails the test with the server's stderr.
"""

import hashlib
import random
import re
import threading
import time

from resp_client import Simple

N_CLIENTS = 24
KEYS_PER_CLIENT = 12
OPS_PER_CLIENT = 8000  # a client stops after this many operations ...
DURATION_S = 12.0  # ... or this many seconds, whichever comes first
MAX_VALUE = 200  # value (and APPEND chunk) lengths are uniform in 1..MAX_VALUE
SMALL_LIMIT = 128  # values up to this size live in the per-thread block caches
GROW_LIMIT = 600  # a key whose value is longer is only SET or DELeted, so values stay bounded
PIPELINE_P = 0.15  # probability that the next step is a pipeline of 2..8 operations
MAX_REPORTED = 8  # mismatches listed in the failure message

OK = Simple("OK")
_TAG = re.compile(rb"c(\d+)k(\d+)s(\d+)\|")


def key_name(cid, k):
    return f"churn:{cid:02d}:{k:02d}"


def make_value(cid, k, seq, length):
    """length bytes identifying (client, key, seq): 4 bytes of a hash, a readable tag, and more
    hash bytes. Deterministic, binary (CR, LF and NUL bytes occur)."""
    tag = b"c%dk%ds%d|" % (cid, k, seq)
    h = hashlib.blake2b(tag, digest_size=64).digest()
    body = h[:4] + tag + h[4:]
    while len(body) < length:
        body += hashlib.blake2b(body[-64:], digest_size=64).digest()
    return body[:length]


def short(v, n=60):
    """A reply or value, shortened for a message, with its length."""
    if isinstance(v, (bytes, bytearray)):
        tags = [f"c{m[1].decode()}k{m[2].decode()}s{m[3].decode()}" for m in _TAG.finditer(v)]
        s = repr(bytes(v[:n])) + ("..." if len(v) > n else "")
        return f"{s} ({len(v)} bytes{', tags ' + ' '.join(tags[:4]) if tags else ''})"
    if isinstance(v, list):
        return "[" + ", ".join(short(x, 24) for x in v[:6]) + (", ..." if len(v) > 6 else "") + "]"
    return f"{type(v).__name__} {v!r}"


def first_difference(expected, got):
    """For two byte strings: where they first differ, with a few bytes of each from there."""
    if not (isinstance(expected, bytes) and isinstance(got, bytes)) or expected == got:
        return ""
    i = next((j for j, (a, b) in enumerate(zip(expected, got)) if a != b), min(len(expected), len(got)))
    return f"; first difference at byte {i}: expected {expected[i:i + 12]!r}, got {got[i:i + 12]!r}"


def same(expected, got):
    """Exact equality including the reply type (Simple "OK", int, bytes, or None)."""
    return type(got) is type(expected) and got == expected


class Client:
    """One client's keys, model and seeded operation stream."""

    def __init__(self, cid):
        self.cid = cid
        self.rng = random.Random(7919 + cid)
        self.keys = [key_name(cid, k) for k in range(KEYS_PER_CLIENT)]
        self.model = {k: None for k in range(KEYS_PER_CLIENT)}
        self.seq = 0
        self.ops = 0
        self.pipelined = 0
        self.written_small = self.written_large = 0
        self.failures = []

    def _value(self, k):
        self.seq += 1
        length = self.rng.randint(1, MAX_VALUE)
        if length <= SMALL_LIMIT:
            self.written_small += 1
        else:
            self.written_large += 1
        return make_value(self.cid, k, self.seq, length)

    def next_op(self, k):
        """Picks an operation on key index k, applies it to the model, and returns
        (command, expected reply, description)."""
        key, old = self.keys[k], self.model[k]
        r = self.rng.random()
        if old is not None and len(old) > GROW_LIMIT:
            r = 0.0 if r < 0.5 else 0.35  # SET or DEL only
        if r < 0.30:
            v = self._value(k)
            self.model[k] = v
            return ("SET", key, v), OK, f"SET {key} {short(v, 24)}"
        if r < 0.35:
            # DEL of this key, sometimes with a second key of this client
            k2 = self.rng.randrange(KEYS_PER_CLIENT) if self.rng.random() < 0.3 else k
            ks = [k] if k2 == k else [k, k2]
            n = sum(self.model[i] is not None for i in ks)
            for i in ks:
                self.model[i] = None
            return ("DEL", *[self.keys[i] for i in ks]), n, "DEL " + " ".join(self.keys[i] for i in ks)
        if r < 0.60:
            return ("GET", key), old, f"GET {key}"
        if r < 0.80:
            v = self._value(k)
            self.model[k] = (old or b"") + v
            return ("APPEND", key, v), len(self.model[k]), f"APPEND {key} {short(v, 24)}"
        v = self._value(k)
        self.model[k] = v
        return ("GETSET", key, v), old, f"GETSET {key} {short(v, 24)}"

    def next_batch(self):
        if self.rng.random() >= PIPELINE_P:
            return [self.next_op(self.rng.randrange(KEYS_PER_CLIENT))]
        n = self.rng.randint(2, 8)
        if self.rng.random() < 0.5:
            k = self.rng.randrange(KEYS_PER_CLIENT)
            return [self.next_op(k) for _ in range(n)]
        return [self.next_op(self.rng.randrange(KEYS_PER_CLIENT)) for _ in range(n)]

    def run(self, conn, deadline):
        while self.ops < OPS_PER_CLIENT and time.monotonic() < deadline:
            batch = self.next_batch()
            if len(batch) == 1:
                replies = [conn.call(*batch[0][0])]
            else:
                replies = conn.pipeline([cmd for cmd, _, _ in batch])
                self.pipelined += len(batch)
            self.ops += len(batch)
            for i, ((cmd, want, what), got) in enumerate(zip(batch, replies)):
                if not same(want, got):
                    where = f" (operation {i + 1} of a pipeline of {len(batch)})" if len(batch) > 1 else ""
                    self.failures.append(f"client {self.cid}, op #{self.ops - len(batch) + i + 1}{where}: "
                                         f"{what}: expected {short(want)}, got {short(got)}"
                                         f"{first_difference(want, got)}")
                    return

    def check_final(self, conn):
        got = conn.call("MGET", *self.keys)
        want = [self.model[k] for k in range(KEYS_PER_CLIENT)]
        if type(got) is not list or len(got) != len(want):
            self.failures.append(f"client {self.cid}: final MGET answered {short(got)}")
            return
        for k, (w, g) in enumerate(zip(want, got)):
            if not same(w, g):
                self.failures.append(f"client {self.cid}: final MGET of {self.keys[k]}: "
                                     f"expected {short(w)}, got {short(g)}{first_difference(w, g)}")


def test_value_churn_many_clients(srv):
    """24 clients churn values of 1..200 bytes on their own keys with SET/GET/DEL/APPEND/GETSET
    (some pipelined); every reply and a final MGET of every key match each client's model."""
    clients = [Client(cid) for cid in range(N_CLIENTS)]
    conns = [srv.conn(timeout=30) for _ in clients]
    start = threading.Barrier(N_CLIENTS + 1)
    t0 = [0.0]

    def work(c, conn):
        try:
            start.wait(30)
            c.run(conn, t0[0] + DURATION_S)
        except BaseException as e:  # noqa: BLE001 - reported below
            c.failures.append(f"client {c.cid}: {type(e).__name__}: {e} (after {c.ops} operations)")

    threads = [threading.Thread(target=work, args=(c, conn), daemon=True) for c, conn in zip(clients, conns)]
    try:
        for t in threads:
            t.start()
        t0[0] = time.monotonic()
        start.wait(30)
        join_deadline = t0[0] + DURATION_S + 60
        for t in threads:
            t.join(max(0.0, join_deadline - time.monotonic()))
        elapsed = time.monotonic() - t0[0]
        stuck = [c.cid for c, t in zip(clients, threads) if t.is_alive()]
        assert not stuck, f"clients {stuck} still running {elapsed:.0f}s after the start"

        for c, conn in zip(clients, conns):
            if not c.failures:
                c.check_final(conn)
    finally:
        for conn in conns:
            conn.close()

    ops = sum(c.ops for c in clients)
    print(f"\nvalue churn: {ops} operations ({sum(c.pipelined for c in clients)} in pipelines) by "
          f"{N_CLIENTS} clients in {elapsed:.1f}s = {ops / elapsed:.0f} ops/s; values written: "
          f"{sum(c.written_small for c in clients)} of <= {SMALL_LIMIT} bytes, "
          f"{sum(c.written_large for c in clients)} larger")

    failures = [f for c in clients for f in c.failures]
    assert not failures, (f"{len(failures)} of {N_CLIENTS} clients saw a wrong reply; first:\n  "
                          + "\n  ".join(failures[:MAX_REPORTED]))

    live = sum(v is not None for c in clients for v in c.model.values())
    with srv.conn() as conn:
        n = conn.call("DBSIZE")
        assert same(live, n), f"DBSIZE answered {short(n)}; the clients' models hold {live} keys"
        pong = conn.call("PING")
        assert same(Simple("PONG"), pong), f"PING answered {short(pong)}"
