"""Model fields whose values are sealed with the row's subject key when written.

A field seals in ``pre_save`` (which ``save``, ``bulk_create`` and ``convmem.db.rows_insert``
all call), so every write path encrypts; ``QuerySet.update`` writes as given (erasure writes
its markers that way). The model says which key and which identity (``SealedRow``), and opens
its values when loaded (``SealedRow.from_db``). ``convmem.crypto`` does the cryptography.
"""

from typing import Any

from django.db import models
from django.db.models import Q

from convmem import crypto
from convmem.blind_index import blind_document


class SealedRow:
    """Mixin for a model with sealed fields. ``sealing_key_id()`` is the data key of the row's
    subject ('' when the row is not to be sealed); the public id is the row's identity."""

    SEALED_IDENTITY = "public_id"
    # For sealing rows written before encryption (``convmem.seal_existing``): the relations
    # ``sealing_key_id`` reads through (loaded once per batch), and which rows hold content
    # (an erasure's clear markers are not content, and queries compare them as stored).
    SEALING_RELATED: tuple[str, ...] = ()
    SEALABLE_ROWS = Q()

    def sealing_key_id(self, renew: bool = False) -> str:
        raise NotImplementedError

    def sealing_aad(self, column: str, part: str = "") -> bytes:
        row_id = getattr(self, self.SEALED_IDENTITY)
        return crypto.row_aad(self._meta.db_table, row_id, column + part)

    def stored_for_update(self, field_name: str, value: Any) -> Any:
        """``value`` as the sealed field ``field_name`` of this row stores it (sealed when
        encryption is on): for writes with ``QuerySet.update``, which skips ``pre_save``."""
        field = self._meta.get_field(field_name)  # type: ignore[attr-defined]
        if not crypto.encryption_enabled() or not field.needs_sealing(value):
            return value
        return field.sealed(self, value)

    @classmethod
    def from_db(cls, db: str, field_names: Any, values: Any) -> Any:
        instance = super().from_db(db, field_names, values)  # type: ignore[misc]
        for field in sealed_fields(cls):
            if field.attname in instance.__dict__:
                stored = instance.__dict__[field.attname]
                if field.holds_sealed(stored):
                    instance.__dict__[field.attname] = _open_unless_destroyed(
                        field, instance, stored
                    )
        return instance


_SEALED_FIELDS: dict[type, list[Any]] = {}


def sealed_fields(model: type) -> list[Any]:
    """The model's sealed fields (cached per model)."""
    if model not in _SEALED_FIELDS:
        _SEALED_FIELDS[model] = [
            f
            for f in model._meta.concrete_fields  # type: ignore[attr-defined]
            if isinstance(f, SealedField)
        ]
    return _SEALED_FIELDS[model]


def _open_unless_destroyed(field: "SealedField", instance: SealedRow, stored: Any) -> Any:
    """The value in clear; or, when its subject's key was destroyed (the row is being erased,
    or a restored backup is read), the stored ciphertext as it is: an erasure that destroyed
    the key first still loads the rows it then tombstones."""
    try:
        return field.open(instance, stored)
    except crypto.KeyUnavailable:
        return stored


class SealedField:
    """How one field's value is sealed and opened (mixed into a Django field)."""

    def seal(self, instance: SealedRow, value: Any, key_id: str) -> Any:
        raise NotImplementedError

    def open(self, instance: SealedRow, stored: Any) -> Any:
        raise NotImplementedError

    def holds_sealed(self, stored: Any) -> bool:
        return crypto.is_sealed(stored)

    def deconstruct(self) -> Any:
        # Migrations see the plain Django field: the column is the same, and historical models
        # (data migrations) read and write stored values as they are.
        name, _path, args, kwargs = super().deconstruct()  # type: ignore[misc]
        base = next(b for b in type(self).__mro__ if b.__module__.startswith("django.db.models"))
        return name, f"django.db.models.{base.__name__}", args, kwargs

    def needs_sealing(self, stored: Any) -> bool:
        """A stored value that is content in clear (empty values are not content)."""
        return stored not in (None, "", {}, []) and not self.holds_sealed(stored)

    def sealed(self, instance: SealedRow, value: Any) -> Any:
        """``value`` sealed with the row's subject key (as it is when the row is not sealed)."""
        key_id = instance.sealing_key_id()
        if not key_id:
            return value
        try:
            return self.seal(instance, value, key_id)
        except crypto.KeyUnavailable:
            # The subject was erased since the row's key id was read: the subject's new key.
            return self.seal(instance, value, instance.sealing_key_id(renew=True))

    def pre_save(self, model_instance: Any, add: bool) -> Any:
        value = super().pre_save(model_instance, add)  # type: ignore[misc]
        if not crypto.encryption_enabled() or not self.needs_sealing(value):
            return value
        return self.sealed(model_instance, value)


class SealedTextField(SealedField, models.TextField):
    def seal(self, instance: SealedRow, value: Any, key_id: str) -> Any:
        return crypto.seal_text(value, key_id=key_id, aad=instance.sealing_aad(self.column))

    def open(self, instance: SealedRow, stored: Any) -> Any:
        return crypto.open_text(stored, aad=instance.sealing_aad(self.column))


class SealedJSONField(SealedField, models.JSONField):
    """The whole JSON value sealed as one JSON string."""

    def seal(self, instance: SealedRow, value: Any, key_id: str) -> Any:
        return crypto.seal_json(value, key_id=key_id, aad=instance.sealing_aad(self.column))

    def open(self, instance: SealedRow, stored: Any) -> Any:
        return crypto.open_json(stored, aad=instance.sealing_aad(self.column))


class SealedValuesJSONField(SealedField, models.JSONField):
    """A JSON object whose keys stay in clear and whose values are sealed one by one."""

    def holds_sealed(self, stored: Any) -> bool:
        return isinstance(stored, dict) and any(crypto.is_sealed(v) for v in stored.values())

    def seal(self, instance: SealedRow, value: Any, key_id: str) -> Any:
        return {
            k: crypto.seal_json(v, key_id=key_id, aad=instance.sealing_aad(self.column, "." + k))
            for k, v in value.items()
        }

    def open(self, instance: SealedRow, stored: Any) -> Any:
        return {
            k: crypto.open_json(v, aad=instance.sealing_aad(self.column, "." + k))
            for k, v in stored.items()
        }


class SealedBinaryField(SealedField, models.BinaryField):
    """Bytes sealed as they are: stored as the ASCII bytes of the sealed value, which no value
    this project stores in clear begins with (zlib data begins with 0x78)."""

    def holds_sealed(self, stored: Any) -> bool:
        return (
            isinstance(stored, bytes | memoryview) and bytes(stored[:5]) == crypto.PREFIX.encode()
        )

    def needs_sealing(self, stored: Any) -> bool:
        return stored not in (None, b"") and not self.holds_sealed(stored)

    def seal(self, instance: SealedRow, value: Any, key_id: str) -> Any:
        sealed = crypto.seal_bytes(
            bytes(value), key_id=key_id, aad=instance.sealing_aad(self.column)
        )
        return sealed.encode()

    def open(self, instance: SealedRow, stored: Any) -> Any:
        return crypto.open_bytes(bytes(stored).decode(), aad=instance.sealing_aad(self.column))


class SealedToolCallsField(SealedField, models.JSONField):
    """Tool calls with each call's ``function.arguments`` sealed: ids and names stay in clear
    (the structure erasure keeps), the arguments carry what the user asked for."""

    def holds_sealed(self, stored: Any) -> bool:
        return isinstance(stored, list) and any(
            crypto.is_sealed(_arguments(call)) for call in stored
        )

    def seal(self, instance: SealedRow, value: Any, key_id: str) -> Any:
        return [
            _with_arguments(
                call,
                crypto.seal_text(
                    _arguments(call),
                    key_id=key_id,
                    aad=_aad(instance, self, call),
                ),
            )
            if isinstance(_arguments(call), str)
            else call
            for call in value
        ]

    def open(self, instance: SealedRow, stored: Any) -> Any:
        return [
            _with_arguments(
                call,
                crypto.open_text(_arguments(call), aad=_aad(instance, self, call)),
            )
            if crypto.is_sealed(_arguments(call))
            else call
            for call in stored
        ]


def _arguments(call: Any) -> Any:
    if isinstance(call, dict) and isinstance(call.get("function"), dict):
        return call["function"].get("arguments")
    return None


def _aad(instance: SealedRow, field: models.Field, call: dict[str, Any]) -> bytes:
    return instance.sealing_aad(field.column, "." + str(call.get("id", "")))


def _with_arguments(call: dict[str, Any], arguments: str) -> dict[str, Any]:
    return {**call, "function": {**call["function"], "arguments": arguments}}


class _RowIdentity:
    """A row known only by its model and public id (a value read by raw SQL)."""

    def __init__(self, model: type[models.Model], row_id: str) -> None:
        self._table = model._meta.db_table
        self._row_id = row_id

    def sealing_aad(self, column: str, part: str = "") -> bytes:
        return crypto.row_aad(self._table, self._row_id, column + part)


def stored_open(model: type[models.Model], field_name: str, row_id: str, stored: Any) -> Any:
    """A value of ``model.field_name`` read without the ORM (raw SQL, ``values_list``), in
    clear; ``row_id`` is the row's public id. Values that are not sealed come back as they are."""
    field = model._meta.get_field(field_name)
    if not isinstance(field, SealedField) or not field.holds_sealed(stored):
        return stored
    return field.open(_RowIdentity(model, row_id), stored)  # type: ignore[arg-type]


class BlindIndexField(models.TextField):
    """A sealed row's blind document (``convmem.blind_index``), computed in ``pre_save`` from
    the row's text in clear (``blind_index_text()``) under the key its fields are sealed with:
    "" when sealing is off, so the index reads the content itself. Like the sealed fields it is
    computed on every write path that calls ``pre_save`` (``save``, ``bulk_create``,
    ``convmem.db.rows_insert`` and the one-statement append); erasure clears it with
    ``update()``. A row whose ``blind_index_text()`` is None is not indexed."""

    def pre_save(self, model_instance: Any, add: bool) -> Any:
        if not crypto.encryption_enabled():
            return super().pre_save(model_instance, add)
        text = model_instance.blind_index_text()
        key_id = model_instance.sealing_key_id() if text is not None else ""
        if not key_id:
            return ""
        try:
            document = blind_document(text, key_id)
        except crypto.KeyUnavailable:
            document = blind_document(text, model_instance.sealing_key_id(renew=True))
        setattr(model_instance, self.attname, document)
        return document

    def deconstruct(self) -> Any:
        name, _path, args, kwargs = super().deconstruct()
        return name, "django.db.models.TextField", args, kwargs
