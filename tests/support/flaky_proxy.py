"""A real TCP proxy on 127.0.0.1 that breaks connections on purpose, for retry tests.

Bytes go through unchanged to ``upstream`` (host, port). ``drop_next(n)``: the next ``n``
connections are closed as soon as they are accepted (the request never reaches the server).
``cut_next_after(n)``: the next connection is cut, both ways, once ``n`` bytes of the answer
went through to the client (the server did the work, the client lost the answer, or part of a
stream). ``cut_next_at(marker, nth)``: the next connection is cut just before the ``nth``
occurrence of ``marker`` in the answer (e.g. before the third ``event: token``: the client got
exactly two tokens, whatever the chunking). ``cut_each_at(marker, nths)``: the next
``len(nths)`` connections are cut so, each at its own ``nth``. ``connections`` counts the
connections accepted.

    with FlakyProxy(("127.0.0.1", 8000)) as proxy: ... proxy.url ...
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading

BUFFER = 4096
RESET = struct.pack("ii", 1, 0)  # SO_LINGER on, 0 s: close() sends RST


class FlakyProxy:
    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self._lock = threading.Lock()
        self._drops = 0
        self._cut_after: int | None = None
        self._cut_at: tuple[bytes, int] | None = None
        self._cuts_each: list[tuple[bytes, int]] = []
        self.connections = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._listener.getsockname()[1]}"

    def drop_next(self, count: int) -> None:
        with self._lock:
            self._drops = count

    def cut_next_after(self, answer_bytes: int) -> None:
        with self._lock:
            self._cut_after = answer_bytes

    def cut_next_at(self, marker: bytes, nth: int) -> None:
        with self._lock:
            self._cut_at = (marker, nth)

    def cut_each_at(self, marker: bytes, nths: list[int]) -> None:
        with self._lock:
            self._cuts_each = [(marker, nth) for nth in nths]

    def __enter__(self) -> FlakyProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stopping.set()
        # On Linux, close() alone does not wake a thread blocked in accept(); shutdown() does.
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        self._thread.join(timeout=5)

    def _serve(self) -> None:
        while not self._stopping.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                self.connections += 1
                drop = self._drops > 0
                self._drops -= drop
                cut_after, self._cut_after = self._cut_after, None
                cut_at, self._cut_at = self._cut_at, None
                if cut_at is None and self._cuts_each:
                    cut_at = self._cuts_each.pop(0)
            if drop:
                client.close()
                continue
            args = (client, cut_after, cut_at)
            threading.Thread(target=self._relay, args=args, daemon=True).start()

    def _relay(
        self, client: socket.socket, cut_after: int | None, cut_at: tuple[bytes, int] | None
    ) -> None:
        server = socket.create_connection(self.upstream)
        done = threading.Event()

        def close_both(*, reset: bool = False) -> None:
            done.set()
            if reset:
                # A cut resets the server's connection (RST, not FIN): its next write fails at
                # once, as when a client's network drops, instead of one write later.
                with contextlib.suppress(OSError):
                    server.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, RESET)
            for sock in (client, server):
                if not (reset and sock is server):  # a shutdown would send FIN first
                    with contextlib.suppress(OSError):
                        sock.shutdown(socket.SHUT_RDWR)
                sock.close()

        def pump(
            source: socket.socket,
            sink: socket.socket,
            limit: int | None,
            marker: tuple[bytes, int] | None = None,
        ) -> None:
            sent = 0
            answer = b""
            cut = False
            try:
                while not done.is_set():
                    data = source.recv(BUFFER)
                    if not data:
                        break
                    if marker is not None:
                        answer += data
                        at = _nth_index(answer, *marker)
                        if at is not None:
                            sink.sendall(data[: max(at - sent, 0)])
                            cut = True
                            break
                    if limit is not None and sent + len(data) >= limit:
                        sink.sendall(data[: max(limit - sent, 0)])
                        cut = True
                        break
                    sink.sendall(data)
                    sent += len(data)
            except OSError:
                pass
            close_both(reset=cut)

        threading.Thread(target=pump, args=(client, server, None), daemon=True).start()
        pump(server, client, cut_after, cut_at)


def _nth_index(data: bytes, marker: bytes, nth: int) -> int | None:
    """Where the ``nth`` (1-based) occurrence of ``marker`` starts in ``data``, if it is there."""
    start = -1
    for _ in range(nth):
        start = data.find(marker, start + 1)
        if start < 0:
            return None
    return start
