"""Real server processes for fault tests, HTTP-level tests and the load benchmark: a private
redis-server (that a test may stop and start again), gunicorn or Django's runserver serving
convmem, and one-off management calls.

Everything listens on 127.0.0.1 on a free port picked at start; every process is started in
its own session and stopped by its own pid (never by name).
"""

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

import redis
import requests
from django.conf import settings

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT = 60.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _stop(process: subprocess.Popen[bytes] | None, *, timeout: float = 20.0) -> None:
    if process is None or process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=timeout)


class RedisServer:
    """A redis-server of our own (no persistence), on its own port: stopping it is an outage
    of everything that uses it, and nobody else's Redis is touched."""

    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> "RedisServer":
        self.process = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--loglevel",
                "warning",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + START_TIMEOUT
        while not self.ping():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"redis-server did not start on port {self.port}")
            time.sleep(0.05)
        return self

    def ping(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as conn:
                conn.sendall(b"PING\r\n")
                return conn.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def idle(self) -> bool:
        """No Celery task waiting in any queue or delivered and not yet acknowledged."""
        client = redis.Redis.from_url(self.url)
        try:
            waiting = sum(client.llen(queue) for queue in settings.CELERY_QUEUE_NAMES)
            return waiting == 0 and client.hlen("unacked") == 0
        finally:
            client.close()

    def stop(self) -> None:
        """Shut it down (its data goes with it: queued tasks are lost, as in a real outage)."""
        _stop(self.process)
        self.process = None


class WebServer:
    """``gunicorn convmem.wsgi`` with ``env`` added to this process's environment."""

    def __init__(
        self,
        env: Mapping[str, str],
        *,
        workers: int = 2,
        threads: int = 1,
        probe_headers: Mapping[str, str] | None = None,
    ) -> None:
        self.port = free_port()
        self.env = {**os.environ, "PYTHONUNBUFFERED": "1", **env}
        self.workers = workers
        self.threads = threads
        # Sent with the readiness probe (e.g. X-Forwarded-Proto when HTTPS is required).
        self.probe_headers = dict(probe_headers or {})
        self.log = Path(tempfile.mkdtemp(prefix="convmem-web-")) / "gunicorn.log"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        return [
            sys.executable,
            "-m",
            "gunicorn",
            "convmem.wsgi",
            "--bind",
            f"127.0.0.1:{self.port}",
            "--workers",
            str(self.workers),
            "--threads",
            str(self.threads),
            "--timeout",
            "60",
        ]

    def start(self) -> "WebServer":
        with self.log.open("wb") as sink:
            self.process = subprocess.Popen(
                self.command(),
                cwd=ROOT,
                env=self.env,
                stdout=sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                # Unauthenticated: answers 401 as soon as a worker serves requests.
                probe = requests.get(
                    f"{self.url}/api/v1/threads", headers=self.probe_headers, timeout=2
                )
                if probe.status_code == 401:
                    return self
            except requests.RequestException:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"gunicorn did not start:\n{self.output()[-4000:]}")
            time.sleep(0.1)

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self) -> None:
        _stop(self.process)
        self.process = None

    def __enter__(self) -> "WebServer":
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


class DevServer(WebServer):
    """``manage.py runserver`` (what ``dev.py serve`` runs) instead of gunicorn."""

    def command(self) -> list[str]:
        return [
            sys.executable,
            "manage.py",
            "runserver",
            f"127.0.0.1:{self.port}",
            "--noreload",
            "--nothreading",
        ]


def figure(name: str, **values: object) -> None:
    """Print a measured figure of a fault check (shown by `pytest -rP`; never asserted)."""
    print(f"FIGURE {name}: " + ", ".join(f"{key}={value}" for key, value in values.items()))
