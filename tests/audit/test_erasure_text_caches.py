"""Erased text does not stay in a process's caches of statements (the memo writer's, recall's).

The process that erases drops them when its erasure commits; every process drops them on a
timer of its own (``CONVMEM_TEXT_CACHE_SECONDS``), so the workers and web processes an erasure
elsewhere cannot reach forget the text too — tested in real child processes, forked as
gunicorn and Celery's prefork pool fork theirs.
"""

import textwrap

from compaction import services as compaction_services
from compaction.backends import text_caches
from compaction.models import Summary
from tests.compaction.helpers import grow, post_context
from tests.conftest import make_thread
from tests.support.processes import child_prints

SMALL = {"window_tokens": 900, "reserve_tokens": 100}


def test_an_erasure_drops_the_caches_of_its_process_when_it_commits(
    acme, django_capture_on_commit_callbacks
):
    thread = make_thread(acme.tenant)
    grow(thread, 30)
    post_context(acme.client, thread, **SMALL)
    compaction_services.summary_write(summary_id=Summary.objects.get(thread=thread).pk)
    assert text_caches.remembered_entries() > 0  # the writer remembered the thread's statements

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = acme.client.delete(f"/api/v1/threads/{thread.public_id}")
    assert response.status_code == 200, response.data
    assert text_caches.remembered_entries() > 0  # not before the erasure commits

    for callback in callbacks:
        callback()
    assert text_caches.remembered_entries() == 0


CHILD = textwrap.dedent(
    """
    import os, sys, time
    import django
    django.setup()
    from compaction.backends import text_caches
    from compaction.backends.salience import anchors

    def forgets_within(seconds):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if text_caches.remembered_entries() == 0:
                return True
            time.sleep(0.05)
        return False

    anchors("Your order ORD-77120 ships to Łódź on 03/12/2026.")
    assert text_caches.remembered_entries() > 0
    child = os.fork()
    if child == 0:
        # A forked child has no timer of its parent's: it starts its own at its first entry.
        anchors("The technician Joaquín comes on 2026-12-09, call +48 601 555 010.")
        os._exit(0 if text_caches.remembered_entries() > 0 and forgets_within(10) else 1)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0, "the forked child kept its entries"
    assert forgets_within(10), "the parent kept its entries"
    print("forgotten")
    """
)


def test_every_process_forgets_its_entries_on_its_own_timer():
    assert child_prints(CHILD, CONVMEM_TEXT_CACHE_SECONDS="0.3") == "forgotten"


HELD_AT_FORK = textwrap.dedent(
    """
    import os, threading
    import django
    django.setup()
    from compaction import recall
    from compaction.backends import text_caches

    locks = [text_caches._timer_lock, recall._COMMON_WORDS._lock]
    for lock in locks:
        lock.acquire()  # as a request's thread would hold it while the process forks
    child = os.fork()
    if child == 0:
        # The child's locks are free: its first cache entry and recall can take them.
        free = [text_caches._timer_lock, recall._COMMON_WORDS._lock]
        os._exit(0 if all(lock.acquire(timeout=2) for lock in free) else 1)
    _, status = os.waitpid(child, 0)
    print("free" if os.waitstatus_to_exitcode(status) == 0 else "held")
    """
)


def test_a_lock_held_at_a_fork_is_not_held_in_the_child():
    assert child_prints(HELD_AT_FORK) == "free"
