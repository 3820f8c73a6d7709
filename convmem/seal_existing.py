"""Sealing the rows written before encryption was turned on (``manage.py encrypt_existing``).

Every model with sealed fields (``SealedRow``) is walked in primary-key batches while the
service runs: each batch reads the stored values as they are (no decryption), keeps the rows
whose content is still in clear (``SealedField.needs_sealing``; the model's ``SEALABLE_ROWS``
leaves erasure's markers out), and seals those in one short transaction of its own.

- **Resumable.** Each batch commits on its own; a re-run walks the table again, and the rows
  already sealed cost a read and a prefix check, nothing else.
- **No downtime.** The keys a batch needs are made before its transaction (a thread without a
  ``data_key_id`` gets it then, outside any row lock). The transaction locks only the batch's
  rows (``FOR NO KEY UPDATE`` on PostgreSQL: appends inserting children of them pass; an
  erasure of them waits for the batch, and a batch that waited for an erasure re-reads the rows
  and leaves the erased ones alone) and re-reads their stored values under the lock, so a value
  changed meanwhile is never overwritten with its old content. On SQLite write transactions are
  IMMEDIATE: batches and erasures take turns. Appends made meanwhile are sealed as they are
  written (encryption is on) and skipped here.
"""

from collections.abc import Callable, Iterator
from typing import Any

from django.apps import apps
from django.db import models, transaction

from convmem.sealed_fields import BlindIndexField, SealedRow, sealed_fields

BATCH_SIZE = 500


def sealed_models() -> list[type[models.Model]]:
    """Every installed model with sealed fields (proxies share their model's table: left out)."""
    return [
        m
        for m in apps.get_models()
        if issubclass(m, SealedRow) and sealed_fields(m) and not m._meta.proxy
    ]


def sealable_rows(model: type[models.Model]) -> models.QuerySet:
    """The rows whose clear values are content (not an erasure's markers)."""
    return model._base_manager.filter(model.SEALABLE_ROWS)  # type: ignore[attr-defined]


def _stored_values(queryset: models.QuerySet, fields: list[Any]) -> list[tuple[Any, ...]]:
    """(pk, stored value of each sealed field) as stored: ``values_list`` does not open them."""
    return list(queryset.values_list("pk", *(f.attname for f in fields)))


def _clear_fields(fields: list[Any], stored: tuple[Any, ...]) -> list[Any]:
    return [f for f, value in zip(fields, stored[1:], strict=True) if f.needs_sealing(value)]


def _batches(model: type[models.Model], fields: list[Any], batch_size: int) -> Iterator[list[Any]]:
    """The sealable rows' stored values, ``batch_size`` rows per query, in primary-key order."""
    last = None
    while True:
        page = sealable_rows(model).order_by("pk")
        if last is not None:
            page = page.filter(pk__gt=last)
        rows = _stored_values(page[:batch_size], fields)
        yield rows
        if len(rows) < batch_size:
            return
        last = rows[-1][0]


def clear_rows_count(model: type[models.Model], *, batch_size: int = BATCH_SIZE) -> int:
    """How many of the model's rows still hold content in clear."""
    fields = sealed_fields(model)
    return sum(
        1
        for rows in _batches(model, fields, batch_size)
        for row in rows
        if _clear_fields(fields, row)
    )


def clear_rows_seal(
    model: type[models.Model],
    *,
    batch_size: int = BATCH_SIZE,
    on_batch: Callable[[int, int], None] | None = None,
) -> int:
    """Seal the model's rows written in clear, ``batch_size`` rows read per batch; returns how
    many rows were sealed. ``on_batch(rows read, rows sealed)`` after each batch's commit.
    Call with encryption on (``CONVMEM_ENCRYPT_CONTENT``), or rows appended meanwhile would be
    written in clear behind it."""
    fields = sealed_fields(model)
    sealed = 0
    for rows in _batches(model, fields, batch_size):
        clear = [row[0] for row in rows if _clear_fields(fields, row)]
        done = _batch_seal(model, fields, clear) if clear else 0
        sealed += done
        if on_batch is not None:
            on_batch(len(rows), done)
    return sealed


def _batch_seal(model: type[models.Model], fields: list[Any], pks: list[int]) -> int:
    # The rows with their relations (one query per relation, shared by the rows), and each
    # row's key made now, before any lock is taken.
    related = model.SEALING_RELATED  # type: ignore[attr-defined]
    loaded = model._base_manager.filter(pk__in=pks).prefetch_related(*related)
    rows = {row.pk: row for row in loaded}
    for row in rows.values():
        row.sealing_key_id()
    with transaction.atomic():
        locked = sealable_rows(model).filter(pk__in=pks).select_for_update(no_key=True)
        changed: dict[tuple[str, ...], list[Any]] = {}
        for stored in _stored_values(locked, fields):
            row = rows[stored[0]]
            clear = _clear_fields(fields, stored)
            if not clear:
                continue
            blind = _blind_documents_set(row, fields, clear, stored)
            for f in clear:
                value = stored[1 + fields.index(f)]
                setattr(row, f.attname, f.sealed(row, value))
            changed.setdefault(tuple(f.attname for f in clear) + blind, []).append(row)
        for names, group in changed.items():
            model._base_manager.bulk_update(group, list(names))
    return sum(len(group) for group in changed.values())


def _blind_documents_set(
    row: Any, fields: list[Any], clear: list[Any], stored: tuple[Any, ...]
) -> tuple[str, ...]:
    """Give the row its blind document (``convmem.blind_index``) from the values just re-read
    under the lock, before they are sealed: a row sealed here is found by search and recall as
    one sealed when written is. ``bulk_update`` does not call ``pre_save``, so it is set here;
    returns the names of the fields set."""
    blind = [f for f in type(row)._meta.concrete_fields if isinstance(f, BlindIndexField)]
    if not blind:
        return ()
    for f in clear:  # the values re-read under the lock (the row's others were opened on load)
        setattr(row, f.attname, stored[1 + fields.index(f)])
    for f in blind:
        f.pre_save(row, False)
    return tuple(f.attname for f in blind)
