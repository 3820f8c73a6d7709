"""A real TCP proxy on 127.0.0.1 that breaks connections on purpose, for retry tests.

Bytes go through unchanged to ``upstream`` (host, port). ``drop_next(n)``: the next ``n``
connections are closed as soon as they are accepted (the request never reaches the server).
``cut_next_after(n)``: the next connection is cut, both ways, once ``n`` bytes of the answer
went through to the client (the server did the work, the client lost the answer, or part of a
stream). ``connections`` counts the connections accepted.

    with FlakyProxy(("127.0.0.1", 8000)) as proxy: ... proxy.url ...
"""

from __future__ import annotations

import contextlib
import socket
import threading

BUFFER = 4096


class FlakyProxy:
    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self._lock = threading.Lock()
        self._drops = 0
        self._cut_after: int | None = None
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

    def __enter__(self) -> FlakyProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stopping.set()
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
            if drop:
                client.close()
                continue
            threading.Thread(target=self._relay, args=(client, cut_after), daemon=True).start()

    def _relay(self, client: socket.socket, cut_after: int | None) -> None:
        server = socket.create_connection(self.upstream)
        done = threading.Event()

        def close_both() -> None:
            done.set()
            for sock in (client, server):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()

        def pump(source: socket.socket, sink: socket.socket, limit: int | None) -> None:
            sent = 0
            try:
                while not done.is_set():
                    data = source.recv(BUFFER)
                    if not data:
                        break
                    if limit is not None and sent + len(data) >= limit:
                        sink.sendall(data[: max(limit - sent, 0)])
                        break
                    sink.sendall(data)
                    sent += len(data)
            except OSError:
                pass
            close_both()

        threading.Thread(target=pump, args=(client, server, None), daemon=True).start()
        pump(server, client, cut_after)
