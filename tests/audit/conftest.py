"""Fixtures for the audit tests: staff users by group, branched threads, recorded assemblies.

The real Celery worker (``celery_worker``) comes from ``tests.support.worker``.
"""

import io
import re
import time
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import Group, Permission, User
from pypdf import PdfReader

from auditlog.events import Actor
from compaction.context import RetrievedItem, context_assemble
from compaction.models import Summary
from tests.conftest import SYSTEM
from threads import services
from threads.models import Message, Thread

OPERATOR = Actor.system("tests.audit")


@pytest.fixture(autouse=True)
def keep_rendered_inputs(settings: Any) -> None:
    """Erasure must reach every copy, so these tests keep rendered inputs (snapshots), which
    are off by default."""
    settings.CONVMEM_KEEP_RENDERED_INPUTS = True


def staff(username: str, *groups: str) -> User:
    user = User.objects.create_user(username, password="x", is_staff=True)
    user.groups.add(*Group.objects.filter(name__in=groups))
    return user


@pytest.fixture
def officer(db: None) -> User:
    """A compliance officer (the Compliance group, created by a migration)."""
    return staff("officer", "Compliance")


@pytest.fixture
def support(db: None) -> User:
    """A support agent: can read conversations, cannot export or erase."""
    return staff("support", "Support")


def branched_thread(tenant: Any, *, user_ref: str = "user-1", text: str = "") -> Thread:
    """A thread with two branches: u1 a1 u2 a2, then an edit of u2 (u2') with an answer a2'.

    ``text`` is put into every message (to find it again after erasure).
    """
    thread = services.thread_create(tenant=tenant, actor=SYSTEM, user_ref=user_ref, title="t")
    append = services.message_append
    u1 = append(thread=thread, actor=SYSTEM, role="user", content=f"My order ORD-1 {text}")
    append(thread=thread, actor=SYSTEM, role="assistant", content=f"It shipped. {text}")
    u2 = append(thread=thread, actor=SYSTEM, role="user", content=f"Refund 649 EUR? {text}")
    append(thread=thread, actor=SYSTEM, role="assistant", content=f"Yes, refunded. {text}")
    services.message_edit(
        thread=thread, actor=SYSTEM, message_public_id=u2.public_id, content=f"Replace it {text}"
    )
    append(thread=thread, actor=SYSTEM, role="assistant", content=f"Replacement sent. {text}")
    assert u1.parent_id == thread.root_id
    thread.refresh_from_db()
    return thread


def visible(thread: Thread) -> list[Message]:
    return list(Message.objects.filter(thread=thread).exclude(role="root").order_by("pk"))


def wait_for(condition: Callable[[], bool], *, seconds: float = 90.0) -> None:
    """Poll ``condition`` until it holds (a generous limit: this checks behaviour, not speed)."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.2)


def grant(user: User, *codenames: str) -> None:
    user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))


def record_assembly(thread: Thread, *, system: str = "Be brief.", retrieved: str = "") -> Any:
    """Assemble (and record) the thread's model input through the real context service."""
    thread = Thread.objects.select_related("profile", "tenant").get(pk=thread.pk)
    items = [RetrievedItem(ref="doc-1", content=retrieved)] if retrieved else []
    return context_assemble(
        thread=thread,
        actor=OPERATOR,
        window_tokens=4096,
        reserve_tokens=256,
        system=system or None,
        retrieved=items,
    ).record


def ready_memo(thread: Thread, covered: list[Message], text: str, **fields: Any) -> Summary:
    """A ready memo standing for ``covered`` (consecutive messages of one path), made by hand."""
    return Summary.objects.create(
        thread=thread,
        first=covered[0],
        segment_first=covered[0],
        last=covered[-1],
        covered_ids=[m.public_id for m in covered],
        status=Summary.Status.READY,
        text=text,
        fingerprint=text,
        **fields,
    )


def pdf_text(data: bytes) -> str:
    """The PDF's text, pages in order, runs of white space as one space (lines wrap)."""
    reader = PdfReader(io.BytesIO(data))
    return re.sub(r"\s+", " ", " ".join(page.extract_text() for page in reader.pages))


def assert_in_order(text: str, phrases: list[str]) -> None:
    """Each phrase occurs in ``text`` after the one before it."""
    at = 0
    for phrase in phrases:
        found = text.find(phrase, at)
        assert found >= 0, f"{phrase!r} not after {text[:at][-200:]!r}"
        at = found + len(phrase)
