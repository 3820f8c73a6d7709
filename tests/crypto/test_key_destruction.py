"""Erasing a subject destroys its data key (first, then the rows); the proof records it.
Redacting one message, or deleting one of several threads of a user, keeps the key."""

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from audit.deletion import (
    deletion_request_approve,
    deletion_request_execute,
    deletion_request_file,
    deletion_request_perform,
)
from audit.models import DeletionRequest
from audit.retention import retention_apply
from audit.services import retention_policy_set
from compaction.models import Summary
from convmem import crypto
from convmem.models import DataKey
from tests.audit.conftest import OPERATOR, officer  # noqa: F401  (a fixture)
from tests.conftest import SYSTEM, TenantKit
from threads import services
from threads.models import Message, Thread

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def sealing(settings: Any) -> None:
    settings.CONVMEM_ENCRYPT_CONTENT = True


def _thread(acme: TenantKit, user_ref: str, text: str = "canary") -> Thread:
    thread = services.thread_create(tenant=acme.tenant, actor=SYSTEM, user_ref=user_ref)
    services.message_append(thread=thread, actor=SYSTEM, role="user", content=text)
    return thread


def _live(key_id: str) -> bool:
    return DataKey.objects.get(key_id=key_id).destroyed_at is None


def _delete(acme: TenantKit, thread: Thread) -> DeletionRequest:
    response = acme.client.delete(f"/api/v1/threads/{thread.public_id}")
    assert response.status_code == 200, response.content
    return DeletionRequest.objects.filter(thread=thread).latest("pk")


def test_deleting_a_thread_without_user_destroys_its_key_and_the_proof_says_when(
    acme: TenantKit,
) -> None:
    thread = _thread(acme, "")
    key_id = thread.data_key_id

    request = _delete(acme, thread)

    destroyed = DataKey.objects.get(key_id=key_id)
    assert destroyed.wrapped is None
    assert request.proof["keys_destroyed"] == [
        {"key_id": key_id, "destroyed_at": destroyed.destroyed_at.isoformat()}
    ]


def test_the_users_key_goes_with_their_last_thread(acme: TenantKit) -> None:
    first, second = _thread(acme, "alice"), _thread(acme, "alice")
    key_id = first.data_key_id
    assert second.data_key_id == key_id

    assert "keys_destroyed" not in _delete(acme, first).proof
    assert _live(key_id)
    assert Message.objects.filter(thread=second).last().content == "canary"

    assert _delete(acme, second).proof["keys_destroyed"][0]["key_id"] == key_id
    assert not _live(key_id)


def test_a_deletion_request_for_a_user_destroys_their_key(
    acme: TenantKit,
    officer: Any,  # noqa: F811
) -> None:
    threads = [_thread(acme, "bob"), _thread(acme, "bob")]
    other = _thread(acme, "carol")
    request = deletion_request_file(tenant=acme.tenant, actor=acme.actor, user_ref="bob")
    deletion_request_approve(request=request, user=officer)
    deletion_request_execute(request=request, user=officer)

    assert deletion_request_perform(request_id=request.pk)

    request.refresh_from_db()
    assert [k["key_id"] for k in request.proof["keys_destroyed"]] == [threads[0].data_key_id]
    assert not _live(threads[0].data_key_id)
    assert _live(other.data_key_id)


def test_redacting_one_message_keeps_the_subjects_key(acme: TenantKit) -> None:
    thread = _thread(acme, "dave")
    message = Message.objects.filter(thread=thread, role="user").get()

    response = acme.client.post(
        f"/api/v1/threads/{thread.public_id}/messages/{message.public_id}/redact", {}, format="json"
    )

    assert response.status_code in (200, 204), response.content
    assert _live(thread.data_key_id)
    assert Message.objects.get(pk=message.pk).erased_at is not None


def test_retention_destroys_the_key_only_once_nothing_of_the_subject_is_left(
    acme: TenantKit,
) -> None:
    old, recent = _thread(acme, "erin"), _thread(acme, "erin")
    Message.objects.filter(thread=old).update(created_at=timezone.now() - timedelta(days=90))
    policy = retention_policy_set(tenant=acme.tenant, actor=OPERATOR, erase_content_after_days=30)

    assert retention_apply(policy=policy).keys_destroyed == []
    assert _live(old.data_key_id)

    Message.objects.filter(thread=recent).update(created_at=timezone.now() - timedelta(days=90))
    run = retention_apply(policy=policy)

    assert [k["key_id"] for k in run.keys_destroyed] == [old.data_key_id]
    assert not _live(old.data_key_id)


def test_a_thread_whose_key_was_destroyed_writes_under_the_subjects_new_key(
    acme: TenantKit,
) -> None:
    thread = _thread(acme, "frank")
    crypto.subject_keys_destroy(tenant_id=acme.tenant.pk, subject="frank")

    said = services.message_append(thread=thread, actor=SYSTEM, role="assistant", content="again")

    thread.refresh_from_db()
    assert _live(thread.data_key_id)
    assert Message.objects.get(pk=said.pk).content == "again"


def test_erasing_sealed_tool_calls_and_memos_after_the_key_is_gone_makes_no_new_key(
    acme: TenantKit,
) -> None:
    from tests.audit.conftest import ready_memo

    thread = _thread(acme, "")
    call = {"id": "call_9", "type": "function"}
    call["function"] = {"name": "lookup", "arguments": '{"q": "secret"}'}
    asked = services.message_append(
        thread=thread, actor=SYSTEM, role="assistant", content="", tool_calls=[call]
    )
    answered = services.message_append(
        thread=thread, actor=SYSTEM, role="tool", content="found", tool_call_id="call_9"
    )
    memo = ready_memo(thread, [asked, answered], "memo: secret lookup")
    assert Summary.objects.get(pk=memo.pk).text == "memo: secret lookup"
    assert "secret" not in Summary.objects.filter(pk=memo.pk).values_list("text", flat=True)[0]

    _delete(acme, thread)

    assert DataKey.objects.filter(subject=f"thread:{thread.public_id}").count() == 1
    erased = Message.objects.get(pk=asked.pk)
    assert erased.tool_calls[0]["function"] == {"name": "lookup", "arguments": "[erased]"}
    assert {s.text for s in thread.summaries.all()} == {"[erased]"}
