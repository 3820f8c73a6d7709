"""Key providers: what wraps a subject's data key for storage, and unwraps it to use it.

``convmem.crypto`` keeps each subject's data key wrapped in the ``keys`` database; the provider
named by ``CONVMEM_KEY_PROVIDER`` does the wrapping. ``LocalKeyProvider`` (the default) wraps
with AES-256-GCM under a master key-encryption key from ``CONVMEM_MASTER_KEY``, and unwraps
under it or under any of the earlier master keys listed in ``CONVMEM_MASTER_KEY_PREVIOUS``
(a rotation: ``manage.py rotate_keys`` re-wraps every data key under the current one, see
``convmem.key_rotation``). A KMS plugs in by implementing ``KeyProvider`` (its ``wrap``/
``unwrap`` call the KMS's encrypt/decrypt with the data key's id as encryption context, and
``destroy`` may schedule the deletion of anything the KMS keeps per subject).
"""

import base64
import hashlib
import os
import secrets
from abc import ABC, abstractmethod
from pathlib import Path

from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string

MASTER_KEY_FILE = "master-key"
NONCE_BYTES = 12


class KeyProvider(ABC):
    """The interface a KMS implements. ``kek_id`` names the key-encryption key new wraps use."""

    kek_id: str

    @abstractmethod
    def wrap(self, key_id: str, data_key: bytes) -> bytes:
        """``data_key`` wrapped under the current key-encryption key."""

    @abstractmethod
    def unwrap(self, key_id: str, wrapped: bytes, kek_id: str) -> bytes:
        """The data key ``wrapped`` holds, wrapped under ``kek_id``."""

    def destroy(self, key_id: str) -> None:  # noqa: B027 (an optional hook: a KMS deletes its own copy)
        """Called after the store has cleared the wrapped key (nothing more to do locally)."""


def _wrap_aad(key_id: str) -> bytes:
    # A wrapped key opens only as the key it was wrapped for (no swapping of rows).
    return b"convmem-data-key|" + key_id.encode()


def _development_master_key() -> bytes:
    """A master key generated once into VAR_DIR (git-ignored), as the demo credentials are."""
    path = Path(settings.VAR_DIR) / MASTER_KEY_FILE
    if not path.exists():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(base64.b64encode(secrets.token_bytes(32)).decode())
    return base64.b64decode(path.read_text().strip())


def _decoded(configured: str, setting: str) -> bytes:
    key = base64.b64decode(configured)
    if len(key) != 32:
        raise ImproperlyConfigured(f"{setting} must hold 32-byte keys, base64-encoded")
    return key


def master_key() -> bytes:
    configured = settings.CONVMEM_MASTER_KEY
    if configured:
        return _decoded(configured, "CONVMEM_MASTER_KEY")
    if not settings.CONVMEM_MASTER_KEY_REQUIRED:
        return _development_master_key()
    raise ImproperlyConfigured(
        "CONVMEM_MASTER_KEY is not set: production settings need a key-encryption key "
        "(32 random bytes, base64) from the environment or a KMS key provider."
    )


def previous_master_keys() -> list[bytes]:
    """The master keys a rotation is moving away from (``CONVMEM_MASTER_KEY_PREVIOUS``): they
    still unwrap the data keys not yet re-wrapped, and wrap nothing new."""
    listed = settings.CONVMEM_MASTER_KEY_PREVIOUS
    return [_decoded(k, "CONVMEM_MASTER_KEY_PREVIOUS") for k in listed]


def local_kek_id(key: bytes) -> str:
    """The id a master key is known by in ``DataKey.kek_id`` (a digest: never the key)."""
    return "local:" + hashlib.sha256(key).hexdigest()[:16]


class LocalKeyProvider(KeyProvider):
    """Wraps under the current master key; unwraps under it or a previous one, chosen by the
    ``kek_id`` the data key's row records (so a half-done rotation leaves every key openable)."""

    def __init__(self, key: bytes | None = None, previous: list[bytes] | None = None) -> None:
        key = key or master_key()
        self.kek_id = local_kek_id(key)
        self._keks = {self.kek_id: AESGCM(key)}
        for old in previous_master_keys() if previous is None else previous:
            self._keks.setdefault(local_kek_id(old), AESGCM(old))

    def wrap(self, key_id: str, data_key: bytes) -> bytes:
        nonce = secrets.token_bytes(NONCE_BYTES)
        kek = self._keks[self.kek_id]
        return nonce + kek.encrypt(nonce, data_key, _wrap_aad(key_id))

    def unwrap(self, key_id: str, wrapped: bytes, kek_id: str) -> bytes:
        kek = self._keks.get(kek_id)
        if kek is None:
            raise ImproperlyConfigured(
                f"data key {key_id} was wrapped by {kek_id}, which is neither CONVMEM_MASTER_KEY "
                "nor one of CONVMEM_MASTER_KEY_PREVIOUS"
            )
        return kek.decrypt(wrapped[:NONCE_BYTES], wrapped[NONCE_BYTES:], _wrap_aad(key_id))


_provider: KeyProvider | None = None


def key_provider() -> KeyProvider:
    global _provider
    if _provider is None:
        _provider = import_string(settings.CONVMEM_KEY_PROVIDER)()
    return _provider


def key_provider_reset() -> None:
    """Forget the provider (settings changed: tests, a rotation)."""
    global _provider
    _provider = None
