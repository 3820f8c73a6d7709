"""The demo data behind ``python3 dev.py serve``: a tenant, a key, staff logins, a branched
thread, and a long conversation whose model profile has a small window, so its context needs a
memo: seeding asks for one, and the worker writes it once ``serve`` has started it.

Seeding is idempotent: what exists is left alone (no password is reset, no key added). The
secrets a later run cannot recover from the database — the plaintext API key and the staff
passwords — are kept in ``VAR_DIR/demo-credentials.json`` (``var/`` is git-ignored), so every
run can print the same logins. A stored key that was revoked (or a lost file) gets a new key.
"""

import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction

from audit.deletion import deletion_request_file
from audit.models import DeletionRequest
from auditlog.events import Actor
from compaction.context import context_assemble
from convmem.models import ApiKey, ModelProfile, Tenant
from convmem.tenancy import api_key_create
from threads import services
from threads.models import Thread

DEMO_TENANT = "demo"
DEMO_USER = "demo-user"
LONG_USER = "demo-user-long"
LEAVING_USER = "demo-user-leaving"
LONG_TURNS = 40
SEED = Actor.system("seed_demo")
CREDENTIALS_FILE = "demo-credentials.json"
# (username, group, label); the admin is a superuser in no group.
DEMO_STAFF = [
    ("admin", None, "Admin"),
    ("support", "Support", "Support"),
    ("compliance", "Compliance", "Compliance"),
]

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
class DemoKey:
    key: str
    # Why a new key was minted this run ("" when the stored key is still valid).
    minted_because: str


@dataclass(frozen=True)
class DemoLogin:
    username: str
    label: str
    # None when it cannot be shown: changed since the seed, or the credentials file was lost.
    password: str | None
    created: bool


@dataclass(frozen=True)
class DemoSeed:
    tenant: Tenant
    key: DemoKey
    logins: list[DemoLogin]
    thread: Thread
    long_thread: Thread
    deletion: DeletionRequest


def demo_credentials_path() -> Path:
    return Path(settings.VAR_DIR) / CREDENTIALS_FILE


def demo_seed() -> DemoSeed:
    """Create whatever part of the demo is missing, and nothing else; see the module docstring.

    The credentials file is written after the transaction commits, so it never names a key or
    a user that was rolled back.
    """
    stored = _stored_credentials()
    with transaction.atomic():
        tenant, _ = Tenant.objects.get_or_create(name=DEMO_TENANT)
        key = _demo_key(tenant, stored.get("api_key"))
        passwords = stored.get("passwords", {})
        logins = [
            _demo_login(username, group, label, passwords.get(username))
            for username, group, label in DEMO_STAFF
        ]
        thread = Thread.objects.filter(tenant=tenant, user_ref=DEMO_USER).order_by("id").first()
        if thread is None:
            thread = _demo_thread(tenant)
        long_thread = (
            Thread.objects.filter(tenant=tenant, user_ref=LONG_USER).order_by("id").first()
        )
        if long_thread is None:
            long_thread = _long_thread(tenant)
        deletion = (
            DeletionRequest.objects.filter(tenant=tenant, user_ref=LEAVING_USER)
            .order_by("id")
            .first()
        )
        if deletion is None:
            deletion = _deletion_request(tenant)
    _store_credentials(
        {
            "api_key": key.key,
            "passwords": {login.username: login.password for login in logins if login.password},
        }
    )
    return DemoSeed(
        tenant=tenant,
        key=key,
        logins=logins,
        thread=thread,
        long_thread=long_thread,
        deletion=deletion,
    )


def _demo_key(tenant: Tenant, stored: str | None) -> DemoKey:
    """The stored key while it still works for the demo tenant; otherwise a new one."""
    if stored is None:
        reason = "first run" if not tenant.api_keys.exists() else f"no key in {CREDENTIALS_FILE}"
    else:
        try:
            if ApiKey.objects.get_from_key(stored).tenant_id == tenant.pk:
                return DemoKey(key=stored, minted_because="")
        except ApiKey.DoesNotExist:
            pass
        reason = f"the key in {CREDENTIALS_FILE} was revoked, expired or deleted"
    _, key = api_key_create(tenant=tenant, name="demo", scopes=["export"])
    return DemoKey(key=key, minted_because=reason)


def _demo_login(username: str, group: str | None, label: str, stored: str | None) -> DemoLogin:
    """Create the staff user with a fresh password if missing; never touch an existing one."""
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        password = secrets.token_urlsafe(12)
        user = get_user_model().objects.create_user(
            username=username, password=password, is_staff=True, is_superuser=group is None
        )
        if group is not None:
            # Staff in the groups the audit migration creates: what each role sees in the admin.
            user.groups.set([Group.objects.get(name=group)])
        return DemoLogin(username=username, label=label, password=password, created=True)
    known = stored if stored is not None and user.check_password(stored) else None
    return DemoLogin(username=username, label=label, password=known, created=False)


def _stored_credentials() -> dict[str, Any]:
    try:
        stored = json.loads(demo_credentials_path().read_text())
    except (FileNotFoundError, ValueError):
        return {}
    return stored if isinstance(stored, dict) else {}


def _store_credentials(credentials: dict[str, Any]) -> None:
    """Write the file readable by its owner only: it holds a live key and passwords."""
    path = demo_credentials_path()
    partial = path.with_suffix(".tmp")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as out:
        json.dump(credentials, out, indent=2)
    partial.replace(path)


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
