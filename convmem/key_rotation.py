"""Key rotation: every live data key re-wrapped under the key provider's current key-encryption
key (KEK), content untouched (``manage.py rotate_keys``; docs/erasure.md, "Rotating the master
key").

Resumable by construction: each ``DataKey`` row records which KEK wrapped it (``kek_id``), and a
re-wrap replaces ``wrapped`` and ``kek_id`` together in one conditional UPDATE. A run that stops
half way leaves every key wrapped under either an old KEK or the new one, and a provider given
both (``CONVMEM_MASTER_KEY`` and ``CONVMEM_MASTER_KEY_PREVIOUS``) unwraps either; a re-run
re-wraps only the keys still under an old KEK.

Readers never see a stale wrapping: ``crypto`` reads ``wrapped`` and ``kek_id`` in one query,
and its per-process cache holds unwrapped keys, which a rotation does not change. The UPDATE
matches only a live row still under the KEK it was read with, so a key destroyed meanwhile
stays destroyed, and two runs at once never overwrite each other.
"""

from collections.abc import Callable
from dataclasses import dataclass, field

from cryptography.exceptions import InvalidTag
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction
from django.db.models import Count, QuerySet

from convmem.key_providers import KeyProvider, key_provider
from convmem.keys_router import KEYS_DB
from convmem.models import DataKey

BATCH_SIZE = 500


class RotationFailed(Exception):
    """The provider's new wrapping did not unwrap to the same key: nothing of the batch is
    written (a provider that cannot round-trip must never replace a working wrapping)."""


@dataclass
class RotationReport:
    rewrapped: int = 0
    # Destroyed, or re-wrapped by another run, between this run's read and its write.
    changed_meanwhile: int = 0
    # Live keys that no configured KEK unwraps (their master key is missing from the settings).
    unopenable: list[str] = field(default_factory=list)


def live_keys_by_kek() -> dict[str, int]:
    """How many live data keys each KEK wraps."""
    rows = (
        DataKey.objects.filter(destroyed_at__isnull=True)
        .values("kek_id")
        .annotate(n=Count("pk"))
        .order_by("kek_id")
    )
    return {row["kek_id"]: row["n"] for row in rows}


def keys_to_rewrap(provider: KeyProvider) -> QuerySet[DataKey]:
    """Live keys wrapped under another KEK than the provider's current one."""
    return DataKey.objects.filter(destroyed_at__isnull=True).exclude(kek_id=provider.kek_id)


def data_keys_rewrap(
    *,
    batch_size: int = BATCH_SIZE,
    dry_run: bool = False,
    on_batch: Callable[[int], None] | None = None,
) -> RotationReport:
    """Re-wrap every live key not under the current KEK, ``batch_size`` keys per transaction
    of the keys database; ``on_batch(keys read)`` after each. ``dry_run`` unwraps and re-wraps
    in memory (so it finds the keys no configured KEK opens) and writes nothing."""
    provider = key_provider()
    report = RotationReport()
    pending = keys_to_rewrap(provider).order_by("pk")
    last = 0
    while batch := list(
        pending.filter(pk__gt=last).values_list("pk", "key_id", "wrapped", "kek_id")[:batch_size]
    ):
        last = batch[-1][0]
        rewrapped = []
        for pk, key_id, wrapped, kek_id in batch:
            try:
                material = provider.unwrap(key_id, bytes(wrapped), kek_id)
            except (ImproperlyConfigured, InvalidTag):
                report.unopenable.append(key_id)
                continue
            rewrapped.append((pk, kek_id, _rewrapped(provider, key_id, material)))
        if dry_run:
            report.rewrapped += len(rewrapped)
        else:
            _store(provider, rewrapped, report)
        if on_batch is not None:
            on_batch(len(batch))
    return report


def _rewrapped(provider: KeyProvider, key_id: str, material: bytes) -> bytes:
    wrapped = provider.wrap(key_id, material)
    if provider.unwrap(key_id, wrapped, provider.kek_id) != material:
        raise RotationFailed(f"data key {key_id} does not unwrap after re-wrapping")
    return wrapped


def _store(
    provider: KeyProvider, rewrapped: list[tuple[int, str, bytes]], report: RotationReport
) -> None:
    """One short transaction per batch; each row changes only if still live and still under
    the KEK it was read with."""
    with transaction.atomic(using=KEYS_DB):
        for pk, old_kek_id, wrapped in rewrapped:
            stored = DataKey.objects.filter(
                pk=pk, kek_id=old_kek_id, destroyed_at__isnull=True
            ).update(wrapped=wrapped, kek_id=provider.kek_id)
            if stored:
                report.rewrapped += 1
            else:
                report.changed_meanwhile += 1
