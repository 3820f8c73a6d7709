"""Key providers: what wraps a subject's data key for storage, and unwraps it to use it.

``convmem.crypto`` keeps each subject's data key wrapped in the ``keys`` database; the provider
named by ``CONVMEM_KEY_PROVIDER`` does the wrapping. ``LocalKeyProvider`` (the default) wraps
with AES-256-GCM under a master key-encryption key from ``CONVMEM_MASTER_KEY``; a KMS plugs in
by implementing ``KeyProvider`` (its ``wrap``/``unwrap`` call the KMS's encrypt/decrypt with
the data key's id as encryption context, and ``destroy`` may schedule the deletion of anything
the KMS keeps per subject).
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


def master_key() -> bytes:
    configured = settings.CONVMEM_MASTER_KEY
    if configured:
        key = base64.b64decode(configured)
    elif not settings.CONVMEM_MASTER_KEY_REQUIRED:
        key = _development_master_key()
    else:
        raise ImproperlyConfigured(
            "CONVMEM_MASTER_KEY is not set: production settings need a key-encryption key "
            "(32 random bytes, base64) from the environment or a KMS key provider."
        )
    if len(key) != 32:
        raise ImproperlyConfigured("CONVMEM_MASTER_KEY must be 32 bytes, base64-encoded")
    return key


class LocalKeyProvider(KeyProvider):
    def __init__(self, key: bytes | None = None) -> None:
        key = key or master_key()
        self._kek = AESGCM(key)
        self.kek_id = "local:" + hashlib.sha256(key).hexdigest()[:16]

    def wrap(self, key_id: str, data_key: bytes) -> bytes:
        nonce = secrets.token_bytes(NONCE_BYTES)
        return nonce + self._kek.encrypt(nonce, data_key, _wrap_aad(key_id))

    def unwrap(self, key_id: str, wrapped: bytes, kek_id: str) -> bytes:
        if kek_id != self.kek_id:
            raise ImproperlyConfigured(f"data key {key_id} was wrapped by {kek_id}, not this KEK")
        return self._kek.decrypt(wrapped[:NONCE_BYTES], wrapped[NONCE_BYTES:], _wrap_aad(key_id))


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
