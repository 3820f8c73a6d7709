"""End-to-end load: gunicorn (several workers) on PostgreSQL + Redis + a real Celery worker, many
concurrent clients holding long conversations; then every write is checked against the clients'
own logs.

    .venv/bin/python bench/load.py [--clients 16] [--turns 40] [--duration 60] [--web-workers 4]
        [--web-threads 2]

Loopback only and bounded in time (clients start no new turn after ``--duration`` seconds;
memos are awaited at most ``--memo-wait`` seconds). It creates its own database
``convmem_load`` (``CONVMEM_LOAD_DB`` overrides the name) on the PostgreSQL server of
``DATABASE_URL`` (default ``postgres://postgres@127.0.0.1:5432``) and drops it afterwards,
and starts its own redis-server on a free port: nothing else is touched.

Each client, on a thread of its own (half of them as acme, half as globex), creates a thread and
then, turn after turn: appends a user message, asks for context (a small window, so threads go
over budget and need memos), appends the assistant answer with the ``assembly_id`` it got;
sometimes it retries an append with the same ``Idempotency-Key`` (which must be replayed), and
sometimes edits its last user message (a new branch). Afterwards, from the database:

- every acknowledged message exists, exactly once (lost: 0, duplicates: 0);
- every retry was replayed (``Idempotent-Replayed: true``, same id);
- no orphan node (each parent in the same thread, one level up);
- every active leaf is the client's last write and its path is the client's branch;
- every thread that went over budget has its memo written (none pending or failed).

Prints throughput — turns per second (a turn: append the question, context, append the answer)
and per CPU core of the machine, which runs every process of the stack — p50/p99 latency per
endpoint and the counts; exits 1 if any check fails.
"""

import argparse
import os
import random
import secrets
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.faults.processes import RedisServer, WebServer  # noqa: E402

DATABASE = os.environ.get("CONVMEM_LOAD_DB", "convmem_load")
BUDGET = {"window_tokens": 1200, "reserve_tokens": 200}
FILLER = (
    "We compared the carriers, the packaging and the insurance terms again, and went through "
    "the delivery options once more before settling anything for this shipment."
)
RETRY_RATE = 0.1
EDIT_RATE = 0.05


# --- the stack ------------------------------------------------------------------------------------


def database_urls() -> tuple[str, str]:
    """(maintenance URL, load database URL) on the PostgreSQL server of DATABASE_URL."""
    base = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres")
    parts = urlsplit(base)
    if not parts.scheme.startswith("postgres"):
        sys.exit("bench/load.py needs PostgreSQL: set DATABASE_URL=postgres://…")
    return (
        urlunsplit(parts._replace(path="/postgres")),
        urlunsplit(parts._replace(path=f"/{DATABASE}")),
    )


def recreate_database(maintenance_url: str, *, drop_only: bool = False) -> None:
    with psycopg.connect(maintenance_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")
        if not drop_only:
            conn.execute(f"CREATE DATABASE {DATABASE}")


def manage(env: dict[str, str], *args: str) -> str:
    result = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=600,
    )
    if result.returncode != 0:
        sys.exit(f"manage.py {' '.join(args)} failed:\n{result.stderr[-4000:]}")
    return result.stdout


ALL_QUEUES = "memos,bulk,erasure,generation,webhooks,celery"


def start_worker(
    env: dict[str, str],
    log: Path,
    *,
    queues: str = ALL_QUEUES,
    beat: bool = True,
    concurrency: int = 2,
    loglevel: str = "WARNING",
) -> subprocess.Popen[bytes]:
    """A Celery worker (its own session: ``os.killpg`` reaches its pool) consuming ``queues``,
    with beat unless ``beat`` is False (one beat per stack). At ``loglevel`` INFO its log says
    `` ready.`` once it consumes."""
    with log.open("wb") as sink:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "convmem",
                "worker",
                *(["--beat"] if beat else []),
                "--queues",
                queues,
                "--concurrency",
                str(concurrency),
                "--loglevel",
                loglevel,
                "--without-gossip",
                "--without-mingle",
            ],
            cwd=ROOT,
            env={**os.environ, **env},
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)


# --- the clients ----------------------------------------------------------------------------------


@dataclass
class Log:
    """What one client did and saw: the ground truth the database is checked against."""

    thread_id: str = ""
    acked: list[str] = field(default_factory=list)
    path: list[str] = field(default_factory=list)
    retries: int = 0
    replayed: int = 0
    over_budget: bool = False
    errors: list[str] = field(default_factory=list)
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))


class Client(threading.Thread):
    def __init__(self, number: int, base_url: str, key: str, args: argparse.Namespace) -> None:
        super().__init__(daemon=True)
        self.number = number
        self.api = f"{base_url}/api/v1"
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {key}"
        self.args = args
        self.random = random.Random(number)
        self.log = Log()

    def call(self, name: str, method: str, url: str, body: Any, key: str | None = None) -> Any:
        headers = {"Idempotency-Key": key} if key else {}
        started = time.perf_counter()
        try:
            response = self.session.request(
                method, self.api + url, json=body, headers=headers, timeout=30
            )
        except requests.RequestException as error:
            self.log.errors.append(f"{name}: {error}")
            return None
        self.log.latencies[name].append(time.perf_counter() - started)
        if response.status_code >= 300:
            self.log.errors.append(f"{name}: {response.status_code} {response.text[:200]}")
            return None
        return response

    def append(self, name: str, body: dict[str, Any], key: str) -> str | None:
        url = f"/threads/{self.log.thread_id}/messages"
        response = self.call(name, "POST", url, body, key)
        if response is None:
            return None
        message_id = response.json()["id"]
        self.log.acked.append(message_id)
        if self.random.random() < RETRY_RATE:
            # The client did not see the answer (it says): it sends the same request again.
            self.log.retries += 1
            again = self.call("retry", "POST", url, body, key)
            if again is not None and (
                again.headers.get("Idempotent-Replayed") == "true"
                and again.json()["id"] == message_id
            ):
                self.log.replayed += 1
        return message_id

    def run(self) -> None:
        created = self.call(
            "threads_create", "POST", "/threads", {"user_ref": f"load-user-{self.number}"}
        )
        if created is None:
            return
        self.log.thread_id = created.json()["id"]
        deadline = time.monotonic() + self.args.duration
        for turn in range(self.args.turns):
            if time.monotonic() > deadline or self.log.errors:
                break
            self.turn(turn)

    def turn(self, turn: int) -> None:
        prefix = f"c{self.number}-t{turn}"
        question = (
            f"Client {self.number}, turn {turn}: where is order ORD-{self.number}-{turn} "
            f"for ${turn}.{self.number:02d}? {FILLER}"
        )
        user_id = self.append("append_user", {"role": "user", "content": question}, f"{prefix}-u")
        if user_id is None:
            return
        self.log.path.append(user_id)
        context = self.call("context", "POST", f"/threads/{self.log.thread_id}/context", BUDGET)
        if context is None:
            return
        data = context.json()
        self.log.over_budget |= data["memo_status"] in ("pending", "ready")
        answer = {
            "role": "assistant",
            "content": f"Order ORD-{self.number}-{turn} ships on day {turn % 28 + 1}. {FILLER}",
            "assembly_id": data["assembly_id"],
        }
        answer_id = self.append("append_assistant", answer, f"{prefix}-a")
        if answer_id is None:
            return
        self.log.path.append(answer_id)
        if turn and self.random.random() < EDIT_RATE:
            self.edit(user_id, prefix)

    def edit(self, user_id: str, prefix: str) -> None:
        """Rewrite the last question: a sibling branch that becomes the active leaf."""
        url = f"/threads/{self.log.thread_id}/messages/{user_id}/edit"
        body = {"content": f"Edited by client {self.number} ({prefix}): cancel it, please?"}
        response = self.call("edit", "POST", url, body, f"{prefix}-e")
        if response is None:
            return
        edited = response.json()["id"]
        self.log.acked.append(edited)
        self.log.path = [*self.log.path[: self.log.path.index(user_id)], edited]


# --- verification ---------------------------------------------------------------------------------


def verify(logs: list[Log], memo_wait: float) -> dict[str, Any]:
    """Check the database against the clients' logs (Django ORM on the load database)."""
    from django.db.models import F, Q

    from compaction.models import Summary
    from threads.models import Message, Thread

    acked = [message_id for log in logs for message_id in log.acked]
    threads = {
        t.public_id: t for t in Thread.objects.filter(public_id__in=[x.thread_id for x in logs])
    }
    found = set(Message.objects.filter(public_id__in=acked).values_list("public_id", flat=True))
    stored = defaultdict(int)
    for thread_id in (
        Message.objects.filter(thread__in=threads.values())
        .exclude(role="root")
        .values_list("thread__public_id", flat=True)
    ):
        stored[thread_id] += 1
    duplicates = sum(
        max(0, stored[log.thread_id] - len(log.acked)) for log in logs if log.thread_id
    )
    orphans = (
        Message.objects.filter(thread__in=threads.values())
        .exclude(role="root")
        .filter(
            Q(parent__isnull=True)
            | ~Q(parent__thread=F("thread"))
            | ~Q(depth=F("parent__depth") + 1)
        )
        .count()
    )
    bad_leaves = 0
    for log in logs:
        thread = threads.get(log.thread_id)
        if thread is None or not log.path:
            continue
        parents = dict(Message.objects.filter(thread=thread).values_list("id", "parent_id"))
        public = dict(Message.objects.filter(thread=thread).values_list("id", "public_id"))
        walked, node = [], thread.active_leaf_id
        while node is not None and parents.get(node) is not None:
            walked.append(public[node])
            node = parents[node]
        if walked[::-1] != log.path:
            bad_leaves += 1

    over_budget = [threads[log.thread_id] for log in logs if log.over_budget]
    deadline = time.monotonic() + memo_wait
    waited = time.monotonic()
    while Summary.objects.filter(thread__in=over_budget, status="pending").exists():
        if time.monotonic() > deadline:
            break
        time.sleep(0.5)
    waited = time.monotonic() - waited
    with_memo = set(
        Summary.objects.filter(thread__in=over_budget, status="ready").values_list(
            "thread_id", flat=True
        )
    )
    return {
        "acknowledged": len(acked),
        "lost": len(set(acked) - found),
        "duplicates": duplicates,
        "orphans": orphans,
        "bad_leaves": bad_leaves,
        "over_budget": len(over_budget),
        "memos_missing": sum(1 for thread in over_budget if thread.pk not in with_memo),
        "memos_pending": Summary.objects.filter(status="pending").count(),
        "memos_failed": Summary.objects.filter(status="failed").count(),
        "memos_ready": Summary.objects.filter(status="ready").count(),
        "memo_wait": waited,
    }


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def report(logs: list[Log], elapsed: float, checks: dict[str, Any]) -> bool:
    latencies: dict[str, list[float]] = defaultdict(list)
    for log in logs:
        for name, values in log.latencies.items():
            latencies[name].extend(values)
    requests_done = sum(len(v) for v in latencies.values())
    errors = [error for log in logs for error in log.errors]
    retries = sum(log.retries for log in logs)
    replayed = sum(log.replayed for log in logs)

    turns = len(latencies["append_assistant"])
    cores = os.cpu_count() or 1
    print(f"\nclients: {len(logs)}   wall time: {elapsed:.1f} s")
    print(f"requests: {requests_done}   throughput: {requests_done / elapsed:.1f} req/s")
    print(
        f"turns: {turns}   {turns / elapsed:.1f} turns/s   {turns / elapsed / cores:.1f} turns/s "
        f"per core ({cores} cores, shared by the web workers, the Celery worker, PostgreSQL, "
        f"Redis and the clients)"
    )
    print(
        f"messages acknowledged: {checks['acknowledged']}"
        f" ({checks['acknowledged'] / elapsed:.1f}/s)"
    )
    print(f"\n{'endpoint':<18}{'count':>8}{'p50 ms':>10}{'p99 ms':>10}{'max ms':>10}")
    for name in sorted(latencies):
        values = latencies[name]
        print(
            f"{name:<18}{len(values):>8}{1000 * statistics.median(values):>10.1f}"
            f"{1000 * percentile(values, 0.99):>10.1f}{1000 * max(values):>10.1f}"
        )
    print()
    print(f"errors: {len(errors)}")
    for error in errors[:5]:
        print(f"  {error}")
    print(f"messages lost: {checks['lost']}")
    print(f"duplicates: {checks['duplicates']}")
    print(f"retries replayed: {replayed}/{retries}")
    print(f"orphan nodes: {checks['orphans']}")
    print(f"active leaves off the client's branch: {checks['bad_leaves']}")
    print(
        f"over-budget threads: {checks['over_budget']}, without a written memo: "
        f"{checks['memos_missing']} (memos ready {checks['memos_ready']}, pending "
        f"{checks['memos_pending']}, failed {checks['memos_failed']}; waited "
        f"{checks['memo_wait']:.1f} s after the clients stopped)"
    )
    return (
        not errors
        and checks["lost"] == 0
        and checks["duplicates"] == 0
        and replayed == retries
        and checks["orphans"] == 0
        and checks["bad_leaves"] == 0
        and checks["memos_missing"] == 0
        and checks["memos_pending"] == 0
        and checks["memos_failed"] == 0
    )


def service_env(database_url: str, redis_url: str, var_dir: Path) -> dict[str, str]:
    """The environment of a production-like deployment on loopback: DEBUG off, a fresh secret
    key, plain HTTP, no rate limit in the way of the load."""
    return {
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "CONVMEM_VAR_DIR": str(var_dir),
        "DEBUG": "false",
        "SECURE_SSL_REDIRECT": "false",  # plain HTTP on loopback
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "127.0.0.1",
        "API_RATE": "1000000/min",
        "LOG_LEVEL": "WARNING",
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--turns", type=int, default=40, help="user turns per client (at most)")
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of client load")
    parser.add_argument("--web-workers", type=int, default=4)
    parser.add_argument("--web-threads", type=int, default=2, help="threads per web worker")
    parser.add_argument("--memo-wait", type=float, default=60.0)
    args = parser.parse_args()

    maintenance_url, load_url = database_urls()
    var_dir = Path(tempfile.mkdtemp(prefix="convmem-load-"))
    redis = RedisServer()
    env = service_env(load_url, redis.url, var_dir)
    os.environ.update(env)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "convmem.settings")
    web = worker = None
    ok = False
    recreate_database(maintenance_url)
    try:
        redis.start()
        manage(env, "migrate", "--noinput")
        keys = [manage(env, "create_tenant", name).split()[-1] for name in ("acme", "globex")]
        web = WebServer(env, workers=args.web_workers, threads=args.web_threads).start()
        worker = start_worker(env, var_dir / "worker.log")
        print(
            f"gunicorn: {args.web_workers} workers x {args.web_threads} threads on {web.url}; "
            "celery worker with "
            f"beat; redis on :{redis.port}; database {DATABASE}"
        )

        clients = [Client(n, web.url, keys[n % 2], args) for n in range(args.clients)]
        started = time.monotonic()
        for client in clients:
            client.start()
        for client in clients:
            client.join(args.duration + 120)
        elapsed = time.monotonic() - started

        import django

        django.setup()
        logs = [client.log for client in clients]
        checks = verify(logs, args.memo_wait)
        ok = report(logs, elapsed, checks)
    finally:
        if worker is not None:
            stop(worker)
        if web is not None:
            web.stop()
        redis.stop()
        if "django.db" in sys.modules:
            sys.modules["django.db"].connections.close_all()
        recreate_database(maintenance_url, drop_only=True)
    print("\nOK" if ok else "\nFAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
