"""Commands as RESP arrays of bulk strings, what a client library sends: the command files that
duet_bench_replay (bench/net/replay.cpp) replays are these, back to back."""


def resp(*args):
    """One command: each argument bytes, str or int (sent as its decimal text)."""
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        b = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(b), b))
    return b"".join(out)
