"""``manage.py rotate_keys``: every live data key re-wrapped under the new master key, content
untouched; an interrupted run leaves every key openable and a re-run finishes; afterwards the
content opens with the new master key alone."""

import base64
import os
from collections.abc import Iterator
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from convmem import crypto, key_rotation
from convmem.key_providers import LocalKeyProvider, key_provider_reset, local_kek_id
from convmem.models import DataKey
from tests.conftest import SYSTEM, TenantKit
from threads import services
from threads.models import Message, Thread

pytestmark = pytest.mark.django_db

OLD, NEW = os.urandom(32), os.urandom(32)


def _b64(key: bytes) -> str:
    return base64.b64encode(key).decode()


def _configure(settings: Any, current: bytes, previous: list[bytes] | None = None) -> None:
    """As a process started with these master keys: a fresh provider and an empty cache."""
    settings.CONVMEM_MASTER_KEY = _b64(current)
    settings.CONVMEM_MASTER_KEY_PREVIOUS = [_b64(k) for k in previous or []]
    key_provider_reset()
    crypto.key_cache.clear()


@pytest.fixture(autouse=True)
def sealed_under_old(settings: Any) -> Iterator[None]:
    settings.CONVMEM_ENCRYPT_CONTENT = True
    _configure(settings, OLD)
    yield
    key_provider_reset()
    crypto.key_cache.clear()


def _subjects(acme: TenantKit, n: int) -> list[Thread]:
    threads = []
    for i in range(n):
        thread = services.thread_create(tenant=acme.tenant, actor=SYSTEM, user_ref=f"user-{i}")
        services.message_append(thread=thread, actor=SYSTEM, role="user", content=f"canary {i}")
        threads.append(thread)
    return threads


def _texts(threads: list[Thread]) -> list[str]:
    return [Message.objects.filter(thread=t, role="user").get().content for t in threads]


def _stored_content() -> list[str]:
    return sorted(Message.objects.filter(role="user").values_list("content", flat=True))


def _rotate(*args: str) -> str:
    out = StringIO()
    call_command("rotate_keys", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_rotation_rewraps_every_live_key_and_the_content_opens_with_the_new_key_alone(
    acme: TenantKit, settings: Any
) -> None:
    threads = _subjects(acme, 3)
    erased = services.thread_create(tenant=acme.tenant, actor=SYSTEM, user_ref="gone")
    gone = crypto.subject_keys_destroy(tenant_id=acme.tenant.pk, subject=erased.subject)
    stored = _stored_content()
    _configure(settings, NEW, [OLD])

    output = _rotate()

    assert f"Re-wrapped 3 of 3 data keys under {local_kek_id(NEW)}" in output
    live = DataKey.objects.filter(destroyed_at__isnull=True)
    assert set(live.values_list("kek_id", flat=True)) == {local_kek_id(NEW)}
    destroyed = DataKey.objects.get(key_id=gone[0].key_id)
    assert destroyed.wrapped is None  # a destroyed key is not brought back
    assert destroyed.kek_id == local_kek_id(OLD)
    assert _stored_content() == stored  # the content was not rewritten
    _configure(settings, NEW)
    assert _texts(threads) == ["canary 0", "canary 1", "canary 2"]
    assert "Re-wrapped 0 of 0" in _rotate()  # nothing left to do


def test_a_process_that_cached_a_key_before_the_rotation_keeps_opening_with_it(
    acme: TenantKit, settings: Any
) -> None:
    (thread,) = _subjects(acme, 1)
    assert _texts([thread]) == ["canary 0"]  # its key is in this process's cache
    settings.CONVMEM_MASTER_KEY = _b64(NEW)
    settings.CONVMEM_MASTER_KEY_PREVIOUS = [_b64(OLD)]
    key_provider_reset()  # the rotation's provider; the cache of this process stays

    _rotate()

    # The cache holds the unwrapped key, which a rotation does not change...
    assert crypto.key_cache.get(thread.data_key_id) is not None
    assert _texts([thread]) == ["canary 0"]
    # ...and a cache miss reads the new wrapping with the KEK id stored beside it.
    _configure(settings, NEW)
    assert _texts([thread]) == ["canary 0"]


def test_an_interrupted_rotation_leaves_every_key_openable_and_a_rerun_finishes(
    acme: TenantKit, settings: Any
) -> None:
    threads = _subjects(acme, 5)
    _configure(settings, NEW, [OLD])

    def crash_after_the_first_batch(keys_read: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        key_rotation.data_keys_rewrap(batch_size=2, on_batch=crash_after_the_first_batch)

    keks = sorted(DataKey.objects.values_list("kek_id", flat=True))
    assert keks.count(local_kek_id(NEW)) == 2
    assert keks.count(local_kek_id(OLD)) == 3
    crypto.key_cache.clear()
    assert _texts(threads) == [f"canary {i}" for i in range(5)]

    assert "Re-wrapped 3 of 3" in _rotate("--batch-size", "2")

    _configure(settings, NEW)
    assert _texts(threads) == [f"canary {i}" for i in range(5)]


def test_keys_under_a_master_key_not_configured_are_named_and_left_as_they_are(
    acme: TenantKit, settings: Any
) -> None:
    _subjects(acme, 2)
    before = list(DataKey.objects.order_by("pk").values_list("wrapped", "kek_id"))
    _configure(settings, NEW)  # the previous key forgotten

    with pytest.raises(CommandError, match="CONVMEM_MASTER_KEY_PREVIOUS"):
        _rotate()

    assert list(DataKey.objects.order_by("pk").values_list("wrapped", "kek_id")) == before


def test_a_dry_run_unwraps_everything_and_writes_nothing(acme: TenantKit, settings: Any) -> None:
    _subjects(acme, 2)
    before = list(DataKey.objects.order_by("pk").values_list("wrapped", "kek_id"))
    _configure(settings, NEW, [OLD])

    output = _rotate("--dry-run")

    assert f"2 live data keys under {local_kek_id(OLD)}" in output
    assert "Would re-wrap 2 of 2 data keys" in output
    assert list(DataKey.objects.order_by("pk").values_list("wrapped", "kek_id")) == before


class _LosingProvider(LocalKeyProvider):
    """A provider whose new wrappings do not unwrap (a misconfigured KMS)."""

    def wrap(self, key_id: str, data_key: bytes) -> bytes:
        return super().wrap(key_id, os.urandom(len(data_key)))


def test_a_provider_whose_wrapping_does_not_round_trip_stops_the_rotation(
    acme: TenantKit, settings: Any
) -> None:
    threads = _subjects(acme, 2)
    settings.CONVMEM_KEY_PROVIDER = f"{__name__}._LosingProvider"
    _configure(settings, NEW, [OLD])

    with pytest.raises(key_rotation.RotationFailed):
        key_rotation.data_keys_rewrap()

    assert set(DataKey.objects.values_list("kek_id", flat=True)) == {local_kek_id(OLD)}
    settings.CONVMEM_KEY_PROVIDER = "convmem.key_providers.LocalKeyProvider"
    _configure(settings, OLD)
    assert _texts(threads) == ["canary 0", "canary 1"]


class _DestroyingProvider(LocalKeyProvider):
    """Unwraps as the subject's erasure commits in another process (between the rotation's
    read of the key and its write)."""

    def unwrap(self, key_id: str, wrapped: bytes, kek_id: str) -> bytes:
        material = super().unwrap(key_id, wrapped, kek_id)
        DataKey.objects.filter(key_id=key_id).update(wrapped=None, destroyed_at=timezone.now())
        return material


def test_a_key_destroyed_while_the_rotation_runs_stays_destroyed(
    acme: TenantKit, settings: Any
) -> None:
    (thread,) = _subjects(acme, 1)
    settings.CONVMEM_KEY_PROVIDER = f"{__name__}._DestroyingProvider"
    _configure(settings, NEW, [OLD])

    report = key_rotation.data_keys_rewrap()

    assert (report.rewrapped, report.changed_meanwhile) == (0, 1)
    assert DataKey.objects.get(key_id=thread.data_key_id).wrapped is None
