"""What /respond adds over calling the model directly, against the local streaming server.

The model is ``tests/support/chat_server.py`` on loopback, streaming a 200-word answer one word
per chunk (``--chunk-delay`` seconds apart, default 1 ms). Each round, interleaved:

- direct: the OpenAI SDK (one client, kept between rounds as an app would keep it) streams a
  completion of the same input from the server: the messages convmem sent the model in that
  round (the assembled history, not only the new turn: an app that called the model directly
  would send its history too, and the server's time to its first chunk grows with the body);
- direct over HTTP: the same request posted with httpx (one client) and its stream read line
  by line: the wire and the server alone, without the SDK's own work (building the request
  from the messages, an object per chunk), which grows with the input too;
- convmem: ``POST /api/v1/threads/{id}/respond`` with ``stream: true`` through the Django
  stack in process (auth, idempotency, append the user turn, assemble its input, ask the
  model, relay the tokens, store the answer), read event by event;
- worker (with ``--worker``, which needs ``REDIS_URL``): the same call with the answer
  generated in a real Celery worker on the ``generation`` queue and relayed from its Redis
  stream (``CONVMEM_RESPOND_IN_WORKER``), as production runs it.

The thread's memos are written as in production, by a real worker on the ``memos`` queue,
between rounds: the worker is resumed after each round until no memo is pending, then paused
(``SIGSTOP``) while the next round is timed, so on this shared 2-core machine its work does
not land inside the timings. Without memos (``--no-memo-worker``, the condition of the
figures before 6 December 2026) every context read walks its whole lookahead looking for a
ready memo that never comes: about 3.5 ms more per turn than a thread whose memos keep pace.

Printed: p50 time to the first token (direct: first content chunk; convmem: first ``token``
event) and to the end (convmem: the ``done`` event, after the answer is stored), the
difference and the ratio. Limits: first token <= 10 ms over direct in the request, <= 20 ms
through the worker; total <= 1.2x. ``--busy N`` keeps N cores busy with spinning processes
while it runs (CPU contention: the worker's path crosses more processes, each of which must be
scheduled).

    .venv/bin/python bench/respond_overhead.py [--rounds 60]     # SQLite (temporary file)
    DATABASE_URL=postgres://… CONVMEM_BENCH_DB=… .venv/bin/python bench/respond_overhead.py
    DATABASE_URL=postgres://… REDIS_URL=redis://… CONVMEM_BENCH_DB=… \
        .venv/bin/python bench/respond_overhead.py --worker
"""

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import bench_database
from bench.long_conversation import SYSTEM, user_turn
from tests.support.chat_server import ChatServer

MODEL = "bench-chat-model"
WORDS = 200
MAX_FIRST_TOKEN_MS = {"convmem": 10.0, "worker": 20.0}
MAX_TOTAL_RATIO = 1.2


def direct(client, messages: list[dict[str, str]]) -> tuple[float, float]:
    """(seconds to the first content chunk, seconds to the end of the stream)."""
    started = time.perf_counter()
    first = None
    stream = client.chat.completions.create(
        model=MODEL, messages=messages, stream=True, stream_options={"include_usage": True}
    )
    for chunk in stream:
        if first is None and chunk.choices and chunk.choices[0].delta.content:
            first = time.perf_counter() - started
    return first or 0.0, time.perf_counter() - started


def direct_http(client, messages: list[dict[str, str]]) -> tuple[float, float]:
    """(seconds to the first content chunk, seconds to the end of the stream), over HTTP."""
    body = {
        "model": MODEL,
        "messages": messages,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    started = time.perf_counter()
    first = None
    with client.stream("POST", "chat/completions", json=body) as response:
        for line in response.iter_lines():
            if first is None and line.startswith("data: {"):
                choices = json.loads(line[6:]).get("choices")
                if choices and choices[0].get("delta", {}).get("content"):
                    first = time.perf_counter() - started
    return first or 0.0, time.perf_counter() - started


def through_convmem(client, thread_id: str, key: str, content: str) -> tuple[float, float]:
    """(seconds to the first ``token`` event, seconds to ``done``)."""
    started = time.perf_counter()
    response = client.post(
        f"/api/v1/threads/{thread_id}/respond",
        {"content": content, "system": SYSTEM, "stream": True},
        format="json",
        HTTP_IDEMPOTENCY_KEY=key,
    )
    first = None
    done = False
    for chunk in response.streaming_content:
        # An event is one chunk; relayed events start with their ``id:`` line.
        if first is None and b"event: token" in chunk:
            first = time.perf_counter() - started
        done = done or b"event: done" in chunk
    if not done:
        raise SystemExit(f"respond did not finish: {chunk!r}")
    return first or 0.0, time.perf_counter() - started


def _resume(worker) -> None:
    os.killpg(worker.process.pid, signal.SIGCONT)


def _memos_written(worker, timeout: float = 30.0) -> None:
    """Resume the memo worker until no memo of the bench's thread is pending (or ``timeout``),
    then pause it for the next timed round."""
    from compaction.models import Summary

    _resume(worker)
    deadline = time.monotonic() + timeout
    while Summary.objects.filter(status="pending").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.2)  # its last task's acknowledgement and bookkeeping
    os.killpg(worker.process.pid, signal.SIGSTOP)


@contextmanager
def _busy_core() -> Iterator[None]:
    """A process that spins on one core while the bench runs: the same rounds under CPU
    contention, as on a host whose other work takes a core."""
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        yield
    finally:
        spinner.kill()
        spinner.wait()


def p50_ms(values: list[float]) -> float:
    return statistics.median(values) * 1e3


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--chunk-delay", type=float, default=0.001)
    parser.add_argument("--worker", action="store_true", help="also through a real worker")
    parser.add_argument(
        "--no-memo-worker", action="store_true", help="no memos: every read walks its lookahead"
    )
    parser.add_argument(
        "--busy", type=int, default=0, help="processes that keep a core busy while it runs"
    )
    args = parser.parse_args()
    if args.worker and not os.environ.get("REDIS_URL"):
        raise SystemExit("--worker needs REDIS_URL")
    with ChatServer() as server:
        server.configure(
            reply=" ".join(f"word{i}" for i in range(WORDS)), chunk_delay=args.chunk_delay
        )
        os.environ.update(CONVMEM_CHAT_BASE_URL=server.base_url, CONVMEM_CHAT_MODEL=MODEL)
        with bench_database(keep_redis=args.worker) as database, ExitStack() as stack:
            for _ in range(args.busy):
                stack.enter_context(_busy_core())
            import httpx
            import openai
            from django.conf import settings
            from rest_framework.test import APIClient

            from convmem.tenancy import tenant_create
            from threads.models import Thread

            _, _, key = tenant_create(name="bench-respond")
            client = APIClient()
            client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
            thread_id = client.post("/api/v1/threads", {"user_ref": "bench"}, format="json")
            thread_id = thread_id.data["id"]
            modes = {"convmem": False}
            memo_worker = None
            if not args.no_memo_worker:
                from tests.support.worker import start_worker

                memo_worker = stack.enter_context(
                    start_worker({"CONN_MAX_AGE": "60"}, queues=["memos"])
                )
                stack.callback(_resume, memo_worker)
            if args.worker:
                from tests.support.worker import start_worker

                # Generation only: memo writing and scoring would compete for the same cores
                # and slow both paths alike (their tasks wait in Redis, purged at the next start).
                # Connections kept between tasks, as deployed (``CONN_MAX_AGE`` default 60; the
                # test worker closes them, which would add a PostgreSQL backend start per run).
                worker_env = {"CONVMEM_RESPOND_IN_WORKER": "1", "CONN_MAX_AGE": "60"}
                stack.enter_context(start_worker(worker_env, queues=["generation"]))
                modes["worker"] = True
            times: dict[str, tuple[list[float], list[float]]] = {
                name: ([], []) for name in ("direct", "direct_http", *modes)
            }
            model = openai.OpenAI(base_url=server.base_url, api_key="not-needed")
            wire = stack.enter_context(httpx.Client(base_url=server.base_url + "/", timeout=30))
            for index in range(args.rounds + 5):
                content = user_turn(index)
                if memo_worker is not None:
                    _memos_written(memo_worker)
                measured = []
                for name, in_worker in modes.items():
                    settings.CONVMEM_RESPOND_IN_WORKER = in_worker
                    key = f"{name}-{index}"
                    measured.append((name, through_convmem(client, thread_id, key, content)))
                    if name == "convmem":
                        model_input = server.requests[-1].body["messages"]
                measured.append(("direct", direct(model, model_input)))
                measured.append(("direct_http", direct_http(wire, model_input)))
                if index < 5:
                    continue  # warm-up: connections, caches, the first memo requests
                for name, (first, total) in measured:
                    times[name][0].append(first)
                    times[name][1].append(total)
            turns = Thread.objects.get(public_id=thread_id).active_leaf.depth
            from compaction.models import Summary

            memos = Summary.objects.filter(status="ready").count()

    over = {
        name: (
            p50_ms(times[name][0]) - p50_ms(times["direct"][0]),
            p50_ms(times[name][1]) / p50_ms(times["direct"][1]),
        )
        for name in modes
    }
    print(
        f"\n/respond vs the model called directly, {args.rounds} rounds on {database}, "
        f"{WORDS}-word answers, {args.chunk_delay * 1e3:.1f} ms between chunks "
        f"({turns} messages in the thread at the end, {memos} ready memos"
        f"{f', {args.busy} cores kept busy' if args.busy else ''})"
    )
    print(f"{'':<10}{'first token p50 ms':>20}{'total p50 ms':>15}")
    for name, (first, total) in times.items():
        print(f"{name:<12}{p50_ms(first):>18.1f}{p50_ms(total):>15.1f}")
    for name, (first_over, total_ratio) in over.items():
        print(
            f"{name}: first token +{first_over:.1f} ms (limit {MAX_FIRST_TOKEN_MS[name]:.0f}); "
            f"total {total_ratio:.2f}x (limit {MAX_TOTAL_RATIO})"
        )
    for name in modes:
        wire = p50_ms(times[name][0]) - p50_ms(times["direct_http"][0])
        print(f"{name}: first token +{wire:.1f} ms over the same request posted with httpx")
    within = all(
        f <= MAX_FIRST_TOKEN_MS[name] and r <= MAX_TOTAL_RATIO for name, (f, r) in over.items()
    )
    return 0 if within else 1


if __name__ == "__main__":
    sys.exit(main())
