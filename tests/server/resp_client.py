"""A small RESP2/RESP3 client over a raw socket, for tests that must see exact reply types.

Replies are decoded into Python values that keep the RESP type:

=============  ==========================================
RESP           Python
=============  ==========================================
+simple        ``Simple`` (a ``str``)
-error, !blob  ``RespError`` (a ``str``; returned, never raised)
:integer, (    ``int``
$bulk          ``bytes``
$-1, *-1, _    ``None``
*array         ``list``
%map           ``dict`` (keys as decoded; lists become tuples)
~set           ``RespSet`` (a ``list``)
>push          ``Push`` (a ``list``)
#t / #f        ``bool``
,double        ``float``
=verbatim      ``Verbatim`` (``bytes`` with ``.fmt``)
=============  ==========================================

Every socket operation has a timeout (``socket.timeout`` is raised when it expires).
"""

import socket
import time

__all__ = [
    "Conn", "ConnectionClosed", "RespError", "Simple", "Verbatim", "RespSet", "Push",
    "encode", "encode_many",
]


class RespError(str):
    """An error reply (``-ERR ...``); the text without the leading '-'."""


class Simple(str):
    """A simple-string reply (``+OK``)."""


class Verbatim(bytes):
    """A RESP3 verbatim string; ``fmt`` is its three-letter format (``txt``)."""

    fmt = "txt"


class RespSet(list):
    """A RESP3 set reply (``~``)."""


class Push(list):
    """A RESP3 push message (``>``)."""


class ConnectionClosed(Exception):
    """The server closed the connection (EOF or reset) while a reply was expected."""


def _arg(a):
    if isinstance(a, bytes):
        return a
    if isinstance(a, (bytearray, memoryview)):
        return bytes(a)
    if isinstance(a, str):
        return a.encode()
    if isinstance(a, (int, float)):
        return str(a).encode()
    raise TypeError(f"cannot encode {type(a)}")


def encode(*args):
    """One command as a RESP multibulk request."""
    parts = [b"*%d\r\n" % len(args)]
    for a in args:
        b = _arg(a)
        parts.append(b"$%d\r\n" % len(b))
        parts.append(b)
        parts.append(b"\r\n")
    return b"".join(parts)


def encode_many(commands):
    """A pipeline: the concatenation of ``encode(*c)`` for each command."""
    return b"".join(encode(*c) for c in commands)


def _hashable(v):
    if isinstance(v, list):
        return tuple(_hashable(x) for x in v)
    if isinstance(v, dict):
        return tuple((k, _hashable(x)) for k, x in v.items())
    return v


class Conn:
    """One connection to the server. ``call()`` sends a command and returns its decoded reply."""

    recv_size = 1 << 20  # bytes asked of each recv (a test may make the client read slowly)

    def __init__(self, port, host="127.0.0.1", timeout=10.0, sock=None):
        self.port = port
        self.timeout = timeout
        self.sock = sock or socket.create_connection((host, port), timeout=timeout)
        self.sock.settimeout(timeout)
        try:
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass
        self.buf = bytearray()
        self.pos = 0
        self._keep = False  # True while read_reply_raw needs the buffer from a fixed start

    @classmethod
    def from_socket(cls, sock, timeout=10.0):
        """Wraps a connected socket."""
        return cls(None, timeout=timeout, sock=sock)

    # -- plumbing ---------------------------------------------------------------------------
    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def abort(self):
        """Closes with a TCP reset (SO_LINGER 0) instead of an orderly FIN."""
        try:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        except OSError:
            pass
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def send(self, data):
        self.sock.sendall(data)

    def _fill(self):
        if not self._keep and self.pos > (1 << 20) and self.pos * 2 > len(self.buf):
            del self.buf[: self.pos]
            self.pos = 0
        try:
            chunk = self.sock.recv(self.recv_size)
        except ConnectionResetError as e:
            raise ConnectionClosed(f"connection reset: {e}") from e
        if not chunk:
            raise ConnectionClosed("EOF")
        self.buf += chunk

    def _line(self):
        while True:
            i = self.buf.find(b"\r\n", self.pos)
            if i >= 0:
                line = bytes(self.buf[self.pos : i])
                self.pos = i + 2
                return line
            self._fill()

    def _exact(self, n):
        while len(self.buf) - self.pos < n + 2:
            self._fill()
        data = bytes(self.buf[self.pos : self.pos + n])
        if self.buf[self.pos + n : self.pos + n + 2] != b"\r\n":
            raise ValueError("bulk payload not followed by CRLF: %r" % bytes(self.buf[self.pos + n : self.pos + n + 2]))
        self.pos += n + 2
        return data

    def _parse(self):
        line = self._line()
        if not line:
            raise ValueError("empty reply line")
        t, rest = line[:1], line[1:]
        if t == b"+":
            return Simple(rest.decode("utf-8", "replace"))
        if t == b"-":
            return RespError(rest.decode("utf-8", "replace"))
        if t == b":" or t == b"(":
            return int(rest)
        if t == b"$":
            n = int(rest)
            return None if n < 0 else self._exact(n)
        if t == b"*" or t == b"~" or t == b">":
            n = int(rest)
            if n < 0:
                return None
            items = [self._parse() for _ in range(n)]
            return RespSet(items) if t == b"~" else Push(items) if t == b">" else items
        if t == b"%":
            n = int(rest)
            d = {}
            for _ in range(n):
                k = self._parse()
                d[_hashable(k)] = self._parse()
            return d
        if t == b"_":
            if rest:
                raise ValueError("junk after RESP3 null: %r" % line)
            return None
        if t == b"#":
            if rest not in (b"t", b"f"):
                raise ValueError("bad boolean %r" % line)
            return rest == b"t"
        if t == b",":
            return float(rest)
        if t == b"!":
            return RespError(self._exact(int(rest)).decode("utf-8", "replace"))
        if t == b"=":
            data = self._exact(int(rest))
            if data[3:4] != b":":
                raise ValueError("verbatim string without a format prefix: %r" % data[:8])
            v = Verbatim(data[4:])
            v.fmt = data[:3].decode()
            return v
        if t == b"|":  # attribute: read and drop it, then the reply it annotates
            n = int(rest)
            for _ in range(2 * n):
                self._parse()
            return self._parse()
        raise ValueError("unknown RESP type byte in reply line %r" % line[:80])

    # -- replies ----------------------------------------------------------------------------
    def read_reply(self):
        """The next reply, decoded."""
        return self._parse()

    def read_reply_raw(self):
        """The next reply's exact bytes (the reply is parsed to find where it ends)."""
        self._compact()
        self._keep = True
        try:
            self._parse()
        finally:
            self._keep = False
        return bytes(self.buf[: self.pos])

    def call(self, *args):
        """Sends one command and returns its decoded reply (errors as ``RespError``)."""
        self.send(encode(*args))
        return self.read_reply()

    def call_raw(self, *args):
        """Sends one command and returns the reply's exact bytes."""
        self._compact()
        self.send(encode(*args))
        return self.read_reply_raw()

    def _compact(self):
        if self.pos:
            del self.buf[: self.pos]
            self.pos = 0

    def pipeline(self, commands):
        """Sends every command in one write, then reads one reply per command, in order."""
        self.send(encode_many(commands))
        return [self.read_reply() for _ in commands]

    def pending_bytes(self):
        return bytes(self.buf[self.pos :])

    def read_until_close(self, timeout=10.0):
        """Reads until the server closes. Returns (bytes read, closed) where closed is False
        when the deadline passed with the connection still open."""
        data = bytearray(self.buf[self.pos :])
        self.pos = len(self.buf)
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return bytes(data), False
            self.sock.settimeout(min(left, 1.0))
            try:
                chunk = self.sock.recv(1 << 16)
            except socket.timeout:
                continue
            except (ConnectionResetError, BrokenPipeError):
                return bytes(data), True
            finally:
                self.sock.settimeout(self.timeout)
            if not chunk:
                return bytes(data), True
            data += chunk


def set_keys(port, n, value, chunk=20_000, timeout=60.0):
    """SETs key:0..n-1 to value(i) on one connection, `chunk` commands pipelined at a time.
    Returns the replies that were not OK (empty when every SET succeeded)."""
    bad = []
    with Conn(port, timeout=timeout) as c:
        for start in range(0, n, chunk):
            cmds = [("SET", f"key:{i}", value(i)) for i in range(start, min(n, start + chunk))]
            c.send(encode_many(cmds))
            for _ in cmds:
                reply = c.read_reply()
                if reply != "OK":
                    bad.append(reply)
    return bad
