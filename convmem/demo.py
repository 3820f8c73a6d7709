"""The demo data behind ``python3 dev.py serve``: a tenant, a key, a branched thread, and a long
conversation whose model profile has a small window, so its context needs a memo: seeding asks
for one, and the worker writes it once ``serve`` has started it."""

from dataclasses import dataclass

from audit.deletion import deletion_request_file
from audit.events import Actor
from audit.models import DeletionRequest
from compaction.context import context_assemble
from compaction.models import ModelProfile
from convmem.models import Tenant
from convmem.tenancy import api_key_create
from threads import services
from threads.models import Thread

DEMO_TENANT = "demo"
DEMO_USER = "demo-user"
LONG_USER = "demo-user-long"
LEAVING_USER = "demo-user-leaving"
LONG_TURNS = 40
SEED = Actor.system("seed_demo")

CONVERSATION = [
    (
        "user",
        "Hi, I ordered a standing desk, order ORD-48213, on 2026-11-03; it has not arrived.",
    ),
    (
        "assistant",
        "Sorry about that. I can see ORD-48213: it shipped on 2026-11-05 with carrier DHL.",
    ),
    ("user", "The tracking page says it is stuck in Leipzig since November 9th."),
    ("assistant", "I opened ticket TCK-7731 with DHL. They usually answer within 2 business days."),
    ("user", "Fine. If it is lost, can I get a refund of the 649.00 EUR instead of a replacement?"),
    (
        "assistant",
        "Yes: if DHL confirms the loss, we refund 649.00 EUR to your Visa card ending 4417.",
    ),
]


# An office move planned over many turns: each turn carries checkable facts (dates, amounts,
# ids, names) so the memo and its faithfulness scores have something to show.
LONG_TOPICS = [
    ("the crates", "{n} moving crates from Kistenprofi, invoice INV-{id}, {eur}.00 EUR"),
    ("the van", "a 7.5 t van from Sixt for {day} March, booking SX-{id}, {eur}.00 EUR a day"),
    ("the IT cut-over", "the network switch-over on {day} March at 18:00, ticket IT-{id}"),
    ("the new keys", "{n} key cards from the landlord, contact Jana Novak, deposit {eur}.00 EUR"),
    ("the old lease", "the hand-over of the old office on {day} April, reference LSE-{id}"),
]


def _long_turn(index: int) -> tuple[str, str]:
    topic, fact = LONG_TOPICS[index % len(LONG_TOPICS)]
    values = {
        "n": 10 + index,
        "id": 5000 + index * 7,
        "eur": 90 + index * 11,
        "day": index % 28 + 1,
    }
    if index % 2 == 0:
        return "user", f"Next, {topic}: can you confirm {fact.format(**values)}?"
    return "assistant", (
        f"Confirmed: {fact.format(**values)}. I noted it in the move plan; "
        f"we decided to keep {topic} on the checklist until the day before."
    )


@dataclass(frozen=True)
class DemoSeed:
    tenant: Tenant
    key: str
    thread: Thread
    long_thread: Thread
    deletion: DeletionRequest


def demo_seed() -> DemoSeed:
    """Create the demo tenant and thread once; issue a fresh key on every call."""
    tenant, _ = Tenant.objects.get_or_create(name=DEMO_TENANT)
    _, key = api_key_create(tenant=tenant, name="demo", scopes=["export"])
    thread = Thread.objects.filter(tenant=tenant, user_ref=DEMO_USER).order_by("id").first()
    if thread is None:
        thread = _demo_thread(tenant)
    long_thread = Thread.objects.filter(tenant=tenant, user_ref=LONG_USER).order_by("id").first()
    if long_thread is None:
        long_thread = _long_thread(tenant)
    deletion = (
        DeletionRequest.objects.filter(tenant=tenant, user_ref=LEAVING_USER).order_by("id").first()
    )
    if deletion is None:
        deletion = _deletion_request(tenant)
    return DemoSeed(
        tenant=tenant, key=key, thread=thread, long_thread=long_thread, deletion=deletion
    )


def _demo_thread(tenant: Tenant) -> Thread:
    thread = services.thread_create(
        tenant=tenant, actor=SEED, user_ref=DEMO_USER, title="Late standing desk delivery"
    )
    appended = [
        services.message_append(thread=thread, actor=SEED, role=role, content=content)
        for role, content in CONVERSATION
    ]
    services.message_edit(
        thread=thread,
        actor=SEED,
        message_public_id=appended[4].public_id,
        content="If it is lost, I would rather have a replacement desk than a refund.",
    )
    services.message_append(
        thread=thread,
        actor=SEED,
        role="assistant",
        content="Understood: if DHL confirms the loss we ship a replacement desk at no cost.",
    )
    thread.refresh_from_db()
    return thread


def _long_thread(tenant: Tenant) -> Thread:
    """The office-move conversation, on a 1,024-token profile: its first context asks for a
    memo (written by the worker after the seed commits)."""
    profile, _ = ModelProfile.objects.get_or_create(
        tenant=tenant,
        name="demo-compact",
        defaults={"window_tokens": 1024, "reserve_tokens": 128, "memo_max_tokens": 200},
    )
    thread = services.thread_create(
        tenant=tenant, actor=SEED, user_ref=LONG_USER, title="Office move", profile=profile
    )
    for index in range(LONG_TURNS):
        role, content = _long_turn(index)
        services.message_append(thread=thread, actor=SEED, role=role, content=content)
    thread = Thread.objects.select_related("profile").get(pk=thread.pk)
    context_assemble(thread=thread, actor=SEED)
    return thread


def _deletion_request(tenant: Tenant) -> DeletionRequest:
    """An end user who asked to be forgotten: a short thread of theirs and their request, still
    ``received``, to review, approve and execute in the admin (the worker erases it)."""
    thread = services.thread_create(
        tenant=tenant, actor=SEED, user_ref=LEAVING_USER, title="Closing my account"
    )
    for role, content in CONVERSATION[:2]:
        services.message_append(thread=thread, actor=SEED, role=role, content=content)
    return deletion_request_file(
        tenant=tenant, actor=SEED, user_ref=LEAVING_USER, reason="Account closed; erase my data."
    )
