"""A writer that dies while it scores its memo (after storing it, before its scores) leaves
the memo owing its scores; the dispatcher sends the scoring task, and a real Celery worker on
the ``bulk`` queue scores it.

In a module of its own: no other worker may be consuming the queue meanwhile.
"""

from datetime import timedelta

import pytest
from django.utils import timezone

from compaction import services as compaction_services
from compaction.models import Summary
from tests.compaction.helpers import grow, post_context, wait_for
from tests.conftest import make_thread
from tests.support.worker import start_worker

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


class WriterKilled(BaseException):
    """The writer's process ending mid-task: nothing after it runs, no handler catches it."""


def test_a_memo_whose_writer_died_while_scoring_is_scored_once_the_dispatcher_looks(
    acme, monkeypatch, settings
):
    settings.CONVMEM_MEMO_REDISPATCH_SECONDS = 60
    thread = make_thread(acme.tenant)
    grow(thread, 30)
    post_context(acme.client, thread, window_tokens=900, reserve_tokens=100)
    requested = Summary.objects.get(thread=thread, status="pending")

    def killed_while_scoring(**kwargs):
        raise WriterKilled

    monkeypatch.setattr(compaction_services, "score_memo", killed_while_scoring)
    with pytest.raises(WriterKilled):
        compaction_services.summary_write(summary_id=requested.pk)
    requested.refresh_from_db()
    assert requested.status == Summary.Status.READY
    assert "fact_recall" not in requested.scores  # the writer's own scores never came
    assert requested.scores_due is not None

    # Not before the redispatch delay: the writer may still be at work.
    assert compaction_services.summaries_dispatch_unscored() == 0
    later = timezone.now() + timedelta(seconds=61)
    with start_worker(queues=["bulk"]):
        assert compaction_services.summaries_dispatch_unscored(now=later) == 1
        assert compaction_services.summaries_dispatch_unscored(now=later) == 0

        def scored_by_the_task() -> Summary | None:
            memo = Summary.objects.get(pk=requested.pk)
            carried = memo.scores.get("scorer") == compaction_services.CARRIED_SCORER
            return memo if carried else None

        scored = wait_for(scored_by_the_task, timeout=30)

    assert 0 <= scored.scores["fact_recall"] <= 1
    assert scored.scores["segment_messages"] > 0
    assert scored.scores["unsupported_values_count"] == 0  # the writer's check, kept
    assert scored.scores_due is None
