"""A local HTTP server that receives webhooks: records each POST (headers, body) and answers
500 to the first ``fail_first`` of them, then 204."""

import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Received:
    headers: dict[str, str]
    body: bytes


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        receiver: WebhookReceiver = self.server.receiver  # type: ignore[attr-defined]
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        status = receiver.record(Received({k.lower(): v for k, v in self.headers.items()}, body))
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


class WebhookReceiver:
    def __init__(self, *, fail_first: int = 0) -> None:
        self.fail_first = fail_first
        self._lock = threading.Lock()
        self._received: list[Received] = []
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.receiver = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/hooks"

    @property
    def received(self) -> list[Received]:
        with self._lock:
            return list(self._received)

    def record(self, received: Received) -> int:
        with self._lock:
            self._received.append(received)
            return 500 if len(self._received) <= self.fail_first else 204

    def __enter__(self) -> "WebhookReceiver":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
