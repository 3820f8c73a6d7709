"""Memos that keep pace: conversations through the API while a real, separate Celery worker
writes the memos; do model inputs lose the middle?

Each turn is what a chat app does (through the whole API stack, Django's test client): append
the user's message, ask for the context (window 8,192, reserve 1,024, a system prompt), append
the answer linked to its assembly. Turns are ``bench/long_conversation.py``'s (about 344
tokens a turn). The memos are written by real ``celery worker`` processes on the production
broker: Redis when ``REDIS_URL`` is set, else the embedded filesystem broker (and PostgreSQL
when ``DATABASE_URL`` names one, else a SQLite file).

Workloads:

- ``back-to-back``: one thread, ``--turns`` turns with no pause (the worst case for one
  conversation: the client never waits for anything);
- ``parallel``: ``--threads`` threads side by side, ``--parallel-turns`` turns each, each turn
  after a think time of ``--think`` seconds (a user reading and typing, scaled down).

Worker layouts, side by side in this one run on the same code:

- ``shared``: one worker process of concurrency 1 consuming every queue: scoring and upkeep
  compete with memo writing for the same process (as when everything was on one queue);
- ``separated``: the production layout (README): one worker for the ``memos`` queue and one
  for ``bulk``, ``erasure`` and the default queue, concurrency 1 each.

Each layout runs with the memo lead off and on (``--lead``; ``CONVMEM_MEMO_LEAD_MAX`` 0 or its
default in the workers' environment): on, the memo writer keeps how many messages came while
it wrote, and the thread's next memo is asked for that much earlier (docs/memo-pace.md).

Printed per layout, lead and workload: contexts; inputs that lost the middle (``memo_lag.turns`` >
0: messages newer than the memo shown left out) with the most lost in one input; the share of
contexts answered while a memo was pending; memo lag from request to written, in turns (the
thread's user turns in between) and seconds, p50 and p95; memos written; memo scorings stored
and skipped (a newer memo already extended it).

    .venv/bin/python bench/memo_pace.py                                 # SQLite + filesystem
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres REDIS_URL=redis://127.0.0.1:6379/2 \\
        .venv/bin/python bench/memo_pace.py
    .venv/bin/python bench/memo_pace.py --turns 200 --parallel-turns 40   # a shorter run
"""

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import ROOT, bench_database
from bench.long_conversation import SYSTEM, assistant_turn, user_turn

WINDOW = {"window_tokens": 8_192, "reserve_tokens": 1_024}
READY_TIMEOUT = 60.0
DRAIN_TIMEOUT = 300.0
LAYOUTS = {
    "shared": [("all", "memos,bulk,erasure,generation,webhooks,celery")],
    "separated": [("memos", "memos"), ("bulk", "bulk,erasure,celery")],
}


LEADS = {"off": {"CONVMEM_MEMO_LEAD_MAX": "0"}, "on": {}}


@dataclass
class Run:
    """What one workload under one layout and lead saw."""

    layout: str
    lead: str
    workload: str
    threads: list[Any] = field(default_factory=list)
    contexts: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, context: dict[str, Any]) -> None:
        with self.lock:
            self.contexts.append(context)


# --- workers --------------------------------------------------------------------------------------


@contextmanager
def workers(layout: str, lead: str) -> Iterator[None]:
    """The layout's worker processes, on this bench's database and broker, with the memo lead
    ``lead``; each purges its queues on start and is warm-stopped (then killed) at the end."""
    log_dir = Path(tempfile.mkdtemp(prefix="convmem-pace-"))
    started = []
    try:
        for name, queues in LAYOUTS[layout]:
            log = log_dir / f"{name}.log"
            with log.open("wb") as sink:
                process = subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "celery",
                        "-A",
                        "convmem",
                        "worker",
                        "--queues",
                        queues,
                        "--concurrency",
                        "1",
                        "--pool",
                        "prefork",
                        "--purge",
                        "--loglevel",
                        "INFO",
                        "--without-gossip",
                        "--without-mingle",
                        "--without-heartbeat",
                        "-n",
                        f"pace-{name}-{uuid.uuid4().hex[:6]}@%h",
                    ],
                    cwd=ROOT,
                    env={
                        **os.environ,
                        "CONN_MAX_AGE": "0",
                        "PYTHONUNBUFFERED": "1",
                        **LEADS[lead],
                    },
                    stdout=sink,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            started.append((process, log))
        for process, log in started:
            _wait_ready(process, log)
        yield
    finally:
        for process, _ in started:
            _stop(process)


def _wait_ready(process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + READY_TIMEOUT
    while " ready." not in log.read_text(errors="replace"):
        if process.poll() is not None or time.monotonic() > deadline:
            sys.exit(f"celery worker did not start:\n{log.read_text(errors='replace')[-3000:]}")
        time.sleep(0.1)


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)


# --- the client -----------------------------------------------------------------------------------


def _client(key: str) -> Any:
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client


def _append(client: Any, thread_id: str, role: str, content: str, **extra: str) -> None:
    response = client.post(
        f"/api/v1/threads/{thread_id}/messages",
        {"role": role, "content": content, **extra},
        format="json",
        HTTP_IDEMPOTENCY_KEY=uuid.uuid4().hex,
    )
    if response.status_code != 201:
        raise RuntimeError(f"append answered {response.status_code}: {response.data}")


def _turn(client: Any, thread_id: str, index: int) -> dict[str, Any]:
    _append(client, thread_id, "user", user_turn(index))
    response = client.post(
        f"/api/v1/threads/{thread_id}/context", {**WINDOW, "system": SYSTEM}, format="json"
    )
    if response.status_code != 200:
        raise RuntimeError(f"context answered {response.status_code}: {response.data}")
    _append(
        client,
        thread_id,
        "assistant",
        assistant_turn(index),
        assembly_id=response.data["assembly_id"],
    )
    return {
        "memo_status": response.data["memo_status"],
        "lost": response.data["memo_lag"]["turns"],
    }


def _conversation(run: Run, key: str, thread_id: str, turns: int, think: float) -> None:
    from django.db import connection

    client = _client(key)
    try:
        for index in range(turns):
            if think:
                time.sleep(think)
            run.record(_turn(client, thread_id, index))
    finally:
        connection.close()


def _drive(run: Run, key: str, conversations: int, turns: int, think: float) -> None:
    from threads.models import Thread

    client = _client(key)
    for number in range(conversations):
        response = client.post(
            "/api/v1/threads",
            {"user_ref": f"{run.layout}-{run.lead}-{run.workload}-{number}"},
            format="json",
        )
        run.threads.append(Thread.objects.get(public_id=response.data["id"]))
    if conversations == 1:
        _conversation(run, key, run.threads[0].public_id, turns, think)
        return
    pool = [
        threading.Thread(target=_conversation, args=(run, key, t.public_id, turns, think))
        for t in run.threads
    ]
    for worker in pool:
        worker.start()
    for worker in pool:
        worker.join()


def _drain(run: Run) -> None:
    """Wait until the run's memos are written (so the next layout starts clean)."""
    from compaction.models import Summary

    deadline = time.monotonic() + DRAIN_TIMEOUT
    while Summary.objects.filter(thread__in=run.threads, status="pending").exists():
        if time.monotonic() > deadline:
            print(
                f"  ({run.layout}/{run.lead}/{run.workload}: memos still pending after the drain)"
            )
            return
        time.sleep(0.5)
    time.sleep(2)  # the last memo's scoring, on the bulk queue


# --- the report -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Lag:
    turns: list[int]
    seconds: list[float]


def memo_lags(run: Run) -> Lag:
    """Per written memo: the thread's user turns and the seconds between its request and its
    write (from the audit log: ``summary.requested`` and ``summary.written``)."""
    from auditlog.models import AuditEvent
    from threads.models import Message

    turns, seconds = [], []
    for thread in run.threads:
        events = AuditEvent.objects.filter(
            thread_public_id=thread.public_id,
            action__in=["summary.requested", "summary.written"],
        ).values_list("action", "object_ids", "created_at")
        requested, written = {}, {}
        for action, ids, at in events:
            (requested if action == "summary.requested" else written)[ids[0]] = at
        for public_id, done in written.items():
            asked = requested.get(public_id)
            if asked is None:
                continue
            seconds.append((done - asked).total_seconds())
            turns.append(
                Message.objects.filter(
                    thread=thread, role="user", created_at__gt=asked, created_at__lte=done
                ).count()
            )
    return Lag(turns, seconds)


def percentile(values: Sequence[float], share: float) -> float:
    if not values:
        return 0.0
    if len(values) == 1:
        return float(values[0])
    return statistics.quantiles(values, n=100, method="inclusive")[round(share * 100) - 1]


def report(run: Run) -> dict[str, Any]:
    from compaction.models import Summary

    contexts = run.contexts
    lost = [c["lost"] for c in contexts if c["lost"]]
    lag = memo_lags(run)
    written = Summary.objects.filter(thread__in=run.threads, status="ready")
    scored = written.filter(scores__has_key="scorer").count()
    return {
        "layout": run.layout,
        "lead": run.lead,
        "workload": run.workload,
        "contexts": len(contexts),
        "lost": len(lost),
        "lost_max": max(lost, default=0),
        "pending": sum(c["memo_status"] == "pending" for c in contexts) / max(1, len(contexts)),
        "memos": written.count(),
        "lag_turns": (percentile(lag.turns, 0.5), percentile(lag.turns, 0.95)),
        "lag_seconds": (percentile(lag.seconds, 0.5), percentile(lag.seconds, 0.95)),
        "scored": scored,
        "skipped": written.count() - scored,
    }


def print_table(rows: list[dict[str, Any]]) -> None:
    header = (
        f"{'layout':<10} {'lead':<5} {'workload':<13} {'contexts':>8} {'lost middle':>14} "
        f"{'pending':>8} {'memos':>6} {'lag turns p50/p95':>18} {'lag s p50/p95':>15} "
        f"{'scored/skipped':>15}"
    )
    print(header)
    print("-" * len(header))
    for row in rows:
        lost = f"{row['lost']} (max {row['lost_max']})"
        turns = f"{row['lag_turns'][0]:.0f} / {row['lag_turns'][1]:.0f}"
        seconds = f"{row['lag_seconds'][0]:.2f} / {row['lag_seconds'][1]:.2f}"
        print(
            f"{row['layout']:<10} {row['lead']:<5} {row['workload']:<13} {row['contexts']:>8} "
            f"{lost:>14} "
            f"{row['pending']:>8.1%} {row['memos']:>6} {turns:>18} {seconds:>15} "
            f"{row['scored']:>7}/{row['skipped']:<7}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=1000, help="back-to-back turns")
    parser.add_argument("--threads", type=int, default=8, help="parallel conversations")
    parser.add_argument("--parallel-turns", type=int, default=100, help="turns each")
    parser.add_argument("--think", type=float, default=1.0, help="seconds before each turn")
    parser.add_argument("--layouts", default="shared,separated")
    parser.add_argument("--lead", default="off,on", help="memo lead: off, on, or both")
    args = parser.parse_args()

    with bench_database(keep_redis=True) as vendor:
        from convmem.tenancy import tenant_create

        broker = "redis" if os.environ.get("REDIS_URL") else "filesystem"
        print(f"memo pace on {vendor} + {broker} broker, embedded summarizer")
        _, _, key = tenant_create(name="pace")
        rows = []
        for layout in args.layouts.split(","):
            for lead in args.lead.split(","):
                with workers(layout, lead):
                    for workload, conversations, turns, think in (
                        ("back-to-back", 1, args.turns, 0.0),
                        ("parallel", args.threads, args.parallel_turns, args.think),
                    ):
                        run = Run(layout, lead, workload)
                        started = time.monotonic()
                        _drive(run, key, conversations, turns, think)
                        took = time.monotonic() - started
                        _drain(run)
                        rows.append(report(run))
                        done = f"{len(run.contexts)} turns in {took:.0f} s"
                        print(f"  {layout}/{lead}/{workload}: {done}")
        print()
        print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
