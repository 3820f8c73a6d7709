"""A real ``celery -A convmem worker`` process for tests (not eager mode).

The worker runs with the test run's settings but on the **test** database: ``DATABASE_URL`` is
built from the connection pytest-django set up (PostgreSQL ``test_<name>``, or SQLite's test
file, which the settings put on disk for this), and it inherits ``REDIS_URL`` and
``CONVMEM_VAR_DIR``, so it uses the same broker — Redis when ``REDIS_URL`` is set, else the
filesystem broker under the var dir. It consumes every queue (``CELERY_QUEUE_NAMES``) and
purges them on start (unless ``purge=False``), is ready when its log says so, and is stopped
(warm shutdown, then killed) when the fixture ends.

Tests that use it need ``@pytest.mark.django_db(transaction=True)``: the worker only sees what
the test committed.

    @pytest.mark.worker
    @pytest.mark.django_db(transaction=True)
    def test_it(celery_worker): ...

    with start_worker({"CONVMEM_SUMMARIZER_BACKEND": "openai"}) as worker: ...
"""

import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

import pytest
import redis
from django.conf import settings
from django.db import connections

ROOT = Path(__file__).resolve().parents[2]
READY_TIMEOUT = 60.0
STOP_TIMEOUT = 30.0


def worker_database_url(alias: str = "default") -> str:
    """A ``DATABASE_URL`` naming the database the test run uses for ``alias`` (call after DB
    setup): ``keys`` is the data keys' own database (``CONVMEM_KEYS_DATABASE_URL``)."""
    connection = connections[alias]
    db = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{Path(db['NAME']).resolve()}"
    if connection.vendor == "postgresql":
        credentials = quote(db["USER"] or "", safe="")
        if db["PASSWORD"]:
            credentials += ":" + quote(db["PASSWORD"], safe="")
        host = f"{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}"
        return f"postgres://{credentials}@{host}/{db['NAME']}"
    raise RuntimeError(f"no worker support for the {connection.vendor} backend")


class CeleryWorker:
    """A running worker process and its log."""

    def __init__(self, process: subprocess.Popen[bytes], log: Path) -> None:
        self.process = process
        self.log = log

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_ready(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT
        while " ready." not in self.output():
            if self.process.poll() is not None:
                raise RuntimeError(f"celery worker exited early:\n{self.output()[-4000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"celery worker not ready:\n{self.output()[-4000:]}")
            time.sleep(0.1)

    def stop(self) -> None:
        """Warm shutdown (running tasks finish), then kill what is left of its process group."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=STOP_TIMEOUT)


def queue_drained() -> bool:
    """Whether the broker holds no message for any queue, waiting or unacknowledged."""
    if settings.REDIS_URL:
        client = redis.Redis.from_url(settings.REDIS_URL)
        try:
            waiting = sum(client.llen(queue) for queue in settings.CELERY_QUEUE_NAMES)
            return waiting == 0 and client.hlen("unacked") == 0
        finally:
            client.close()
    out = Path(settings.CELERY_BROKER_TRANSPORT_OPTIONS["data_folder_in"])
    return not any(out.iterdir())


@contextmanager
def _celery_process(
    kind: str, arguments: Sequence[str], env: Mapping[str, str] | None
) -> Iterator[CeleryWorker]:
    """Run ``celery -A convmem <kind> …`` on the test database with ``env`` added, its output
    in a fresh log file; stopped (warm shutdown, then killed) when the block ends."""
    log = Path(tempfile.mkdtemp(prefix=f"convmem-{kind}-")) / f"{kind}.log"
    process_env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "convmem.settings",
        "DATABASE_URL": worker_database_url(),
        "CONVMEM_KEYS_DATABASE_URL": worker_database_url("keys"),
        "PYTHONUNBUFFERED": "1",
        **(env or {}),
    }
    command = [sys.executable, "-m", "celery", "-A", "convmem", kind, "--loglevel=INFO"]
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [*command, *arguments],
            cwd=ROOT,
            env=process_env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    celery = CeleryWorker(process, log)
    try:
        yield celery
    finally:
        celery.stop()


@contextmanager
def start_worker(
    env: Mapping[str, str] | None = None,
    queues: Sequence[str] | None = None,
    *,
    purge: bool = True,
) -> Iterator[CeleryWorker]:
    """Start a worker on the test database with ``env`` added to its environment, consuming
    ``queues`` (default: every queue); ``purge=False`` keeps the tasks queued before it (a
    worker that comes to a backlog)."""
    arguments = [
        "--pool=prefork",
        "--concurrency=2",
        "--queues",
        ",".join(queues or settings.CELERY_QUEUE_NAMES),  # default every queue: none unconsumed
        *(["--purge"] if purge else []),
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
        "-n",
        f"test-{uuid.uuid4().hex[:8]}@%h",
    ]
    if purge:
        _unacked_forget()
    with _celery_process("worker", arguments, {"CONN_MAX_AGE": "0", **(env or {})}) as worker:
        worker.wait_ready()
        yield worker


def _unacked_forget() -> None:
    """``--purge`` empties the queues but not the messages a stopped worker had taken and not
    acknowledged (one killed after ``STOP_TIMEOUT`` in the middle of a task): Redis keeps them
    for the visibility timeout, and ``queue_drained`` would wait on them. The tests' broker is
    their own, so a fresh worker starts with none."""
    if settings.REDIS_URL:
        client = redis.Redis.from_url(settings.REDIS_URL)
        try:
            client.delete("unacked", "unacked_index")
        finally:
            client.close()


@pytest.fixture(scope="module")
def celery_worker(django_db_setup: None) -> Iterator[CeleryWorker]:
    """A worker with the default settings (embedded summarizer), shared by a test module."""
    with start_worker() as worker:
        yield worker


@contextmanager
def start_beat(env: Mapping[str, str] | None = None) -> Iterator[CeleryWorker]:
    """Start ``celery beat`` (the periodic schedule of the settings, with ``env`` added: e.g. a
    short period) on a fresh schedule file; it sends to the same broker as ``start_worker``."""
    schedule = Path(tempfile.mkdtemp(prefix="convmem-beat-schedule-")) / "schedule"
    with _celery_process("beat", ["--schedule", str(schedule)], env) as beat:
        yield beat
