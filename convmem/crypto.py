"""Per-subject encryption: the only module that encrypts or decrypts content.

A subject is (tenant, ``user_ref``); a thread without a ``user_ref`` is a subject of its own.
Each subject has one data key (AES-256-GCM), kept wrapped by the key provider
(``convmem.key_providers``) in the ``keys`` database, never in the content database. Destroying
it (an erasure of the subject) leaves every copy of the subject's content — live rows, backups,
replicas, dumps — ciphertext that no key opens.

A stored value says what it is: ``enc1:<key id>:<base64 of nonce + ciphertext>``; anything else
is a value written before encryption (read as it is). The associated data binds a ciphertext to
its row and column (``row_aad``), so a value copied into another row or column is refused.

Unwrapped keys are cached per process: at most ``CONVMEM_KEY_CACHE_SIZE`` (least recently used
dropped) for at most ``CONVMEM_KEY_CACHE_SECONDS`` (so a key another process destroyed is
forgotten here too). The hot path (append, context) pays the keys database only on a key's
first use in a process.
"""

import base64
import binascii
import hashlib
import hmac
import json
import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from convmem.key_providers import key_provider
from convmem.keys_router import KEYS_DB

PREFIX = "enc1:"
NONCE_BYTES = 12
THREAD_SUBJECT_PREFIX = "thread:"


class KeyUnavailable(Exception):
    """The data key is destroyed (its subject was erased) or unknown to this key store."""


class CiphertextRejected(Exception):
    """The value does not open under its row's identity (tampered, or moved from another row)."""


def encryption_enabled() -> bool:
    return bool(settings.CONVMEM_ENCRYPT_CONTENT)


def row_aad(table: str, row_id: str, column: str) -> bytes:
    """The associated data of a column value: the table, the row's stable public id, the column."""
    return f"{table}|{row_id}|{column}".encode()


def subject_of(user_ref: str, thread_public_id: str) -> str:
    return user_ref if user_ref else THREAD_SUBJECT_PREFIX + thread_public_id


# --- The per-process cache ------------------------------------------------------------------------


Key = TypeVar("Key")


class _KeyCache(Generic[Key]):
    """key id -> (key object: an AESGCM, or a search key's keyed HMAC; loaded at), bounded by
    size and age."""

    def __init__(self) -> None:
        self._keys: OrderedDict[str, tuple[Key, float]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key_id: str) -> Key | None:
        with self._lock:
            entry = self._keys.get(key_id)
            if entry is None:
                return None
            if time.monotonic() - entry[1] > settings.CONVMEM_KEY_CACHE_SECONDS:
                del self._keys[key_id]
                return None
            self._keys.move_to_end(key_id)
            return entry[0]

    def put(self, key_id: str, key: Key) -> None:
        with self._lock:
            self._keys[key_id] = (key, time.monotonic())
            self._keys.move_to_end(key_id)
            while len(self._keys) > settings.CONVMEM_KEY_CACHE_SIZE:
                self._keys.popitem(last=False)

    def drop(self, key_id: str) -> None:
        with self._lock:
            self._keys.pop(key_id, None)

    def clear(self) -> None:
        with self._lock:
            self._keys.clear()

    def __len__(self) -> int:
        return len(self._keys)


key_cache: _KeyCache[AESGCM] = _KeyCache()


# --- The key store (the ``keys`` database) ------------------------------------------------------


def _new_key_id() -> str:
    return "dk_" + secrets.token_hex(12)


def subject_key_id(*, tenant_id: int, subject: str) -> str:
    """The id of the subject's live data key, made (and wrapped) on first use."""
    from convmem.models import DataKey

    live = DataKey.objects.filter(tenant_id=tenant_id, subject=subject, destroyed_at__isnull=True)
    found = live.values_list("key_id", flat=True).first()
    if found:
        return found
    provider = key_provider()
    key_id = _new_key_id()
    material = AESGCM.generate_key(bit_length=256)
    try:
        with transaction.atomic(using=KEYS_DB):
            DataKey.objects.create(
                key_id=key_id,
                tenant_id=tenant_id,
                subject=subject,
                wrapped=provider.wrap(key_id, material),
                kek_id=provider.kek_id,
            )
    except IntegrityError:
        # Another process made the subject's key first: use that one.
        return live.values_list("key_id", flat=True).get()
    key_cache.put(key_id, AESGCM(material))
    return key_id


def _cipher(key_id: str) -> AESGCM:
    from convmem.models import DataKey

    cipher = key_cache.get(key_id)
    if cipher is not None:
        return cipher
    row = DataKey.objects.filter(key_id=key_id).values_list("wrapped", "kek_id").first()
    if row is None or row[0] is None:
        raise KeyUnavailable(f"data key {key_id} is destroyed or unknown")
    cipher = AESGCM(key_provider().unwrap(key_id, bytes(row[0]), row[1]))
    key_cache.put(key_id, cipher)
    return cipher


@dataclass(frozen=True)
class DestroyedKey:
    key_id: str
    destroyed_at: datetime


def subject_keys_destroy(*, tenant_id: int, subject: str) -> list[DestroyedKey]:
    """Destroy the subject's data key(s), committed in the keys database at once: called by an
    erasure before it touches the rows, so a crash in between leaves the content unreadable,
    never readable. Returns what was destroyed (for the proof); already destroyed keys are not
    listed again."""
    from convmem.models import DataKey

    now = timezone.now()
    destroyed = []
    with transaction.atomic(using=KEYS_DB):
        live = DataKey.objects.select_for_update().filter(
            tenant_id=tenant_id, subject=subject, destroyed_at__isnull=True
        )
        for key_id in live.values_list("key_id", flat=True):
            DataKey.objects.filter(key_id=key_id).update(wrapped=None, destroyed_at=now)
            destroyed.append(DestroyedKey(key_id=key_id, destroyed_at=now))
    for key in destroyed:
        key_cache.drop(key.key_id)
        search_key_cache.drop(key.key_id)
        key_provider().destroy(key.key_id)
    return destroyed


# --- Sealing and opening values ---------------------------------------------------------------


def is_sealed(value: Any) -> bool:
    return isinstance(value, str) and value.startswith(PREFIX)


def seal_bytes(data: bytes, *, key_id: str, aad: bytes) -> str:
    nonce = secrets.token_bytes(NONCE_BYTES)
    sealed = nonce + _cipher(key_id).encrypt(nonce, data, aad)
    return f"{PREFIX}{key_id}:{base64.b64encode(sealed).decode()}"


def open_bytes(stored: str, *, aad: bytes) -> bytes:
    try:
        key_id, body = stored[len(PREFIX) :].split(":", 1)
        sealed = binascii.a2b_base64(body, strict_mode=True)
    except ValueError as error:
        raise CiphertextRejected("not a sealed value") from error
    try:
        return _cipher(key_id).decrypt(sealed[:NONCE_BYTES], sealed[NONCE_BYTES:], aad)
    except InvalidTag as error:
        raise CiphertextRejected("the value does not open under this row's identity") from error


def seal_text(text: str, *, key_id: str, aad: bytes) -> str:
    return seal_bytes(text.encode(), key_id=key_id, aad=aad)


def open_text(stored: str, *, aad: bytes) -> str:
    """A stored text value in clear (values written before encryption come back as they are)."""
    if not is_sealed(stored):
        return stored
    return open_bytes(stored, aad=aad).decode()


def seal_json(value: Any, *, key_id: str, aad: bytes) -> Any:
    """A JSON value as one sealed JSON string (None stays None: "absent" is not content)."""
    if value is None:
        return None
    return seal_bytes(json.dumps(value, separators=(",", ":")).encode(), key_id=key_id, aad=aad)


def open_json(stored: Any, *, aad: bytes) -> Any:
    if not is_sealed(stored):
        return stored
    return json.loads(open_bytes(stored, aad=aad))


# --- The blind index: keyed hashes of words (``convmem.blind_index``) -------------------------
#
# A search key is derived from the subject's data key (HKDF-SHA256, its own ``info``), so it
# lives and dies with the data key: once the data key is destroyed, the hashes a backup holds
# can no longer be recomputed for any word, and a dictionary attack needs the key.

SEARCH_KEY_INFO = b"convmem blind index v1"
SEARCH_TOKEN_BYTES = 8

# key id -> the HMAC keyed with the search key, bounded and dropped like the data keys: each
# word's hash is a copy of it fed the word, so the key schedule is paid once per key, not
# once per word.
search_key_cache: _KeyCache[hmac.HMAC] = _KeyCache()


def _search_key_derive(material: bytes) -> hmac.HMAC:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    search_key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=SEARCH_KEY_INFO)
    return hmac.new(search_key.derive(material), digestmod=hashlib.sha256)


def search_keys_load(key_ids: list[str]) -> dict[str, hmac.HMAC]:
    """The keyed HMACs of the search keys of ``key_ids`` that are live, by key id (destroyed or
    unknown ones are left out): cached ones from the cache, the others unwrapped after one
    keys-database query for all of them."""
    from convmem.models import DataKey

    found: dict[str, hmac.HMAC] = {}
    missing = []
    for key_id in key_ids:
        cached = search_key_cache.get(key_id)
        if cached is None:
            missing.append(key_id)
        else:
            found[key_id] = cached  # type: ignore[assignment]
    if missing:
        provider = key_provider()
        rows = DataKey.objects.filter(key_id__in=missing, wrapped__isnull=False).values_list(
            "key_id", "wrapped", "kek_id"
        )
        for key_id, wrapped, kek_id in rows:
            search_key = _search_key_derive(provider.unwrap(key_id, bytes(wrapped), kek_id))
            search_key_cache.put(key_id, search_key)  # type: ignore[arg-type]
            found[key_id] = search_key
    return found


def search_tokens(words: list[str], *, key_id: str) -> list[str]:
    """Each word's keyed hash under the search key of ``key_id`` (HMAC-SHA256, truncated to
    ``SEARCH_TOKEN_BYTES``, hex), in the order given. Raises ``KeyUnavailable`` when the key is
    destroyed or unknown."""
    keyed = search_keys_load([key_id]).get(key_id)
    if keyed is None:
        raise KeyUnavailable(f"data key {key_id} is destroyed or unknown")
    tokens = []
    for word in words:
        mac = keyed.copy()
        mac.update(word.encode())
        tokens.append(mac.digest()[:SEARCH_TOKEN_BYTES].hex())
    return tokens


def live_key_ids(*, tenant_id: int | None = None, subject: str | None = None) -> list[str]:
    """The ids of the live data keys of a tenant (or of every tenant), or of one subject."""
    from convmem.models import DataKey

    live = DataKey.objects.filter(destroyed_at__isnull=True)
    if tenant_id is not None:
        live = live.filter(tenant_id=tenant_id)
    if subject is not None:
        live = live.filter(subject=subject)
    return list(live.values_list("key_id", flat=True))
