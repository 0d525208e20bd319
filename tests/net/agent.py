"""A test agent inside a namespace: servers and clients driven one JSON line at a time.

Why: a test process lives in the root namespace and cannot open a socket in a host's
namespace, yet a fault test has to act on both sides *while* the fault changes (open a
connection, cut the link, send on the same connection, heal, send again). One long-lived
agent per host keeps its sockets between commands; the test sends a command on the
agent's stdin and reads one JSON answer from its stdout (:class:`Agent` does both, with a
deadline on every answer).

Commands (``{"op": ..., ...}``; every answer has ``ok`` and, for socket work, ``elapsed``):

``listen``      TCP server on ``port``: ``kind`` ``echo`` (sends back what it reads) or
                ``sink`` (reads an 8-byte big-endian length and that many bytes, answers
                their SHA-256); every accepted peer is recorded.
``udp_listen``  UDP receiver on ``port``; every datagram is recorded.
``stats``       what the servers recorded: ``accepts`` (peer addresses), ``udp``
                (``[peer, payload]``).
``connect``     a TCP connect with ``timeout``; ``id`` of the socket, or ``error``: one of
                ``timeout``, ``refused``, ``unreachable``, ``invalid``, ``reset``, ``error``.
``echo``        send ``data`` on socket ``id`` and wait up to ``timeout`` for as many bytes
                back.
``recv``        wait up to ``timeout`` for ``size`` bytes on socket ``id``.
``sink_send``   connect, send ``size`` bytes to a sink, compare the SHA-256 it answers.
``udp_send``    ``count`` datagrams of ``data`` to ``host``:``port``.
``close``       close socket ``id``.
``quit``        exit.

Run as ``python -m tests.net.agent`` (in a host: ``host.module("tests.net.agent", ...)``).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import queue
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tests.net.netns import Host

CHUNK = 64 * 1024


def error_kind(exc: BaseException) -> str:
    """The kind of a socket failure, as a test asserts it (timeout is not refusal)."""
    if isinstance(exc, TimeoutError | socket.timeout):
        return "timeout"
    if isinstance(exc, ConnectionRefusedError):
        return "refused"
    if isinstance(exc, ConnectionResetError | BrokenPipeError):
        return "reset"
    if isinstance(exc, OSError):
        if exc.errno in (errno.ENETUNREACH, errno.EHOSTUNREACH):
            return "unreachable"
        if exc.errno == errno.EINVAL:
            return "invalid"
    return "error"


def payload(size: int) -> bytes:
    """``size`` bytes that are not all alike, so that a reordering changes the hash."""
    block = hashlib.sha256(b"toolwire").digest() * 2048  # 64 KiB
    reps = -(-size // len(block))
    return (bytes(range(256)) + block * reps)[:size]


def _recv_exact(sock: socket.socket, size: int) -> bytes:
    parts = []
    left = size
    while left:
        part = sock.recv(min(left, CHUNK))
        if not part:
            raise ConnectionResetError("closed before the expected bytes")
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


class _Servers:
    """The agent's servers: threads, recording what they see under one lock."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.accepts: list[str] = []
        self.udp: list[tuple[str, str]] = []
        self.sockets: list[socket.socket] = []

    def listen(self, host: str, port: int, kind: str) -> int:
        srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind((host, port))
        srv.listen(64)
        self.sockets.append(srv)
        handler = self._echo if kind == "echo" else self._sink
        threading.Thread(target=self._accept, args=(srv, handler), daemon=True).start()
        return int(srv.getsockname()[1])

    def _accept(self, srv: socket.socket, handler: Callable[[socket.socket], None]) -> None:
        while True:
            try:
                conn, peer = srv.accept()
            except OSError:
                return
            with self.lock:
                self.accepts.append(str(peer[0]))
            threading.Thread(target=self._serve, args=(conn, handler), daemon=True).start()

    @staticmethod
    def _serve(conn: socket.socket, handler: Callable[[socket.socket], None]) -> None:
        with conn, contextlib.suppress(OSError):
            handler(conn)

    @staticmethod
    def _echo(conn: socket.socket) -> None:
        while data := conn.recv(CHUNK):
            conn.sendall(data)

    @staticmethod
    def _sink(conn: socket.socket) -> None:
        (size,) = struct.unpack(">Q", _recv_exact(conn, 8))
        digest = hashlib.sha256()
        left = size
        while left:
            part = conn.recv(min(left, CHUNK))
            if not part:
                return
            digest.update(part)
            left -= len(part)
        conn.sendall(digest.digest())

    def udp_listen(self, host: str, port: int) -> int:
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.bind((host, port))
        self.sockets.append(sock)
        threading.Thread(target=self._receive, args=(sock,), daemon=True).start()
        return int(sock.getsockname()[1])

    def _receive(self, sock: socket.socket) -> None:
        while True:
            try:
                data, peer = sock.recvfrom(65536)
            except OSError:
                return
            with self.lock:
                self.udp.append((str(peer[0]), data.decode(errors="replace")))


class _Agent:
    """The command loop (stdin → stdout) of one agent process."""

    def __init__(self) -> None:
        self.servers = _Servers()
        self.conns: dict[int, socket.socket] = {}
        self.next_id = 1

    def handle(self, cmd: dict[str, Any]) -> dict[str, Any]:
        op = cmd.get("op")
        method = getattr(self, f"op_{op}", None)
        if method is None:
            return {"ok": False, "error": "error", "detail": f"unknown op {op!r}"}
        result: dict[str, Any] = method(cmd)
        return result

    def op_listen(self, cmd: dict[str, Any]) -> dict[str, Any]:
        port = self.servers.listen(cmd.get("host", "0.0.0.0"), int(cmd.get("port", 0)),
                                   cmd.get("kind", "echo"))
        return {"ok": True, "port": port}

    def op_udp_listen(self, cmd: dict[str, Any]) -> dict[str, Any]:
        port = self.servers.udp_listen(cmd.get("host", "0.0.0.0"), int(cmd.get("port", 0)))
        return {"ok": True, "port": port}

    def op_stats(self, cmd: dict[str, Any]) -> dict[str, Any]:
        with self.servers.lock:
            return {"ok": True, "accepts": list(self.servers.accepts),
                    "udp": [list(u) for u in self.servers.udp]}

    def op_connect(self, cmd: dict[str, Any]) -> dict[str, Any]:
        t0 = time.monotonic()
        try:
            sock = socket.create_connection((cmd["host"], int(cmd["port"])),
                                            timeout=float(cmd.get("timeout", 2.0)))
        except OSError as exc:
            return {"ok": False, "error": error_kind(exc), "detail": repr(exc),
                    "elapsed": time.monotonic() - t0}
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        ident = self.next_id
        self.next_id += 1
        self.conns[ident] = sock
        return {"ok": True, "id": ident, "local": sock.getsockname()[0],
                "elapsed": time.monotonic() - t0}

    def op_echo(self, cmd: dict[str, Any]) -> dict[str, Any]:
        sock = self.conns[int(cmd["id"])]
        data = str(cmd["data"]).encode()
        deadline = time.monotonic() + float(cmd.get("timeout", 2.0))
        t0 = time.monotonic()
        got = b""
        try:
            sock.settimeout(max(0.01, deadline - time.monotonic()))
            sock.sendall(data)
            while len(got) < len(data):
                sock.settimeout(max(0.001, deadline - time.monotonic()))
                part = sock.recv(CHUNK)
                if not part:
                    raise ConnectionResetError("closed by the peer")
                got += part
        except OSError as exc:
            return {"ok": False, "error": error_kind(exc), "detail": repr(exc),
                    "data": got.decode(errors="replace"), "elapsed": time.monotonic() - t0}
        return {"ok": got == data, "data": got.decode(errors="replace"),
                "elapsed": time.monotonic() - t0}

    def op_recv(self, cmd: dict[str, Any]) -> dict[str, Any]:
        sock = self.conns[int(cmd["id"])]
        size = int(cmd["size"])
        deadline = time.monotonic() + float(cmd.get("timeout", 2.0))
        t0 = time.monotonic()
        got = b""
        try:
            while len(got) < size:
                sock.settimeout(max(0.001, deadline - time.monotonic()))
                part = sock.recv(size - len(got))
                if not part:
                    raise ConnectionResetError("closed by the peer")
                got += part
        except OSError as exc:
            return {"ok": False, "error": error_kind(exc), "detail": repr(exc),
                    "data": got.decode(errors="replace"), "elapsed": time.monotonic() - t0}
        return {"ok": True, "data": got.decode(errors="replace"),
                "elapsed": time.monotonic() - t0}

    def op_sink_send(self, cmd: dict[str, Any]) -> dict[str, Any]:
        size = int(cmd["size"])
        body = payload(size)
        t0 = time.monotonic()
        try:
            with socket.create_connection((cmd["host"], int(cmd["port"])),
                                          timeout=float(cmd.get("timeout", 10.0))) as sock:
                sock.sendall(struct.pack(">Q", size) + body)
                answer = _recv_exact(sock, 32)
        except OSError as exc:
            return {"ok": False, "error": error_kind(exc), "detail": repr(exc),
                    "elapsed": time.monotonic() - t0}
        return {"ok": answer == hashlib.sha256(body).digest(), "elapsed": time.monotonic() - t0}

    def op_udp_send(self, cmd: dict[str, Any]) -> dict[str, Any]:
        sent = 0
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            for i in range(int(cmd.get("count", 1))):
                try:
                    sock.sendto(f"{cmd.get('data', '')}{i}".encode(),
                                (cmd["host"], int(cmd["port"])))
                    sent += 1
                except OSError as exc:
                    return {"ok": False, "error": error_kind(exc), "detail": repr(exc),
                            "sent": sent}
        return {"ok": True, "sent": sent}

    def op_close(self, cmd: dict[str, Any]) -> dict[str, Any]:
        sock = self.conns.pop(int(cmd["id"]), None)
        if sock is not None:
            sock.close()
        return {"ok": True}


def main() -> int:
    """Answer commands until ``quit`` or the end of stdin."""
    agent = _Agent()
    print(json.dumps({"ok": True, "ready": True}), flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            cmd = json.loads(line)
            if cmd.get("op") == "quit":
                print(json.dumps({"ok": True}), flush=True)
                return 0
            answer = agent.handle(cmd)
        except Exception as exc:  # a bad command is answered, not fatal
            answer = {"ok": False, "error": "error", "detail": repr(exc)}
        print(json.dumps(answer), flush=True)
    return 0


class Agent:
    """The test's handle on an agent process running in a host.

    Every :meth:`call` waits for its answer at most the command's own ``timeout`` plus
    ``slack`` seconds, so that a stuck agent fails the test instead of hanging it.
    """

    def __init__(self, host: Host, slack: float = 5.0) -> None:
        self.host = host
        self.slack = slack
        self.proc: subprocess.Popen[str] = host.module(
            "tests.net.agent", stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, bufsize=1)
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        ready = self._answer(10.0 + slack)
        if not ready.get("ready"):
            raise RuntimeError(f"agent in {host.name} did not start: {ready}")

    def _read(self) -> None:
        assert self.proc.stdout is not None
        with contextlib.suppress(ValueError, OSError):
            for line in self.proc.stdout:
                self._lines.put(line)
        self._lines.put(None)

    def _answer(self, timeout: float) -> dict[str, Any]:
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"agent in {self.host.name} gave no answer in {timeout:.1f}s"
                               ) from None
        if line is None:
            err = self.proc.stderr.read() if self.proc.stderr and self.proc.poll() else ""
            raise RuntimeError(f"agent in {self.host.name} exited: {err}")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def call(self, op: str, **args: Any) -> dict[str, Any]:
        """Send one command and return its answer."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"op": op, **args}) + "\n")
        self.proc.stdin.flush()
        return self._answer(float(args.get("timeout", 2.0)) + self.slack)

    # Shorthands for the commands the tests use most.

    def listen(self, port: int = 0, kind: str = "echo") -> int:
        """A TCP server of ``kind`` on the host's address; its port."""
        return int(self.call("listen", host=self.host.address, port=port, kind=kind)["port"])

    def udp_listen(self, port: int = 0) -> int:
        """A UDP receiver on the host's address; its port."""
        return int(self.call("udp_listen", host=self.host.address, port=port)["port"])

    def connect(self, host: str, port: int, timeout: float = 2.0) -> dict[str, Any]:
        """A TCP connect from this host (see the ``connect`` command)."""
        return self.call("connect", host=host, port=port, timeout=timeout)

    def echo(self, conn: int, data: str, timeout: float = 2.0) -> dict[str, Any]:
        """Send ``data`` on connection ``conn`` and wait for it back."""
        return self.call("echo", id=conn, data=data, timeout=timeout)

    def stats(self) -> dict[str, Any]:
        """What this agent's servers recorded."""
        return self.call("stats")

    def quit(self) -> None:
        """Ask the agent to exit; the network kills it anyway if this fails."""
        with contextlib.suppress(Exception):
            self.call("quit", timeout=1.0)
        self.host.stop(self.proc)


if __name__ == "__main__":
    sys.exit(main())
