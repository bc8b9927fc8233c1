"""A linearizability checker for histories of one Redis string key (a register that is absent
or holds bytes), in the style of Wing & Gong with Lowe's memoization (the search of
tests/checkers/linearizability.hpp, here for Redis's GET/SET/INCR/DEL family).

A history is a list of Op: what a client invoked, when (invoke and response times from one
clock, e.g. time.monotonic_ns), and what it observed. The checker decides whether some total
order of the operations (a) respects real time: an operation that responded before another
was invoked comes first, and (b) explains every observed result when the operations are
replayed one by one on a sequential register. The search linearizes, at each step, some
pending operation whose call precedes every unlinearized operation's return; it memoizes the
pairs (set of linearized operations, register state) already explored, so it visits each
configuration once.

An operation whose outcome is unknown (its client timed out) has response time INF and result
UNKNOWN: it may take effect at any point after its invocation, or never.

Histories are checked per key: Redis's commands here touch one key each (MGET/MSET are atomic
per key only, so they are recorded as one operation per key sharing the command's interval).

Pipelines: operations a client sent in one write share the write-to-last-reply interval, but
the server executes one connection's commands in order. Ops with the same (process, batch)
are therefore linearized in the order of `pos` (program order); without it the search would
try every order of every batch.
"""

from dataclasses import dataclass, field

INF = float("inf")


class _Unknown:
    def __repr__(self):
        return "UNKNOWN"


UNKNOWN = _Unknown()

ERR_NOT_INT = "ERR value is not an integer or out of range"
ERR_OVERFLOW = "ERR increment or decrement would overflow"
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


@dataclass
class Op:
    """One operation on one key.

    kind    result observed
    get     bytes, or None when absent
    set     "OK" (plain SET; unconditional)
    getset  the previous value (bytes or None); GETSET and SET ... GET
    setnx   "OK" if it set, None if the key existed (SET ... NX)
    incrby  the new integer, or an error string (ERR_NOT_INT / ERR_OVERFLOW); INCR is incrby 1
    del     1 if a value was removed, else 0
    """

    kind: str
    arg: object = None
    result: object = None
    invoke: float = 0
    response: float = INF
    process: int = 0
    batch: object = None  # ops of one process with the same batch id take effect in pos order
    pos: int = 0
    index: int = field(default=0, compare=False)

    def describe(self):
        a = "" if self.arg is None else f"({self.arg!r})"
        resp = "inf" if self.response == INF else str(self.response)
        return f"p{self.process} [{self.invoke}, {resp}] {self.kind}{a} -> {self.result!r}"


def parse_int(v):
    """Redis's string2ll: a canonical signed 64-bit decimal, else None."""
    if v is None or not 0 < len(v) <= 20:
        return None
    s = v.decode("latin-1")
    body = s[1:] if s[0] == "-" else s
    if not body.isdigit() or not body.isascii():
        return None
    if body[0] == "0" and (len(body) > 1 or s[0] == "-"):
        return None
    n = int(s)
    return n if INT64_MIN <= n <= INT64_MAX else None


def step(state, op):
    """Replays op on state. Returns (consistent, new state): consistent is False when the
    op's observed result cannot be what this state gives."""
    known = op.result is not UNKNOWN
    k = op.kind
    if k == "get":
        return (not known or op.result == state), state
    if k == "set":
        return (not known or op.result == "OK"), op.arg
    if k == "getset":
        return (not known or op.result == state), op.arg
    if k == "setnx":
        if state is None:
            return (not known or op.result == "OK"), op.arg
        return (not known or op.result is None), state
    if k == "del":
        return (not known or op.result == (0 if state is None else 1)), None
    if k == "incrby":
        cur = 0 if state is None else parse_int(state)
        if cur is None:
            return (not known or op.result == ERR_NOT_INT), state
        n = cur + op.arg
        if not INT64_MIN <= n <= INT64_MAX:
            return (not known or op.result == ERR_OVERFLOW), state
        return (not known or op.result == n), str(n).encode()
    raise ValueError(f"unknown op kind {k!r}")


@dataclass
class Result:
    """A verdict. Not ok is either a proof that no linearization exists (refuted) or undecided:
    the search ran out of steps first. Negative controls must require refuted, since a checker
    that gave up would pass them too."""
    ok: bool
    explanation: str = ""
    steps: int = 0
    undecided: bool = False

    @property
    def refuted(self):
        return not self.ok and not self.undecided


def check(ops, initial=None, max_steps=5_000_000):
    """Decides whether ops (one key's history) is linearizable from `initial` (None: absent).
    Returns Result(ok, explanation). Gives up, reporting not ok and saying so, after max_steps
    search steps."""
    ops = sorted(ops, key=lambda o: (o.invoke, o.response))  # bit i ~ time order (compact cache keys)
    n = len(ops)
    if n == 0:
        return Result(True)
    for i, op in enumerate(ops):
        op.index = i
        if op.response < op.invoke:
            raise ValueError(f"op responds before it is invoked: {op.describe()}")
    # Events sorted by time; at equal times calls come first (touching intervals overlap).
    events = sorted([(op.invoke, 0, i) for i, op in enumerate(ops)] + [(op.response, 1, i) for i, op in enumerate(ops)],
                    key=lambda e: (e[0], e[1], e[2]))
    m = len(events)
    head = m  # sentinel index
    nxt = list(range(1, m + 1)) + [0]
    prv = [head] + list(range(0, m - 1)) + [m - 1]
    nxt[head] = 0 if m else head
    nxt[m - 1] = head
    prv[head] = m - 1
    call_node = [0] * n
    ret_node = [0] * n
    is_call = [False] * m
    op_of = [0] * m
    for idx, (_, typ, i) in enumerate(events):
        op_of[idx] = i
        is_call[idx] = typ == 0
        if typ == 0:
            call_node[i] = idx
        else:
            ret_node[i] = idx

    def unlink(x):
        nxt[prv[x]] = nxt[x]
        prv[nxt[x]] = prv[x]

    def relink(x):
        nxt[prv[x]] = x
        prv[nxt[x]] = x

    # program order inside a pipeline: pred[i] must be linearized before i
    pred = [-1] * n
    groups = {}
    for i, op in enumerate(ops):
        if op.batch is not None:
            groups.setdefault((op.process, op.batch), []).append(i)
    for members in groups.values():
        members.sort(key=lambda i: ops[i].pos)
        for a, b in zip(members, members[1:]):
            pred[b] = a

    determinate = [op.result is not UNKNOWN and op.response != INF for op in ops]
    remaining = sum(determinate)
    linearized = 0
    state = initial
    stack = []
    cache = set()
    steps = 0
    best = (0, 0, initial)  # (number linearized, mask, state) of the deepest configuration
    entry = nxt[head]
    while remaining:
        steps += 1
        if steps > max_steps:
            return Result(False, f"gave up after {max_steps} search steps (history of {n} ops)", steps, undecided=True)
        if entry != head and is_call[entry]:
            i = op_of[entry]
            if pred[i] >= 0 and not (linearized >> pred[i]) & 1:
                entry = nxt[entry]
                continue
            ok, new_state = step(state, ops[i])
            if ok:
                new_lin = linearized | (1 << i)
                # (lowest unlinearized index p, the bits from p on) identifies the set exactly and
                # stays small: everything below p is linearized
                p = (~new_lin & (new_lin + 1)).bit_length() - 1
                key = (p, new_lin >> p, new_state)
                if key not in cache:
                    cache.add(key)
                    stack.append((i, state))
                    linearized, state = new_lin, new_state
                    unlink(call_node[i])
                    unlink(ret_node[i])
                    if determinate[i]:
                        remaining -= 1
                    if len(stack) > best[0]:
                        best = (len(stack), linearized, state)
                    entry = nxt[head]
                    continue
            entry = nxt[entry]
        else:
            # A return (or the end): the op it belongs to could not be linearized in time.
            if not stack:
                return Result(False, _explain(ops, best), steps)
            i, state = stack.pop()
            linearized &= ~(1 << i)
            relink(ret_node[i])
            relink(call_node[i])
            if determinate[i]:
                remaining += 1
            entry = nxt[call_node[i]]
    return Result(True, "", steps)


def _explain(ops, best):
    """The operations around where the deepest partial linearization got stuck."""
    count, mask, state = best
    pending = [op for op in ops if not (mask >> op.index) & 1 and op.response != INF]
    if not pending:
        return "not linearizable"
    first = min(pending, key=lambda o: o.response)
    window = [o for o in ops if not (mask >> o.index) & 1 and o.invoke <= first.response]
    window.sort(key=lambda o: o.invoke)
    lines = [f"no linearization: after {count} of {len(ops)} ops the register holds {state!r}, and "
             f"none of these can take effect next consistently (the first must, by its response):",
             "  " + first.describe()]
    lines += ["  " + o.describe() for o in window[:20] if o is not first]
    done = sorted((o for o in ops if (mask >> o.index) & 1), key=lambda o: o.response)[-5:]
    if done:
        lines.append("last ops of that partial linearization (by response):")
        lines += ["  " + o.describe() for o in done]
    return "\n".join(lines)


def check_per_key(history, initial=None, max_steps=5_000_000):
    """history: {key: [Op]}. Returns {key: Result} for every key."""
    return {k: check(v, initial, max_steps) for k, v in history.items()}
