"""Retention erases old content (tombstones), never under legal hold, idempotently, audited."""

from datetime import timedelta

import pytest
from django.utils import timezone

from audit import tasks
from audit.models import RetentionPolicy
from audit.retention import retention_apply
from audit.services import legal_hold_place, legal_hold_release, retention_policy_set
from auditlog.models import AuditEvent
from compaction.models import Summary
from convmem.errors import InvalidRequest
from tests.audit.conftest import OPERATOR, branched_thread, ready_memo, visible
from threads.erasure import ERASED
from threads.models import Message

pytestmark = pytest.mark.django_db


def age(thread, days: int, count: int | None = None) -> list[Message]:
    """Backdate the thread's first ``count`` messages (all by default) by ``days``."""
    nodes = visible(thread)[:count]
    Message.objects.filter(pk__in=[m.pk for m in nodes]).update(
        created_at=timezone.now() - timedelta(days=days)
    )
    return nodes


def policy(tenant, days: int = 30) -> RetentionPolicy:
    return retention_policy_set(tenant=tenant, actor=OPERATOR, erase_content_after_days=days)


def test_old_content_is_tombstoned_and_the_tree_kept(acme):
    thread = branched_thread(acme.tenant)
    old = age(thread, 40, count=2)
    before = {m.pk: (m.parent_id, m.token_count, m.public_id) for m in visible(thread)}

    run = retention_apply(policy=policy(acme.tenant))

    assert run.messages == 2
    after = visible(thread)
    assert {m.pk: (m.parent_id, m.token_count, m.public_id) for m in after} == before
    erased = [m for m in after if m.erased_at is not None]
    assert [m.pk for m in erased] == [m.pk for m in old]
    assert all(m.content == ERASED for m in erased)
    assert all(m.content != ERASED for m in after if m.erased_at is None)


def test_retention_is_audited_with_counts_and_idempotent(acme):
    thread = branched_thread(acme.tenant)
    old = age(thread, 40, count=3)
    retention = policy(acme.tenant)

    retention_apply(policy=retention)
    events = list(AuditEvent.objects.filter(action__startswith="retention.").order_by("pk"))
    second = retention_apply(policy=retention)

    assert [e.action for e in events] == [
        "retention.policy_set",
        "retention.purged",
        "retention.run",
    ]
    purged = events[1]
    assert purged.thread_public_id == thread.public_id
    assert purged.object_ids == [m.public_id for m in old]
    assert purged.details["counts"]["messages"] == 3
    assert events[2].details["counts"]["messages"] == 3
    assert second.messages == 0
    assert AuditEvent.objects.filter(action__startswith="retention.").count() == len(events)


def test_legal_holds_are_skipped(acme):
    held_user = branched_thread(acme.tenant, user_ref="held")
    held_thread = branched_thread(acme.tenant, user_ref="free")
    free = branched_thread(acme.tenant, user_ref="free")
    for thread in (held_user, held_thread, free):
        age(thread, 40)
    legal_hold_place(tenant=acme.tenant, actor=OPERATOR, reason="litigation", user_ref="held")
    hold = legal_hold_place(tenant=acme.tenant, actor=OPERATOR, reason="audit", thread=held_thread)

    run = retention_apply(policy=policy(acme.tenant))

    assert run.threads == [free.public_id]
    assert run.held_threads == 2
    for thread in (held_user, held_thread):
        assert not Message.objects.filter(thread=thread, erased_at__isnull=False).exists()

    legal_hold_release(hold=hold, actor=OPERATOR)
    assert retention_apply(policy=policy(acme.tenant)).threads == [held_thread.public_id]


def test_covered_summaries_are_invalidated_and_erased(acme):
    thread = branched_thread(acme.tenant)
    nodes = visible(thread)
    covering = ready_memo(thread, nodes[0:2], "order ORD-1 shipped")
    later = ready_memo(thread, nodes[2:4], "refund agreed")
    age(thread, 40, count=1)

    run = retention_apply(policy=policy(acme.tenant))

    assert run.summaries == 1
    covering.refresh_from_db()
    later.refresh_from_db()
    assert (covering.status, covering.text) == (Summary.Status.STALE, ERASED)
    assert (later.status, later.text) == (Summary.Status.READY, "refund agreed")


def test_the_periodic_task_applies_enabled_policies_only(acme, globex):
    mine = branched_thread(acme.tenant)
    theirs = branched_thread(globex.tenant)
    age(mine, 40)
    age(theirs, 40)
    policy(acme.tenant)
    retention_policy_set(
        tenant=globex.tenant, actor=OPERATOR, erase_content_after_days=30, enabled=False
    )

    assert tasks.apply_retention() == 6

    assert not Message.objects.filter(thread=theirs, erased_at__isnull=False).exists()


def test_policy_needs_at_least_a_day(acme):
    with pytest.raises(InvalidRequest, match="at least 1"):
        retention_policy_set(tenant=acme.tenant, actor=OPERATOR, erase_content_after_days=0)
