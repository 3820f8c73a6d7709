"""Staff users in the groups the audit migration creates, logged-in clients, and threads built
through the real services: a branched one, a long one, one with a memo and assembly records."""

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from compaction.backends import MemoDraft, MemoSource
from compaction.backends.embedded import EmbeddedBackend
from compaction.context import RetrievedItem, context_assemble
from compaction.models import AssemblyRecord, Summary
from compaction.services import summary_write
from convmem.demo import CONVERSATION
from convmem.models import ModelProfile
from convmem.tokens import count_tokens
from tests.conftest import SYSTEM, TenantKit, make_thread
from threads import services
from threads.models import Message, Thread

PASSWORD = "a-long-test-password-1"


def staff_user(username: str, *groups: str) -> User:
    """A staff user (not a superuser) in ``groups``: what it may see comes from the groups."""
    user = User.objects.create_user(username=username, password=PASSWORD, is_staff=True)
    user.groups.set(Group.objects.filter(name__in=groups))
    return user


def client_for(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def support(db: None) -> Client:
    return client_for(staff_user("sam-support", "Support"))


@pytest.fixture
def compliance(db: None) -> Client:
    return client_for(staff_user("cleo-compliance", "Compliance"))


@pytest.fixture
def plain_staff(db: None) -> Client:
    return client_for(staff_user("pat-plain"))


@dataclass
class Branched:
    """A thread with a fork at its second user turn (an edit) and a regenerated answer.

    Path before the edit: u1 a1 u2 a2; ``u2b`` edits ``u2`` and gets ``a2b``; ``a2c`` is a
    second answer to ``u2b``. The active leaf is ``a2c``.
    """

    thread: Thread
    u1: Message
    a1: Message
    u2: Message
    a2: Message
    u2b: Message
    a2b: Message
    a2c: Message


def _say(thread: Thread, role: str, content: str, parent: Message | None = None) -> Message:
    return services.message_append(
        thread=thread,
        actor=SYSTEM,
        role=role,
        content=content,
        parent_public_id=parent.public_id if parent else None,
    )


def build_branched(tenant_kit: TenantKit, *, user_ref: str = "user-7") -> Branched:
    thread = services.thread_create(
        tenant=tenant_kit.tenant, actor=SYSTEM, user_ref=user_ref, title="Desk order"
    )
    u1 = _say(thread, "user", "My order ORD-48213 has not arrived.")
    a1 = _say(thread, "assistant", "It shipped on 2026-11-05 with DHL.")
    u2 = _say(thread, "user", "Can I get a refund of 649.00 EUR?")
    a2 = _say(thread, "assistant", "Yes, once DHL confirms the loss.")
    u2b = services.message_edit(
        thread=thread, actor=SYSTEM, message_public_id=u2.public_id, content="I want a new desk."
    )
    a2b = _say(thread, "assistant", "We will ship a replacement desk.")
    a2c = _say(thread, "assistant", "A replacement ships on Monday.", parent=u2b)
    thread.refresh_from_db()
    return Branched(thread, u1, a1, u2, a2, u2b, a2b, a2c)


@pytest.fixture
def branched(acme: TenantKit) -> Branched:
    return build_branched(acme)


@pytest.fixture
def long_thread(acme: TenantKit) -> Callable[[int], Thread]:
    return lambda turns: make_thread(acme.tenant, user_ref="long", turns=turns)


class EmbellishingBackend:
    """A summarizer backend (``SummarizerBackend`` interface) that writes the embedded memo in
    the room left after one invented line, and adds that line: a memo that keeps some facts,
    loses others (the budget is tight) and states one no message says, which the compare view
    must show as such."""

    name = "embellishing"
    INVENTED = "Refund approved by Maria Lopez."
    context_tokens = 16384

    def summarize(
        self, *, previous_memo: str | None, messages: Sequence[MemoSource], max_tokens: int
    ) -> MemoDraft:
        draft = EmbeddedBackend().summarize(
            previous_memo=previous_memo,
            messages=messages,
            max_tokens=max_tokens - count_tokens("\n" + self.INVENTED),
        )
        return MemoDraft(
            text=f"{draft.text}\n{self.INVENTED}",
            backend=self.name,
            model=draft.model,
            prompt_version=draft.prompt_version,
        )


@dataclass
class MemoThread:
    thread: Thread
    summary: Summary
    assembly: AssemblyRecord


def build_memo_thread(
    tenant_kit: TenantKit, *, write: Callable[[Summary], object], extra: str = ""
) -> MemoThread:
    """A conversation long enough to need a memo: the first assembly asks for it (pending),
    ``write`` gets it written (the memo writer's service inline, or a real worker), and a
    second assembly — with a system prompt and a retrieved item — uses it. ``extra`` is added
    to a user turn inside the memo's range."""
    thread = services.thread_create(
        tenant=tenant_kit.tenant, actor=SYSTEM, user_ref="user-memo", title="Lost desk"
    )
    asked = ("user", f"Any news on the desk? {extra}".strip())
    # The conversation goes on with more orders, so a memo the size of the slot cannot keep
    # every fact (the compare page has missing facts to show).
    more = [
        (role, f"{content} Also order ORD-{7100 + 10 * round_ + index} for EUR {round_}{index}.50.")
        for round_ in range(3)
        for index, (role, content) in enumerate(CONVERSATION[1:])
    ]
    turns = [*CONVERSATION, asked, *more]
    for role, content in turns:
        services.message_append(thread=thread, actor=SYSTEM, role=role, content=content)
    thread = Thread.objects.select_related("profile").get(pk=thread.pk)
    budget = {"window_tokens": 600, "reserve_tokens": 60}
    context_assemble(thread=thread, actor=SYSTEM, **budget)
    # The thread's one memo: pending, or already written by a real worker that was quick.
    pending = Summary.objects.get(thread=thread)
    write(pending)
    summary = Summary.objects.select_related("first", "last").get(pk=pending.pk)
    assert summary.status == Summary.Status.READY
    assembly = context_assemble(
        thread=thread,
        actor=SYSTEM,
        system="You are the support agent of a furniture shop.",
        retrieved=[RetrievedItem(ref="kb:lost-parcels", content="Lost parcels: refund or resend.")],
        **budget,
    ).record
    return MemoThread(thread=thread, summary=summary, assembly=assembly)


def write_embellished(summary: Summary) -> None:
    """Write the memo with the memo writer's service (what its Celery task calls), inline."""
    summary_write(summary_id=summary.pk, backend=EmbellishingBackend())


@pytest.fixture
def memo_thread(acme: TenantKit) -> MemoThread:
    return build_memo_thread(acme, write=write_embellished)


@dataclass
class AgentThread:
    """An agent conversation: a question with an image and a file, tool calls with their
    results (the first bulky one elided from the latest model input), and answers."""

    thread: Thread
    question: Message
    calls: Message
    order_result: Message
    bulky_result: Message
    answer: Message
    assembly: AssemblyRecord


ORDER_ARGUMENTS = '{"id": "ORD-1234", "include": ["items", "shipping"]}'
IMAGE_URL = "https://images.example.com/parcels/ORD-1234-damaged.jpg"
FILLER = "We compared the carriers, the packaging and the insurance terms once more. " * 3


def _call(call_id: str, name: str, arguments: str) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def build_agent_thread(tenant_kit: TenantKit, *, user_ref: str = "user-agent") -> AgentThread:
    """Built through the real services; the profile elides tool results over 100 tokens, and a
    model input is assembled in a window that needs the elision."""
    profile = ModelProfile.objects.create(
        tenant=tenant_kit.tenant, name="agent", tool_result_elide_tokens=100
    )
    thread = services.thread_create(
        tenant=tenant_kit.tenant,
        actor=SYSTEM,
        user_ref=user_ref,
        title="Damaged parcel",
        profile=profile,
    )

    def say(role: str, content: object, **fields: object) -> Message:
        return services.message_append(
            thread=thread, actor=SYSTEM, role=role, content=content, **fields
        )

    question = say(
        "user",
        [
            {"type": "text", "text": "My parcel ORD-1234 arrived damaged, photo attached."},
            {"type": "image_url", "image_url": {"url": IMAGE_URL, "detail": "low"}},
            {"type": "file", "file": {"file_id": "file-receipt-1234"}},
        ],
    )
    calls = say(
        "assistant",
        "",
        tool_calls=[
            _call("call_order", "get_order", ORDER_ARGUMENTS),
            _call("call_log", "carrier_log", '{"tracking": "DHL-99812"}'),
        ],
    )
    order_result = say(
        "tool",
        '{"id": "ORD-1234", "status": "delivered", "total": "649.00 EUR"}',
        tool_call_id="call_order",
    )
    scan = '{"at": "2026-11-0%d 10:00", "where": "Leipzig hub", "event": "scanned"}'
    log = "[" + ", ".join(scan % (day % 9 + 1) for day in range(25)) + "]"
    bulky_result = say("tool", log, tool_call_id="call_log")
    answer = say("assistant", f"The parcel was delivered damaged; I opened a claim. {FILLER}")
    for index in range(3):
        say("user", f"Follow-up {index}: when will the replacement ship? {FILLER}")
        say("assistant", "", tool_calls=[_call(f"c{index}", "carrier_log", "{}")])
        say("tool", log, tool_call_id=f"c{index}")
        say("assistant", f"It ships on Monday. {FILLER}")
    thread = Thread.objects.select_related("profile", "active_leaf").get(pk=thread.pk)
    assembly = context_assemble(
        thread=thread, actor=SYSTEM, window_tokens=3000, reserve_tokens=200
    ).record
    assert bulky_result.public_id in assembly.plan["elided"], assembly.plan
    return AgentThread(thread, question, calls, order_result, bulky_result, answer, assembly)


@pytest.fixture
def agent_thread(acme: TenantKit) -> AgentThread:
    return build_agent_thread(acme)
