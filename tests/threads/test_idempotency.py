"""Idempotency-Key: replay the first response, 422 on another body, 409 while in flight."""

from datetime import timedelta

import pytest
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from convmem.db import row_insert_unflushed
from tests.conftest import make_thread
from tests.threads.helpers import Rows, edit_url, error_of, messages_url, post
from threads.idempotency import idempotency_records_purge, request_fingerprint, run_idempotent
from threads.models import IdempotencyRecord, Message

BODY = {"role": "user", "content": "hello"}


def in_flight(tenant, *, key: str, url: str, body: object, age: timedelta = timedelta(0)):
    """The row a request still running (or one that died ``age`` ago) leaves for its key."""
    record = IdempotencyRecord.objects.create(
        tenant=tenant,
        key=key,
        request_hash=request_fingerprint(method="POST", path=url, body=body),
    )
    IdempotencyRecord.objects.filter(pk=record.pk).update(created_at=timezone.now() - age)
    return record


def test_same_key_and_body_replays_the_first_response(acme):
    thread = make_thread(acme.tenant)
    url = messages_url(thread.public_id)

    first = post(acme.client, url, BODY, "k-1")
    rows = Rows.now()
    again = post(acme.client, url, BODY, "k-1")

    assert first.status_code == again.status_code == 201
    assert again.data == first.data
    assert again["Idempotent-Replayed"] == "true"
    assert "Idempotent-Replayed" not in first
    assert Rows.now() == rows
    assert thread.messages.exclude(role="root").count() == 1


def test_replay_survives_later_appends(acme):
    thread = make_thread(acme.tenant)
    url = messages_url(thread.public_id)
    first = post(acme.client, url, BODY, "k-1")
    post(acme.client, url, {"role": "assistant", "content": "later"}, "k-2")

    again = post(acme.client, url, BODY, "k-1")

    assert again.data == first.data
    assert thread.messages.exclude(role="root").count() == 2


def test_same_key_with_another_body_is_422(acme):
    thread = make_thread(acme.tenant)
    url = messages_url(thread.public_id)
    post(acme.client, url, BODY, "k-1")
    rows = Rows.now()

    changed = post(acme.client, url, {"role": "user", "content": "other"}, "k-1")
    elsewhere = post(acme.client, messages_url(make_thread(acme.tenant).public_id), BODY, "k-1")

    assert error_of(changed) == (422, "idempotency_key_reused")
    assert error_of(elsewhere) == (422, "idempotency_key_reused")
    assert Rows.now().messages == rows.messages + 1  # the other thread's hidden root only


def test_key_order_in_the_body_does_not_matter(acme):
    thread = make_thread(acme.tenant)
    url = messages_url(thread.public_id)
    post(acme.client, url, {"role": "user", "content": "x"}, "k-1")

    again = acme.client.post(
        url,
        b'{"content": "x", "role": "user"}',
        content_type="application/json",
        HTTP_IDEMPOTENCY_KEY="k-1",
    )

    assert again.status_code == 201
    assert again["Idempotent-Replayed"] == "true"


def test_key_in_flight_is_409_and_writes_nothing(acme):
    thread = make_thread(acme.tenant)
    url = messages_url(thread.public_id)
    in_flight(acme.tenant, key="busy", url=url, body=BODY)
    rows = Rows.now()

    r = post(acme.client, url, BODY, "busy")

    assert error_of(r) == (409, "idempotency_key_in_flight")
    assert Rows.now() == rows
    assert IdempotencyRecord.objects.get(key="busy").status == "in_flight"


def test_key_in_flight_with_another_body_is_422(acme):
    thread = make_thread(acme.tenant)
    url = messages_url(thread.public_id)
    in_flight(acme.tenant, key="busy", url=url, body={"role": "user", "content": "other"})

    r = post(acme.client, url, BODY, "busy")

    assert error_of(r) == (422, "idempotency_key_reused")


def test_abandoned_key_is_taken_over_after_the_lock_timeout(acme, settings):
    settings.CONVMEM_IDEMPOTENCY_LOCK_SECONDS = 30
    thread = make_thread(acme.tenant)
    url = messages_url(thread.public_id)
    in_flight(acme.tenant, key="died", url=url, body=BODY, age=timedelta(seconds=31))

    r = post(acme.client, url, BODY, "died")
    again = post(acme.client, url, BODY, "died")

    assert r.status_code == 201, r.data
    assert "Idempotent-Replayed" not in r
    assert again.data == r.data
    assert again["Idempotent-Replayed"] == "true"
    record = IdempotencyRecord.objects.get(key="died")
    assert record.status == "completed"
    assert record.response_body == r.data
    assert thread.messages.exclude(role="root").count() == 1


def test_recent_in_flight_key_is_not_taken_over(acme, settings):
    settings.CONVMEM_IDEMPOTENCY_LOCK_SECONDS = 30
    thread = make_thread(acme.tenant)
    url = messages_url(thread.public_id)
    in_flight(acme.tenant, key="slow", url=url, body=BODY, age=timedelta(seconds=20))

    assert error_of(post(acme.client, url, BODY, "slow")) == (409, "idempotency_key_in_flight")


def test_a_failed_request_releases_its_key(acme):
    thread = make_thread(acme.tenant)
    url = messages_url(thread.public_id)
    rows = Rows.now()

    failed = post(acme.client, url, {**BODY, "parent_id": "msg_nope"}, "retry-me")
    assert error_of(failed) == (400, "unknown_message")
    assert Rows.now() == rows

    ok = post(acme.client, url, BODY, "retry-me")
    assert ok.status_code == 201, ok.data
    assert "Idempotent-Replayed" not in ok


def test_keys_are_scoped_per_tenant(acme, globex):
    mine = make_thread(acme.tenant)
    theirs = make_thread(globex.tenant)

    a = post(acme.client, messages_url(mine.public_id), BODY, "shared")
    b = post(globex.client, messages_url(theirs.public_id), BODY, "shared")

    assert a.status_code == b.status_code == 201
    assert "Idempotent-Replayed" not in b
    assert a.data["id"] != b.data["id"]
    assert IdempotencyRecord.objects.filter(key="shared").count() == 2


def test_a_second_key_of_the_same_tenant_shares_the_key_space(acme, acme_exporter):
    thread = make_thread(acme.tenant)
    url = messages_url(thread.public_id)

    first = post(acme.client, url, BODY, "k")
    again = post(acme_exporter.client, url, BODY, "k")

    assert again.data == first.data
    assert again["Idempotent-Replayed"] == "true"


def test_edit_and_append_share_the_key_space(acme):
    thread = make_thread(acme.tenant, turns=1)
    first = thread.active_leaf.public_id
    post(acme.client, messages_url(thread.public_id), BODY, "k")

    r = post(acme.client, edit_url(thread.public_id, first), {"content": "hello"}, "k")

    assert error_of(r) == (422, "idempotency_key_reused")


def test_purge_forgets_keys_past_their_ttl(acme, settings):
    settings.CONVMEM_IDEMPOTENCY_TTL_HOURS = 24
    thread = make_thread(acme.tenant)
    url = messages_url(thread.public_id)
    post(acme.client, url, BODY, "old")
    post(acme.client, url, {"role": "user", "content": "new"}, "new")
    IdempotencyRecord.objects.filter(key="old").update(
        created_at=timezone.now() - timedelta(hours=25)
    )

    assert idempotency_records_purge() == 1

    assert list(IdempotencyRecord.objects.values_list("key", flat=True)) == ["new"]
    # A purged key is a fresh key again: it writes a new node.
    again = post(acme.client, url, BODY, "old")
    assert again.status_code == 201
    assert "Idempotent-Replayed" not in again
    assert Message.objects.filter(thread=thread, content="hello").count() == 2


def test_perform_is_given_the_keys_record_in_flight(acme):
    """Rows written with the response (a respond run) point at the key's record: ``perform``
    gets it, instead of reading it back by key."""
    seen = []

    def perform(record):
        seen.append((record.key, record.status, record.tenant_id))
        return 201, {"ok": True}, None

    outcome = run_idempotent(
        tenant=acme.tenant, key="rec-1", fingerprint="f", thread=None, perform=perform
    )

    assert outcome.status == 201
    assert seen == [("rec-1", IdempotencyRecord.Status.IN_FLIGHT, acme.tenant.pk)]
    assert IdempotencyRecord.objects.get(key="rec-1").status == IdempotencyRecord.Status.COMPLETED


@pytest.mark.django_db(transaction=True)
def test_the_claim_commits_on_its_own_and_the_write_it_guards_stays_durable(acme):
    """Outside a transaction the claim commits at once (another request sees it), without
    waiting for the log flush on PostgreSQL; that setting is the claim's transaction's only:
    the write it guards commits durably (and flushes the claim with it)."""
    seen = []

    def perform(record):
        seen.append(IdempotencyRecord.objects.filter(pk=record.pk).exists())
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SHOW synchronous_commit")
                seen.append(cursor.fetchone()[0])
        return 201, {"ok": True}, None

    outcome = run_idempotent(
        tenant=acme.tenant, key="durable-1", fingerprint="f", thread=None, perform=perform
    )

    assert outcome.status == 201
    assert seen[0] is True
    if connection.vendor == "postgresql":
        assert seen[1] == "on"
    record = IdempotencyRecord.objects.get(key="durable-1")
    assert (record.status, record.attempt) == (IdempotencyRecord.Status.COMPLETED, 1)
    with pytest.raises(IntegrityError):
        row_insert_unflushed(IdempotencyRecord(tenant=acme.tenant, key="durable-1"))
    with pytest.raises(RuntimeError), transaction.atomic():
        row_insert_unflushed(IdempotencyRecord(tenant=acme.tenant, key="durable-2"))
