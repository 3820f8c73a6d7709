"""A chain of memos written by a real Celery worker, segment by segment.

In a module of its own: its worker needs small segments (a small summarizer context), and no
other worker (with the default settings) may be consuming the same queue meanwhile.
"""

import pytest

from compaction.models import Summary
from tests.compaction.helpers import grow, post_context, wait_for
from tests.conftest import make_thread
from tests.support.worker import start_worker

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def test_the_worker_writes_a_chain_segment_by_segment_up_to_its_goal(acme, settings):
    """A long import asks for more than one segment: the worker requests and writes the next
    segments itself, each extending the one before, until the chain reaches its goal."""
    settings.CONVMEM_EMBEDDED_CONTEXT_TOKENS = 2200
    thread = make_thread(acme.tenant)
    grow(thread, 60)
    with start_worker({"CONVMEM_EMBEDDED_CONTEXT_TOKENS": "2200"}):
        first = post_context(acme.client, thread, window_tokens=2000, reserve_tokens=200)
        requested = Summary.objects.get(public_id=first.data["pending_memo"]["summary_id"])
        goal = requested.goal_id

        last = wait_for(
            lambda: Summary.objects.filter(thread=thread, status="ready", last_id=goal).first()
        )

    chain = [last]
    while chain[-1].base_id:
        chain.append(Summary.objects.get(pk=chain[-1].base_id))
    assert chain[-1].pk == requested.pk
    assert len(chain) > 2
    assert Summary.objects.filter(thread=thread).exclude(status="ready").count() == 0
    used = post_context(acme.client, thread, window_tokens=2000, reserve_tokens=200)
    # A memo of the chain stands before every turn after it (curator/4 shows the earliest that
    # can, keeping the input's prefix as long as it can), and nothing is lost.
    assert used.data["sections"]["memo"]["summary_id"] in {memo.public_id for memo in chain}
    assert used.data["memo_lag"]["turns"] == 0
