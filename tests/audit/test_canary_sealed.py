"""The erasure proof of ``test_canary`` with per-subject encryption on (in the service and in
its worker): the canary spreads the same way, but at rest only the columns that are not sealed
hold it in clear (the thread's title and metadata); every other copy — messages, memos, stored
responses, system and retrieved texts, kept inputs — is ciphertext under the subject's key. The
deletion request then destroys the key and erases the rows: no trace in any column or Redis
key, while another subject's sealed data stays readable.

A module of its own: its worker runs with encryption on, and must not share the broker with
``test_canary``'s module-scoped worker (which runs with it off).
"""

import uuid
from typing import Any

import pytest

from audit.models import DeletionRequest
from compaction.models import AssemblyRecord, Summary
from compaction.replay import assembly_replay
from tests.audit.conftest import wait_for
from tests.audit.test_canary import (
    assemble,
    broker_hits,
    converse,
    db_hits,
    subject_erase_by_request,
)
from tests.support.worker import start_worker
from threads.models import Message

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

# Not sealed (see docs/erasure.md, "What is sealed"): erased in clear by the deletion request.
CLEAR_AT_REST = {"threads_thread.title", "threads_thread.metadata"}


def test_with_encryption_the_canary_is_sealed_at_rest_and_erasure_leaves_no_trace(
    acme: Any, settings: Any
) -> None:
    settings.CONVMEM_ENCRYPT_CONTENT = True
    canary = f"CANARY{uuid.uuid4().hex[:12].upper()}"
    bystander = f"BYSTANDER{uuid.uuid4().hex[:12].upper()}"
    with start_worker({"CONVMEM_ENCRYPT_CONTENT": "true"}):
        subject = converse(acme.client, "subject-1", canary)
        other = converse(acme.client, "other-1", bystander)
        for thread, word in ((subject, canary), (other, bystander)):
            assemble(acme.client, thread, word)  # history does not fit: a memo is requested
            wait_for(lambda t=thread: Summary.objects.filter(thread=t, status="ready").exists())
            body = assemble(acme.client, thread, word)  # now uses the memo
            assert body["sections"]["memo"]["status"] == "ready"
        summary = Summary.objects.get(thread=subject, status="ready")
        assert canary in summary.text, "the memo carries the canary (opened with the key)"
        assert set(db_hits(canary)) == CLEAR_AT_REST
        assert set(db_hits(bystander)) == CLEAR_AT_REST

        request = subject_erase_by_request(acme, "subject-1")

    assert db_hits(canary) == {}
    assert broker_hits(canary) == []
    assert Message.objects.filter(thread=subject, erased_at__isnull=True).count() == 1  # root
    proof = DeletionRequest.objects.get(pk=request.pk).proof
    assert [key["key_id"] for key in proof["keys_destroyed"]] == [subject.data_key_id]
    assert proof["counts"]["content_blobs"] == 2
    # The other subject's sealed copies still open, and its inputs still replay.
    said = acme.client.get(f"/api/v1/threads/{other.public_id}/messages").data["results"]
    assert sum(bystander in m["content"] for m in said if isinstance(m["content"], str)) > 0
    assert bystander in Summary.objects.get(thread=other, status="ready").text
    for record in AssemblyRecord.objects.filter(thread=other):
        replay = assembly_replay(assembly=record)
        assert replay.matches, replay.reason
