"""curator/4 through the API, with memos written by a real worker: between block boundaries,
each model input's stable prefix is the previous one's, then the previous turn and its answer
(what changes every turn, such as recalled excerpts, comes after it, before the new turn); the
response says which leading messages are the stable prefix."""

import hashlib
import json

import pytest

from compaction.models import AssemblyRecord, Summary
from tests.compaction.helpers import post_context, turn_text, wait_for
from tests.conftest import make_thread

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

BUDGET = {"window_tokens": 1500, "reserve_tokens": 200, "system": "Answer briefly."}


def prefix_hash(messages: list[dict]) -> str:
    text = json.dumps(messages, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def append(kit, thread, index: int, role: str, **extra) -> dict:
    response = kit.client.post(
        f"/api/v1/threads/{thread.public_id}/messages",
        {"role": role, "content": turn_text(index, role), **extra},
        format="json",
        HTTP_IDEMPOTENCY_KEY=f"{thread.public_id}-{index}",
    )
    assert response.status_code == 201, response.data
    return response.data


def test_inputs_extend_each_other_between_block_boundaries(acme, celery_worker):
    thread = make_thread(acme.tenant)
    previous = None
    boundaries = extended = 0
    for index in range(0, 120, 2):
        append(acme, thread, index, "user")
        context = post_context(acme.client, thread, **BUDGET).data
        messages, prefix = context["messages"], context["prefix"]

        stable = messages[: prefix["messages"]]
        assert prefix["hash"] == prefix_hash(stable)
        # After the prefix: recalled excerpts (if any), then the new turn, last.
        assert messages[-1] == {"role": "user", "content": turn_text(index, "user")}
        assert all(m["role"] == "system" for m in messages[prefix["messages"] : -1])
        record = AssemblyRecord.objects.get(public_id=context["assembly_id"])
        assert record.plan["prefix"]["hash"] == prefix["hash"]
        if previous is not None:
            cached = [*previous["stable"], previous["turn"], previous["answer"]]
            if stable[: len(cached)] == cached:
                extended += 1
            else:
                boundaries += 1
                assert context["sections"]["memo"] is not None  # the prefix moves to a memo
        answer_body = append(
            acme, thread, index + 1, "assistant", assembly_id=context["assembly_id"]
        )
        previous = {
            "stable": stable,
            "turn": messages[-1],
            "answer": {"role": "assistant", "content": answer_body["content"]},
        }
        # A worker that keeps pace: the memo asked for is written before the next turn.
        wait_for(lambda: not Summary.objects.filter(thread=thread, status="pending").exists())

    assert Summary.objects.filter(thread=thread, status="ready").count() >= 2
    assert boundaries >= 1
    # At this small window a block is a few turns; most inputs extend the one before.
    assert extended >= 3 * boundaries
