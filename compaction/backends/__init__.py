"""Summarizer backends, chosen by the `CONVMEM_SUMMARIZER_BACKEND` setting.

To add a backend: write a class with a `name` attribute and a `summarize` method matching
`SummarizerBackend` (constructible with no arguments, reading its own settings), then either
register it in `BACKENDS` or set `CONVMEM_SUMMARIZER_BACKEND` to its dotted path.
"""

from __future__ import annotations

from django.conf import settings
from django.utils.module_loading import import_string

from compaction.backends.base import (
    BackendError,
    MemoDraft,
    MemoSource,
    SummarizerBackend,
)

__all__ = [
    "BACKENDS",
    "CONTEXT_TOKENS_SETTINGS",
    "BackendError",
    "MemoDraft",
    "MemoSource",
    "SummarizerBackend",
    "get_backend",
    "summarizer_context_tokens",
]

DEFAULT_BACKEND = "embedded"

# Dotted paths, imported on first use: the openai SDK is only loaded when that backend is chosen.
BACKENDS: dict[str, str] = {
    "embedded": "compaction.backends.embedded.EmbeddedBackend",
    "openai": "compaction.backends.openai_compat.OpenAICompatBackend",
}


# The setting holding each built-in backend's context limit (input + output tokens its model
# accepts); a backend given by dotted path reads CONVMEM_SUMMARIZER_CONTEXT_TOKENS.
CONTEXT_TOKENS_SETTINGS: dict[str, str] = {
    "embedded": "CONVMEM_EMBEDDED_CONTEXT_TOKENS",
    "openai": "CONVMEM_OPENAI_CONTEXT_TOKENS",
}
DEFAULT_CONTEXT_TOKENS = 16384


def summarizer_context_tokens(name: str | None = None) -> int:
    """The context limit of the backend ``name`` (default: the configured one), from settings,
    without constructing the backend (this is read on the hot path)."""
    name = name or getattr(settings, "CONVMEM_SUMMARIZER_BACKEND", DEFAULT_BACKEND)
    setting = CONTEXT_TOKENS_SETTINGS.get(name, "CONVMEM_SUMMARIZER_CONTEXT_TOKENS")
    return int(getattr(settings, setting, DEFAULT_CONTEXT_TOKENS))


def get_backend(name: str | None = None) -> SummarizerBackend:
    """Return a new instance of the backend called `name` (default: the configured one).

    `name` is a key of `BACKENDS` or the dotted path of a backend class. Raises `ValueError`
    for a name that is neither.
    """
    name = name or getattr(settings, "CONVMEM_SUMMARIZER_BACKEND", DEFAULT_BACKEND)
    path = BACKENDS.get(name, name)
    if "." not in path:
        known = ", ".join(sorted(BACKENDS))
        raise ValueError(f"Unknown summarizer backend {name!r}; known: {known}, or a dotted path")
    try:
        backend_class = import_string(path)
    except ImportError as error:
        raise ValueError(f"Cannot import summarizer backend {path!r}: {error}") from error
    return backend_class()
