"""Epic's stored procedures over the server (BATCH.CALL, BATCH.CALLPIECES, BATCH.GET, BATCH.LOAD,
BATCH.FLUSH) on a `batch` database opened with Epic tables and the Mix procedure set, through
redis-py: results equal a Python replay of the procedures in each client's order (a call in
pieces: each piece replayed as a call, the replies folded); only the calling client waits
for its epoch; a client gone mid-wait loses nothing; a shutdown answers the calls waiting; bad
input gets an error and changes nothing."""

import re
import socket
import threading
import time

import pytest
import redis

from server_util import IS_REDIS

pytestmark = pytest.mark.skipif(IS_REDIS, reason="Duet-specific (Epic on the batch keyspace)")

TABLES = "small:1:64,wide:4:200,idx:3:400:indexed"
WORDS = {"small": 1, "wide": 4, "idx": 3}
M32 = 0xFFFFFFFF
RMW, DELETE, PARTIAL = 0, 1, 2


def epic_server(server_factory, max_wait_us=500, epoch_size=100000, placement="auto", min_device_ops=16384,
                by_contention="yes"):
    return server_factory(extra=["--database-kinds", "kv,1=batch", "--epic-procedures", "mix",
                                 "--epic-tables", TABLES, "--epic-epoch-max-wait-us", str(max_wait_us),
                                 "--epic-epoch-size", str(epoch_size), "--epic-placement", placement,
                                 "--epic-min-device-epoch-ops", str(min_device_ops),
                                 "--epic-place-by-contention", by_contention])


def client(s, **kw):
    return redis.Redis(port=s.port, db=1, decode_responses=True, **kw)


class MixModel:
    """MixProcs (src/batch/epic/workloads.hpp) replayed serially: records by (table, key)."""

    def __init__(self):
        self.rec = {}

    def call(self, proc, reads, writes, args):
        total, present = 0, 0
        for t, k in reads:
            r = self.rec.get((t, k))
            if r is None:
                continue
            present += 1
            for w in r:
                total = (total * 31 + w) & M32
        mode = args[1] if len(args) > 1 else 0
        if mode == 1:
            return ("ABORTED", 7)
        if mode == 5:  # a read past the declared reads, then an abort: the broken rule decides
            return ("ILLEGAL",)
        v = ((args[0] if args else 0) + total) & M32
        wrote = False
        for j, (t, k) in enumerate(writes):
            if proc == DELETE and j % 2 == 0:
                self.rec.pop((t, k), None)
            elif proc == PARTIAL and j % 2 == 1:
                continue
            else:
                self.rec[(t, k)] = [(v * 7 + j * 13 + w) & M32 for w in range(WORDS[t])]
            wrote = True
        if mode == 3:  # an abort after a write breaks the rules; before any, it is an abort
            return ("ILLEGAL",) if wrote else ("ABORTED", 9)
        return [0, total, present, v]


def call_args(proc, reads, writes, args):
    return (["BATCH.CALL", proc, len(reads)] + [f"{t}:{k}" for t, k in reads] + [len(writes)] +
            [f"{t}:{k}" for t, k in writes] + list(args))


def reply_of(r):
    if isinstance(r, redis.ResponseError):
        msg = str(r)
        if msg.startswith("ABORTED"):
            return ("ABORTED", int(msg.split()[-1]))
        if msg.startswith("ILLEGAL"):
            return ("ILLEGAL",)
        raise AssertionError(f"unexpected error reply: {msg}")
    return [int(x) for x in r]


def draw(rng, keys):
    """A random Mix txn over `keys` (list of (table, key)); mode 0 mostly, aborts and illegal
    ones sometimes (no reruns: the serial order is then submission order)."""
    reads = rng.sample(keys, rng.randint(0, 3))
    writes = rng.sample(keys, rng.randint(0, 3))
    proc = rng.choice([RMW, RMW, RMW, DELETE, PARTIAL])
    a = rng.randrange(100)
    mode = 1 if a < 10 else 3 if a < 13 else 0
    return proc, reads, writes, [rng.randrange(1 << 32), mode]


# auto: the GPU planner on a machine with a GPU, the CPU twin elsewhere; gpu-twin: the GPU
# placement's path (the index kept by the planner) with its CPU twin, every epoch (min 0) or the
# small ones on the CPU (min 20 ops: the epochs here are of 1 to 400 calls); gpu-exec-twin:
# the path of execution on the GPU (the tables with the executor, copied back for BATCH.GET and
# for epochs on the CPU threads) with a second CPU engine as the device, every epoch that fits
# there ("no": contention not asked) or each where the cost model puts it ("yes").
@pytest.mark.parametrize("placement,min_ops,by_contention",
                         [("auto", 0, "yes"), ("gpu-twin", 0, "yes"), ("gpu-twin", 20, "yes"),
                          ("gpu-exec-twin", 0, "no"), ("gpu-exec-twin", 20, "no"), ("gpu-exec-twin", 0, "yes")])
def test_pipelined_calls_equal_serial_replay(server_factory, placement, min_ops, by_contention):
    import random
    s = epic_server(server_factory, placement=placement, min_device_ops=min_ops, by_contention=by_contention)
    r = client(s)
    rng = random.Random(7)
    keys = [("small", k) for k in range(6)] + [("wide", k) for k in range(4)] + [("idx", k * 1000) for k in range(5)]
    for k in range(3):  # a few loaded records
        assert r.execute_command("BATCH.LOAD", "small", k, 100 + k) == "OK"
    model = MixModel()
    for k in range(3):
        model.rec[("small", k)] = [100 + k]
    txns = [draw(rng, keys) for _ in range(400)]
    p = r.pipeline(transaction=False)
    for t in txns:
        p.execute_command(*call_args(*t))
    got = p.execute(raise_on_error=False)
    for i, (t, g) in enumerate(zip(txns, got)):
        assert reply_of(g) == model.call(*t), f"txn {i}: {t}"
    for (t, k) in keys:
        want = model.rec.get((t, k))
        g = r.execute_command("BATCH.GET", t, k)
        assert (None if g is None else [int(x) for x in g]) == want, (t, k)
    info = r.info("duet")["batch_db1_epic"]
    assert info["placement"] in (("gpu", "cpu") if placement == "auto" else (placement,)), info
    assert info["host_planned_epochs"] == 0, info
    if min_ops == 0:
        assert info["small_epochs_on_host"] == 0, info
    # Epochs of at most 400 calls are below 256 per thread on any machine: never dealt.
    assert info["queued_epochs"] == 0, info
    sides = info["device_epochs"] + info["small_epochs_on_host"] + info["cost_model_epochs_on_host"]
    if placement == "gpu-exec-twin" and by_contention == "no":
        assert sides == info["epochs"] and info["cost_model_epochs_on_host"] == 0, info
        assert info["device_epochs"] > 0 and info["table_uploads"] >= 1, info
        if min_ops == 0:  # BATCH.GET reads the device's records: only epochs on the CPU bring the tables back
            assert info["table_downloads"] == 0, info
    elif placement == "gpu-exec-twin":
        assert sides == info["epochs"], info
    else:
        assert info["device_epochs"] == 0 and info["table_uploads"] == 0, info
        assert info["cost_model_epochs_on_host"] == 0, info
    # The epoch thread's time: every placement ran at least one epoch.
    assert info["engine_ms"] > 0 and info["take_ms"] >= 0 and info["resolve_ms"] >= 0, info
    # Where the time went, and the cost model's figures: kept with a device executor only.
    if placement == "gpu-exec-twin":
        assert info["device_exec_ms"] + info["host_exec_ms"] > 0, info
        assert (info["device_exec_ms"] > 0) == (info["device_epochs"] > 0), info
        assert info["model_device_ns_per_txn"] > 0 and info["model_host_ns_per_txn"] > 0, info
        assert info["model_device_ns_per_link"] > 0, info
    else:
        for k in ("host_exec_ms", "device_exec_ms", "table_move_ms", "model_host_ns_per_txn"):
            assert info[k] == 0, (k, info)


def test_clients_on_their_own_keys_each_equal_their_replay(server_factory):
    import random
    s = epic_server(server_factory)
    n_clients, per = 6, 120
    results, errors = {}, []

    def run(ci):
        try:
            rng = random.Random(100 + ci)
            keys = [("wide", ci * 20 + k) for k in range(5)] + [("idx", 10_000 * (ci + 1) + k) for k in range(4)]
            txns = [draw(rng, keys) for _ in range(per)]
            r = client(s)
            got = []
            for i in range(0, per, 10):  # pipelines of 10
                p = r.pipeline(transaction=False)
                for t in txns[i:i + 10]:
                    p.execute_command(*call_args(*t))
                got += p.execute(raise_on_error=False)
            results[ci] = (keys, txns, got)
        except Exception as e:  # reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=run, args=(ci,)) for ci in range(n_clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads), "a client still waits for its replies"
    assert not errors, errors
    assert len(results) == n_clients
    r = client(s)
    for ci, (keys, txns, got) in results.items():
        model = MixModel()
        for i, (t, g) in enumerate(zip(txns, got)):
            assert reply_of(g) == model.call(*t), f"client {ci} txn {i}"
        for (t, k) in keys:
            g = r.execute_command("BATCH.GET", t, k)
            assert (None if g is None else [int(x) for x in g]) == model.rec.get((t, k))
    info = r.info("duet")
    assert info["batch_db1_epic"]["txns"] == n_clients * per


def test_only_the_calling_client_waits_for_its_epoch(server_factory):
    # Epochs close only on BATCH.FLUSH here: the call waits while other clients, on every I/O
    # thread, are answered at once.
    s = epic_server(server_factory, max_wait_us=60_000_000)
    waiter = client(s)
    box = {}

    def call():
        box["reply"] = waiter.execute_command(*call_args(RMW, [("small", 1)], [("small", 1)], [5, 0]))
        box["at"] = time.monotonic()

    t = threading.Thread(target=call)
    t.start()
    time.sleep(0.3)
    assert t.is_alive() and "reply" not in box
    others = [redis.Redis(port=s.port, db=0, decode_responses=True) for _ in range(6)]
    t0 = time.monotonic()
    for i, o in enumerate(others):
        assert o.set(f"k{i}", "v") and o.get(f"k{i}") == "v"
    assert time.monotonic() - t0 < 2.0
    assert t.is_alive(), "the call must still wait for its epoch"
    flushed_at = time.monotonic()
    assert client(s).execute_command("BATCH.FLUSH") == "OK"
    t.join(10)
    assert [int(x) for x in box["reply"]] == [0, 0, 0, 5]
    assert box["at"] >= flushed_at
    assert [int(x) for x in client(s).execute_command("BATCH.GET", "small", 1)] == [35]


def test_a_client_gone_mid_wait_loses_nothing(server_factory):
    s = epic_server(server_factory, max_wait_us=60_000_000)
    sock = socket.create_connection(("127.0.0.1", s.port))
    cmd = ["SELECT", "1"]
    payload = "".join(f"*{len(c)}\r\n" + "".join(f"${len(a)}\r\n{a}\r\n" for a in c)
                      for c in (cmd, [str(x) for x in call_args(RMW, [], [("small", 9)], [1, 0])]))
    sock.sendall(payload.encode())
    time.sleep(0.2)
    sock.close()
    r = client(s)
    assert r.execute_command("BATCH.FLUSH") == "OK"
    assert [int(x) for x in r.execute_command("BATCH.GET", "small", 9)] == [7]
    assert r.ping()


def test_shutdown_answers_the_calls_waiting(server_factory):
    s = epic_server(server_factory, max_wait_us=60_000_000)
    r = client(s, socket_timeout=20)
    box = {}

    def call():
        try:
            box["reply"] = r.execute_command(*call_args(RMW, [], [("small", 2)], [3, 0]))
        except Exception as e:
            box["error"] = repr(e)

    t = threading.Thread(target=call)
    t.start()
    time.sleep(0.3)
    assert s.signal_and_wait() == 0
    t.join(10)
    assert [int(x) for x in box.get("reply", [])] == [0, 0, 0, 3], box


def pieces_args(pieces):
    out = ["BATCH.CALLPIECES", len(pieces)]
    for proc, reads, writes, args in pieces:
        out += ([proc, len(reads)] + [f"{t}:{k}" for t, k in reads] + [len(writes)] +
                [f"{t}:{k}" for t, k in writes] + [len(args)] + list(args))
    return out


def fold(results):
    """One reply for a txn in pieces: the first piece's that did not commit, else the output
    words summed over the pieces."""
    for res in results:
        if not isinstance(res, list):
            return res
    return [sum(ws) & M32 for ws in zip(*results)]


def test_calls_in_pieces_equal_their_pieces_replayed_and_folded(server_factory):
    # Each piece runs as a call of its own, in order; the one reply folds them. Pipelined with
    # whole calls between, in epochs of 16 calls, so pieces meet the epoch's size.
    import random
    s = epic_server(server_factory, epoch_size=16)
    r = client(s)
    rng = random.Random(11)
    keys = [("small", k) for k in range(6)] + [("wide", k) for k in range(4)] + [("idx", k * 1000) for k in range(5)]
    model = MixModel()
    txns = []
    for i in range(300):
        if i % 3 == 0:
            txns.append(("whole", draw(rng, keys)))
        else:
            txns.append(("pieces", [draw(rng, keys) for _ in range(rng.randint(1, 4))]))
    p = r.pipeline(transaction=False)
    for kind, t in txns:
        p.execute_command(*(call_args(*t) if kind == "whole" else pieces_args(t)))
    got = p.execute(raise_on_error=False)
    folded_failures = 0
    for i, ((kind, t), g) in enumerate(zip(txns, got)):
        if kind == "whole":
            want = model.call(*t)
        else:
            results = [model.call(*piece) for piece in t]
            folded_failures += sum(1 for x in results if not isinstance(x, list)) > 1
            want = fold(results)
        assert reply_of(g) == want, f"call {i}: {kind} {t}"
    assert folded_failures > 0, "some txn has two pieces that do not commit"
    for (t, k) in keys:
        want = model.rec.get((t, k))
        g = r.execute_command("BATCH.GET", t, k)
        assert (None if g is None else [int(x) for x in g]) == want, (t, k)


def test_bad_pieces_are_refused_whole(server_factory):
    s = epic_server(server_factory)
    r = client(s)
    assert r.execute_command("BATCH.LOAD", "wide", 3, 1, 2, 3, 4) == "OK"
    ok = (RMW, [("wide", 3)], [("wide", 3)], [5, 0])
    bad = [
        (["BATCH.CALLPIECES", 0], "wrong number of arguments"),
        (["BATCH.CALLPIECES", 0, 0, 0, 0, 0], "numpieces"),
        (["BATCH.CALLPIECES", 65] + pieces_args([ok])[2:], "numpieces"),
        (["BATCH.CALLPIECES", 2] + pieces_args([ok])[2:], "piece 1"),               # a piece short
        (pieces_args([ok]) + [7], "follow the last"),                              # one too many
        (pieces_args([ok, (RMW, [], [("small", 64)], [1, 0])]), "piece 1"),      # key out of range
        (pieces_args([ok, ok, (9, [], [("wide", 3)], [1, 0])]), "piece 2"),      # unknown procedure
        (pieces_args([ok])[:-1] + ["x"], "arg 1"),                                 # arg not a number
    ]
    for args, match in bad:
        with pytest.raises(redis.ResponseError, match=match):
            r.execute_command(*args)
    assert r.execute_command("BATCH.FLUSH") == "OK"
    assert [int(x) for x in r.execute_command("BATCH.GET", "wide", 3)] == [1, 2, 3, 4], "nothing applied"


CAPACITY = {"small": 64, "wide": 200}  # direct tables; idx is indexed (any 64-bit key)
TABLE_NAMES = ["small", "wide", "idx"]
U64 = re.compile(r"[0-9]+\Z")


def parse_key(tok):
    """`table:key` as the server reads it (table by name or number), or None."""
    table, colon, key = tok.rpartition(":")
    if not colon or not U64.match(key) or int(key) >= 1 << 64:
        return None
    if U64.match(table):
        return (TABLE_NAMES[int(table)], int(key)) if int(table) < len(TABLE_NAMES) else None
    return (table, int(key)) if table in TABLE_NAMES else None


def parse_calls(toks, counted_args):
    """BATCH.CALL's arguments (`counted_args` False: one call, the args to the end) or one
    BATCH.CALLPIECES piece list after numpieces (True), as the server's grammar and checks
    read them: a list of (proc, reads, writes, args), or None where the server must refuse
    the whole command."""
    calls, i, n = [], 0, len(toks)

    def number(limit):
        nonlocal i
        if i >= n or not U64.match(toks[i]) or int(toks[i]) > limit:
            raise ValueError
        i += 1
        return int(toks[i - 1])

    try:
        while i < n or not calls:
            proc = number(M32)
            lists = []
            for _ in range(2):
                k = number(n - i - 1)
                keys = [parse_key(t) for t in toks[i:i + k]]
                if None in keys:
                    raise ValueError
                i += k
                lists.append(keys)
            k = number(n - i - 1) if counted_args else n - i
            args = toks[i:i + k]
            if not all(U64.match(a) and int(a) <= M32 for a in args):
                raise ValueError
            i += k
            reads, writes = lists
            if proc not in (RMW, DELETE, PARTIAL) or len(set(writes)) != len(writes) or any(
                    t in CAPACITY and key >= CAPACITY[t] for t, key in reads + writes):
                raise ValueError
            calls.append((proc, reads, writes, [int(a) for a in args]))
            if not counted_args:
                break
    except ValueError:
        return None
    return calls


def mutate(rng, toks):
    """Up to three edits of a command's arguments: a number moved by -1, +1 or +2^32, a key
    renamed (its table by number, a sign, a missing part), a token dropped, inserted or the
    list cut short."""
    toks = list(toks)
    for _ in range(rng.randrange(4)):
        if not toks:
            break
        i = rng.randrange(len(toks))
        op = rng.randrange(5)
        if op == 0 and U64.match(toks[i]):
            toks[i] = str(max(0, int(toks[i]) + rng.choice([-1, 1, 1 << 32])))
        elif op == 1 and ":" in toks[i]:
            t, _, k = toks[i].rpartition(":")
            toks[i] = rng.choice([f"{TABLE_NAMES.index(t)}:{k}", f"{t}:+{k}", f"{t}:-{k}", f"{t}:", f":{k}",
                                  f"{t}:{k}:{k}", f"{t}:{int(k) + 64}", f"3:{k}", k])
        elif op == 2:
            del toks[i]
        elif op == 3:
            toks.insert(i, rng.choice(["0", "1", "2", "3", "small:1", "idx:7", "x", ""]))
        elif op == 4:
            toks = toks[:i]
    return toks


def test_mutated_calls_are_refused_whole_or_equal_their_replay(server_factory):
    # Valid calls and calls in pieces, each edited at random: the server must refuse exactly
    # the ones its grammar and checks refuse (parsed here independently), apply nothing of a
    # refused one, and give every other the Python replay's reply, in epochs of 16 calls.
    import random
    s = epic_server(server_factory, epoch_size=16)
    r = client(s)
    rng = random.Random(23)
    keys = ([("small", k) for k in range(6)] + [("small", 63)] + [("wide", k) for k in range(4)] +
            [("idx", k * 1000) for k in range(5)] + [("idx", (1 << 64) - 1)])
    outside = [("small", 64), ("wide", 200), ("small", (1 << 64) - 1)]  # past direct tables' ends

    def draw_edited():
        """draw()'s txn, but its keys drawn with replacement (a write key twice) and now and
        then past a direct table's end."""
        proc, reads, writes, args = draw(rng, keys)
        pick = lambda: rng.choice(outside) if rng.random() < 0.04 else rng.choice(keys[:4] if rng.random() < 0.3 else keys)
        return proc, [pick() for _ in reads], [pick() for _ in writes], args

    sent = []
    while len(sent) < 800:
        if rng.random() < 0.5:
            args = call_args(*draw_edited())[1:]
            toks = mutate(rng, [str(a) for a in args])
            calls = parse_calls(toks, counted_args=False)
            cmd = ["BATCH.CALL"] + toks
        else:
            args = pieces_args([draw_edited() for _ in range(rng.randint(1, 3))])[1:]
            toks = mutate(rng, [str(a) for a in args])
            counted = U64.match(toks[0]) and 1 <= int(toks[0]) <= 64 if toks else False
            calls = parse_calls(toks[1:], counted_args=True) if counted else None
            if calls is not None and len(calls) != int(toks[0]):
                calls = None
            cmd = ["BATCH.CALLPIECES"] + toks
        # Modes 2 and 4 rerun (a later epoch): the replay keeps submission order, so leave them out.
        if calls is not None and any(len(a) > 1 and a[1] in (2, 4) for _, _, _, a in calls):
            continue
        sent.append((cmd, calls))
    refused = sum(calls is None for _, calls in sent)
    assert 200 < refused < 600, f"{refused} of {len(sent)} edited calls refused: the mix is off"
    p = r.pipeline(transaction=False)
    for cmd, _ in sent:
        p.execute_command(*cmd)
    got = p.execute(raise_on_error=False)
    model = MixModel()
    for i, ((cmd, calls), g) in enumerate(zip(sent, got)):
        if calls is None:
            assert isinstance(g, redis.ResponseError) and not str(g).startswith(("ABORTED", "ILLEGAL")), \
                f"call {i} should be refused: {cmd} -> {g!r}"
            continue
        if isinstance(g, redis.ResponseError):
            assert str(g).startswith(("ABORTED", "ILLEGAL")), f"call {i} should run: {cmd} -> {g}"
        results = [model.call(proc, reads, writes, args) for proc, reads, writes, args in calls]
        assert reply_of(g) == (results[0] if cmd[0] == "BATCH.CALL" else fold(results)), f"call {i}: {cmd}"
    for (t, k) in keys:
        want = model.rec.get((t, k))
        g = r.execute_command("BATCH.GET", t, k)
        assert (None if g is None else [int(x) for x in g]) == want, (t, k)
    assert len(model.rec) > 5, "some records were written"


def test_bad_input_is_refused_and_changes_nothing(server_factory):
    s = epic_server(server_factory)
    r = client(s)
    assert r.execute_command("BATCH.LOAD", "wide", 3, 1, 2, 3, 4) == "OK"
    bad = [
        ["BATCH.CALL", "x", 0, 0],                              # proc not a number
        ["BATCH.CALL", 0, 3, "small:1", 0],                     # numreads past the arguments
        ["BATCH.CALL", 0, 0, 1, "small"],                       # key without a table
        ["BATCH.CALL", 0, 0, 1, "nope:1"],                      # unknown table
        ["BATCH.CALL", 0, 0, 1, "small:64"],                    # direct key out of range
        ["BATCH.CALL", 0, 0, 1, "small:-1"],                    # key not unsigned
        ["BATCH.CALL", 0, 0, 1, "wide:3", 1 << 32],             # arg over 32 bits
        ["BATCH.CALL", 0, 0, 2, "wide:3", "wide:3", 1, 0],      # a write key twice
        ["BATCH.CALL", 9, 0, 1, "wide:3", 1, 0],                # unknown procedure
        ["BATCH.GET", "nope", 1],
        ["BATCH.GET", "wide", "x"],
        ["BATCH.LOAD", "wide", 4, 1, 2],                        # wrong length
        ["BATCH.LOAD", "small", 64, 1],                         # out of range
    ]
    for b in bad:
        with pytest.raises(redis.ResponseError):
            r.execute_command(*b)
    assert r.execute_command("BATCH.FLUSH") == "OK"
    assert [int(x) for x in r.execute_command("BATCH.GET", "wide", 3)] == [1, 2, 3, 4]
    assert r.execute_command("BATCH.GET", "wide", 4) is None
    # Refused calls leave bulk load open; the first call that is queued closes it.
    assert r.execute_command("BATCH.LOAD", "wide", 6, 5, 6, 7, 8) == "OK"
    r.execute_command(*call_args(RMW, [("wide", 3)], [], [0, 0]))
    with pytest.raises(redis.ResponseError, match="after the first submission"):
        r.execute_command("BATCH.LOAD", "wide", 5, 1, 2, 3, 4)
    # Settings are fixed at startup and reported.
    cfg = r.config_get("epic-*")
    assert cfg["epic-tables"] == TABLES and cfg["epic-procedures"] == "mix"
    with pytest.raises(redis.ResponseError, match="immutable"):
        r.config_set("epic-epoch-size", 10)


def test_calls_that_do_not_fit_their_procedure_are_refused_and_change_nothing(server_factory):
    # TPC-C's procedures read their keys and args by position: Payment takes 3 reads, 4 writes
    # and 1 arg (records layout), its add piece 1 read, 1 write and 2 args.
    s = server_factory(extra=["--database-kinds", "kv,1=batch", "--epic-procedures", "tpcc",
                              "--epic-tables", "t:4:16", "--epic-epoch-max-wait-us", "500"])
    r = client(s)
    for k in range(8):
        assert r.execute_command("BATCH.LOAD", "t", k, 100, 200, 300, 400) == "OK"
    bad = [
        (["BATCH.CALL", 1, 3, "t:1", "t:2", "t:3", 1, "t:1", 5],
         "Payment takes 3 reads, 4 writes and 1 arg here; the call has 3 reads, 1 write and 1 arg"),
        (["BATCH.CALL", 1, 3, "t:1", "t:2", "t:3", 4, "t:1", "t:2", "t:3", "t:4"], "the call has 3 reads, 4 writes and 0 args"),
        (["BATCH.CALL", 0, 0, 4, "t:1", "t:2", "t:3", "t:4", 5], "NewOrder takes 13 reads"),
        (["BATCH.CALLPIECES", 2, 5, 1, "t:1", 1, "t:1", 2, 7, 0, 5, 1, "t:2", 1, "t:2", 1, 7], "piece 1: Payment's add piece takes"),
    ]
    for args, match in bad:
        with pytest.raises(redis.ResponseError, match=re.escape(match)):
            r.execute_command(*args)
    assert r.execute_command("BATCH.FLUSH") == "OK"
    for k in range(8):
        assert [int(x) for x in r.execute_command("BATCH.GET", "t", k)] == [100, 200, 300, 400], k
    # The add piece as it is meant: word 2 of t:1 plus 7.
    assert [int(x) for x in r.execute_command("BATCH.CALL", 5, 1, "t:1", 1, "t:1", 7, 2)] == [0, 0, 0, 0]
    assert [int(x) for x in r.execute_command("BATCH.GET", "t", 1)] == [100, 200, 307, 400]


def test_calls_on_records_narrower_than_their_procedure_reads_are_refused(server_factory):
    # YCSB's procedure fills a write word by word from its source read: a 1-word source for a
    # 4-word write used to read the records after it (and crash an ASan build).
    s = server_factory(extra=["--database-kinds", "kv,1=batch", "--epic-procedures", "ycsb",
                              "--epic-tables", "small:1:64,wide:4:200", "--epic-epoch-max-wait-us", "500"])
    r = client(s)
    for k in range(64):
        assert r.execute_command("BATCH.LOAD", "small", k, 1000 + k) == "OK"
    for k in range(4):
        assert r.execute_command("BATCH.LOAD", "wide", k, k, k, k, k) == "OK"
    with pytest.raises(redis.ResponseError, match=re.escape(
            "fills its write 0 (table wide, 4-word records) from its read 0 (table small, 1-word records)")):
        r.execute_command("BATCH.CALL", 0, 1, "small:63", 1, "wide:0", 0, 0, 0, 5)
    assert r.execute_command("BATCH.FLUSH") == "OK"
    assert [int(x) for x in r.execute_command("BATCH.GET", "wide", 0)] == [0, 0, 0, 0]
    # A wide source, or none, is fine: words 1..2 of wide:0 become 5 + w, the rest comes from wide:3.
    r.execute_command("BATCH.CALL", 0, 1, "wide:3", 1, "wide:0", 0, 1, 2, 5)
    assert [int(x) for x in r.execute_command("BATCH.GET", "wide", 0)] == [3, 6, 7, 3]
    r.execute_command("BATCH.CALL", 0, 1, "small:1", 1, "small:2", 0, 0, 0, 5)
    assert [int(x) for x in r.execute_command("BATCH.GET", "small", 2)] == [1001]


def test_epic_tables_are_charged_to_the_memory_budget(server_factory):
    # Tables that could never fit the budget stop the server at startup with a message.
    s = server_factory(wait=False, extra=["--database-kinds", "kv,1=batch", "--maxmemory", "1000000",
                                          "--epic-tables", "t:100:100000"])
    s.returncode = s.proc.wait(30)
    assert s.returncode != 0
    assert "the tables take 80900000 bytes in each batch database, more than the memory budget" in s.stderr_text()
    # Each batch database charges its tables when it opens: the first of two fits, the second
    # is refused with OOM while the first keeps working.
    s = server_factory(extra=["--database-kinds", "kv,1=batch,2=batch", "--maxmemory", "20000000",
                              "--epic-tables", "t:4:400000", "--epic-epoch-max-wait-us", "500"])
    r1 = client(s)
    assert r1.execute_command("BATCH.LOAD", "t", 7, 1, 2, 3, 4) == "OK"
    r2 = redis.Redis(port=s.port, db=2, decode_responses=True)
    with pytest.raises(redis.ResponseError, match="Epic tables of keyspace .* take 16400000 bytes, more than "
                                                  "the memory budget has left"):
        r2.execute_command("BATCH.LOAD", "t", 7, 1, 2, 3, 4)
    assert [int(x) for x in r1.execute_command("BATCH.GET", "t", 7)] == [1, 2, 3, 4]


def test_a_call_whose_keys_stay_wrong_gets_an_error_after_its_attempts(server_factory):
    # Mix's mode 4 asks to rerun on every attempt (declared keys that never become right).
    s = epic_server(server_factory)
    r = client(s)
    with pytest.raises(redis.ResponseError, match="declared keys are wrong"):
        r.execute_command(*call_args(RMW, [("small", 4)], [("small", 4)], [1, 4]))
    assert r.execute_command("BATCH.FLUSH") == "OK"
    assert r.execute_command("BATCH.GET", "small", 4) is None
    assert r.execute_command(*call_args(RMW, [], [("small", 4)], [1, 0])) == [0, 0, 0, 1]
    # epic-max-attempts bounds the tries: with 1, mode 2 (a rerun on the first attempt only)
    # already gets the error; the default (8) lets it commit on its second.
    assert r.config_get("epic-max-attempts") == {"epic-max-attempts": "8"}
    assert [int(x) for x in r.execute_command(*call_args(RMW, [], [("small", 5)], [1, 2]))][3] == 1
    s1 = server_factory(extra=["--database-kinds", "kv,1=batch", "--epic-procedures", "mix", "--epic-tables", TABLES,
                               "--epic-epoch-max-wait-us", "500", "--epic-max-attempts", "1"])
    r1 = client(s1)
    with pytest.raises(redis.ResponseError, match="rerun 1 times"):
        r1.execute_command(*call_args(RMW, [], [("small", 5)], [1, 2]))


def test_a_batch_database_without_epic_tables_says_so(server_factory):
    s = server_factory(extra=["--database-kinds", "kv,1=batch"])
    r = client(s)
    with pytest.raises(redis.ResponseError, match="no Epic tables"):
        r.execute_command("BATCH.CALL", 0, 0, 0)
    with pytest.raises(redis.ResponseError, match="no Epic tables"):
        r.execute_command("BATCH.FLUSH")


def test_bad_epic_settings_stop_the_server_with_a_message(server_factory):
    for extra in (["--epic-tables", "t:0:5"], ["--epic-tables", "t:1"], ["--epic-procedures", "nope"],
                  ["--epic-epoch-size", "0"], ["--epic-tables", "t:1:5", "--epic-placement", "tpu"],
                  ["--epic-tables", "t:1:5", "--epic-exec-order", "random"]):
        s = server_factory(wait=False, extra=["--database-kinds", "kv,1=batch"] + extra)
        rc = s.proc.wait(30)
        s.returncode = rc
        assert rc != 0, extra
    # A server kept on the CPU (`--device cpu`) refuses GPU planning, on any machine.
    for placement in ("gpu", "gpu-exec"):
        s = server_factory(wait=False, extra=["--database-kinds", "kv,1=batch", "--device", "cpu", "--epic-tables",
                                              "t:1:5", "--epic-placement", placement])
        s.returncode = s.proc.wait(30)
        assert s.returncode != 0
        assert f"epic placement {placement} was requested but the store runs on the CPU" in s.stderr_text()
