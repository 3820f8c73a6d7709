"""Expiry end to end: real ``celery beat`` schedules ``audit.expire_threads`` and a real worker
erases the expired thread, while a held one stays."""

from datetime import timedelta

import pytest
from django.utils import timezone

from audit.models import DeletionRequest
from audit.services import legal_hold_place
from auditlog.models import AuditEvent
from tests.audit.conftest import OPERATOR, branched_thread, visible, wait_for
from tests.support.worker import start_beat, start_worker
from threads.erasure import ERASED
from threads.models import Thread

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]
# Beat sends the expiry task every second instead of every hour.
BEAT_ENV = {"CONVMEM_THREAD_EXPIRY_SECONDS": "1"}


def test_beat_and_a_worker_erase_an_expired_thread_but_not_a_held_one(acme):
    expired = branched_thread(acme.tenant, user_ref="gone", text="CANARY-BEAT")
    held = branched_thread(acme.tenant, user_ref="held", text="CANARY-HELD")
    past = timezone.now() - timedelta(minutes=1)
    Thread.objects.filter(pk__in=[expired.pk, held.pk]).update(expires_at=past)
    legal_hold_place(tenant=acme.tenant, actor=OPERATOR, reason="litigation", user_ref="held")

    with start_worker(BEAT_ENV), start_beat(BEAT_ENV):
        wait_for(lambda: Thread.objects.get(pk=expired.pk).deleted_at is not None)
        wait_for(lambda: AuditEvent.objects.filter(action="thread_expiry.run").exists())

    assert all(m.content == ERASED for m in visible(expired))
    assert acme.client.get(f"/api/v1/threads/{expired.public_id}").status_code == 404
    proof = DeletionRequest.objects.get(thread=expired).proof
    assert proof["expiry"]["reason"] == "expired"
    assert proof["erased"]["threads"] == [expired.public_id]
    held.refresh_from_db()
    assert held.deleted_at is None
    assert all("CANARY-HELD" in m.content for m in visible(held))
    runs = AuditEvent.objects.filter(action="thread_expiry.run")
    assert all(r.details["held_threads"] == [held.public_id] for r in runs)
    assert not DeletionRequest.objects.filter(thread=held).exists()
