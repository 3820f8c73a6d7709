"""Memos keep pace: a real worker writes them while a few conversations go on turn by turn
through the API, in a window small enough that each rolls several memos, and no model input
loses the middle (``memo_lag``: nothing newer than the memo shown is left out).

The conversations go round-robin, one turn each (append the user turn, assemble the context,
append the answer), and between rounds the client gives the worker the time a user takes to
read and type: until no memo of these threads is pending, at most ``THINK_SECONDS``. A worker
that cannot write a memo in that time (memos queued behind bulk work, say) fails the test; a
worker that keeps up never makes an input lose the middle. Nothing here asserts a timing.
"""

from itertools import count

import pytest

from compaction.models import Summary
from tests.compaction.helpers import context_url, turn_text, wait_for
from tests.conftest import TenantKit, make_thread
from threads.models import Thread

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

THREADS = 3
ROUNDS = 30  # 60 messages a thread: several memos at this window
WINDOW = {"window_tokens": 1200, "reserve_tokens": 100}
THINK_SECONDS = 30.0
_keys = count()


def _append(kit: TenantKit, thread: Thread, role: str, content: str, **extra: str) -> None:
    response = kit.client.post(
        f"/api/v1/threads/{thread.public_id}/messages",
        {"role": role, "content": content, **extra},
        format="json",
        HTTP_IDEMPOTENCY_KEY=f"pace-{next(_keys)}",
    )
    assert response.status_code == 201, response.data


def _turn(kit: TenantKit, thread: Thread, index: int) -> dict:
    """One turn as a chat app takes it: the user's message, the model input, the answer."""
    _append(kit, thread, "user", turn_text(2 * index, "user"))
    context = kit.client.post(context_url(thread), WINDOW, format="json")
    assert context.status_code == 200, context.data
    answer = turn_text(2 * index + 1, "assistant")
    _append(kit, thread, "assistant", answer, assembly_id=context.data["assembly_id"])
    return context.data


def _none_pending(threads: list[Thread]) -> bool:
    return not Summary.objects.filter(thread__in=threads, status="pending").exists()


def test_no_input_loses_the_middle_while_a_real_worker_writes_the_memos(acme, celery_worker):
    threads = [make_thread(acme.tenant, user_ref=f"pace-{i}") for i in range(THREADS)]
    contexts = []

    for index in range(ROUNDS):
        contexts += [_turn(acme, thread, index) for thread in threads]
        wait_for(lambda: _none_pending(threads), timeout=THINK_SECONDS)

    lost = [c["memo_lag"] for c in contexts if c["memo_lag"]["turns"]]
    assert lost == []
    assert any(c["memo_status"] == "pending" for c in contexts)  # the worker was needed
    shown = [c for c in contexts if (c["sections"]["memo"] or {}).get("status") == "ready"]
    assert len(shown) > ROUNDS  # and its memos used
    for thread in threads:
        written = Summary.objects.filter(thread=thread, status="ready")
        assert written.count() >= 3  # each conversation rolled several memos
        assert not Summary.objects.filter(thread=thread, status="failed").exists()
