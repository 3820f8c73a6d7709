"""Append latency through the API: a thread of 100 vs 100,000 messages.

Each timed call is a full ``POST /api/v1/threads/{id}/messages`` through Django and DRF
(auth, Idempotency-Key claim, thread lock, insert, leaf move, audit event, response). After
each call, off the clock, the thread's active leaf is put back where it was, so every append
lands at the same depth (100 or 100,000). The ratio of the medians must be <= 1.5.

    .venv/bin/python bench/append.py                      # SQLite (temporary file)
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/x .venv/bin/python bench/append.py
"""

import sys
from collections.abc import Callable
from itertools import count
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import bench_database, build_data_set, interleaved, report

REPETITIONS = 500


def main() -> int:
    with bench_database() as backend:
        from rest_framework.test import APIClient

        from convmem.tenancy import api_key_create
        from threads.models import Thread

        data = build_data_set()
        _, key = api_key_create(tenant=data.tenant, name="bench")
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
        keys = count()
        leaves = {data.small.pk: data.small.active_leaf_id, data.big.pk: data.big.active_leaf_id}

        def appender(thread: Thread) -> Callable[[], None]:
            url = f"/api/v1/threads/{thread.public_id}/messages"

            def append() -> None:
                r = client.post(
                    url,
                    {"role": "user", "content": "How long does an append take?"},
                    format="json",
                    HTTP_IDEMPOTENCY_KEY=f"bench-{next(keys)}",
                )
                assert r.status_code == 201, r.content

            return append

        def reset_leaves() -> None:
            for pk, leaf_id in leaves.items():
                Thread.objects.filter(pk=pk).update(active_leaf_id=leaf_id)

        small, big = interleaved(
            appender(data.small),
            appender(data.big),
            repetitions=REPETITIONS,
            warmup=20,
            untimed=reset_leaves,
        )
        ok = report("append through the API", backend, small, big)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
