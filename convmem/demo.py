"""The demo data behind ``python3 dev.py serve``: a tenant, a key and a branched thread."""

from dataclasses import dataclass

from audit.events import Actor
from convmem.models import Tenant
from convmem.tenancy import api_key_create
from threads import services
from threads.models import Thread

DEMO_TENANT = "demo"
DEMO_USER = "demo-user"
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


@dataclass(frozen=True)
class DemoSeed:
    tenant: Tenant
    key: str
    thread: Thread


def demo_seed() -> DemoSeed:
    """Create the demo tenant and thread once; issue a fresh key on every call."""
    tenant, _ = Tenant.objects.get_or_create(name=DEMO_TENANT)
    _, key = api_key_create(tenant=tenant, name="demo", scopes=["export"])
    thread = Thread.objects.filter(tenant=tenant, user_ref=DEMO_USER).order_by("id").first()
    if thread is None:
        thread = _demo_thread(tenant)
    return DemoSeed(tenant=tenant, key=key, thread=thread)


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
