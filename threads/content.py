"""What a message carries besides plain text, in OpenAI Chat Completions shapes.

Agent apps send more than ``{role, content}``:

- ``content`` as a list of parts: ``{"type": "text", "text": …}``, images by reference
  ``{"type": "image_url", "image_url": {"url": "https://…", "detail": "low"}}`` and files by
  reference ``{"type": "file", "file": {"file_id": "file-…"}}``. Inline data (``data:`` URLs,
  ``file_data``) is refused: the record keeps references, not blobs. The text parts, joined by
  blank lines, are also stored as the message's ``content`` (what memos, exports and erasure
  read); the parts are stored as sent, so the model input is rebuilt exactly.
- ``tool_calls`` on an assistant turn: ``{"id", "type": "function", "function": {"name",
  "arguments"}}`` (``arguments`` is the model's JSON text, kept verbatim).
- a ``tool`` message answering one call by ``tool_call_id``.

``normalise_content`` and ``normalise_tool_calls`` check the shapes (``InvalidRequest`` on
anything else); ``message_token_count`` prices a message for the budget arithmetic.
"""

import ipaddress
import re
import socket
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings

from convmem.errors import InvalidRequest, PayloadTooLarge
from convmem.tokens import count_tokens

TEXT = "text"
IMAGE_URL = "image_url"
FILE = "file"
PART_TYPES = (TEXT, IMAGE_URL, FILE)
IMAGE_DETAILS = ("auto", "low", "high")
MAX_PARTS = 64
MAX_TOOL_CALLS = 128
MAX_URL_CHARS = 2048
# The most tokens one usage field may report: far beyond any real call (a million-token window
# a million times over), small enough that a cost (under 10^6 per million tokens) and a
# rollup's sums stay far inside their columns and integer types.
MAX_USAGE_TOKENS = 10**12
# OpenAI prices a low-detail image at a flat 85 tokens; other details depend on the image size,
# which a reference does not tell: CONVMEM_IMAGE_PART_TOKENS is the budget's estimate.
LOW_DETAIL_IMAGE_TOKENS = 85
# Framing of one tool call around its name and arguments (an estimate; OpenAI does not publish
# the exact count).
TOOL_CALL_OVERHEAD = 8
PART_SEPARATOR = "\n\n"
NULL_CONTENT = "content may be null only on an assistant turn that calls tools."
_TOOL_NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_CALL_ID_RE = re.compile(r"^[\x21-\x7e]{1,255}$")


@dataclass(frozen=True)
class Content:
    """A message's content: its text, and the parts it was sent as (None for plain text)."""

    text: str
    parts: list[dict[str, Any]] | None = None


def _invalid(detail: str, code: str = "invalid") -> InvalidRequest:
    return InvalidRequest(detail, code=code)


def check_text_size(text: str) -> None:
    limit = settings.CONVMEM_MAX_CONTENT_CHARS
    if len(text) > limit:
        raise PayloadTooLarge(
            f"content is {len(text)} characters; the limit is {limit}.", code="content_too_large"
        )


def normalise_content(value: Any, *, role: str, allow_empty: bool = False) -> Content:
    """``value`` (a string or a list of parts) as ``Content``; ``InvalidRequest`` if malformed.

    Plain text must not be blank unless ``allow_empty`` (an assistant turn that only calls
    tools). Images and files are accepted on user turns only, as OpenAI does.
    """
    if value is None and not allow_empty:
        raise _invalid(NULL_CONTENT)
    if isinstance(value, str) or value is None:
        text = value or ""
        check_text_size(text)
        if not text.strip() and not allow_empty:
            raise _invalid("content must not be empty.", code="empty_content")
        return Content(text=text)
    if not isinstance(value, list):
        raise _invalid("content must be a string or a list of content parts.")
    if not value:
        raise _invalid("content parts must not be empty.", code="empty_content")
    if len(value) > MAX_PARTS:
        raise _invalid(f"at most {MAX_PARTS} content parts are accepted.")
    parts = [_normalise_part(part, index, role) for index, part in enumerate(value)]
    text = PART_SEPARATOR.join(part["text"] for part in parts if part["type"] == TEXT)
    check_text_size(text)
    return Content(text=text, parts=parts)


def _normalise_part(part: Any, index: int, role: str) -> dict[str, Any]:
    where = f"content[{index}]"
    if not isinstance(part, dict) or part.get("type") not in PART_TYPES:
        raise _invalid(f"{where} must be an object whose type is one of {', '.join(PART_TYPES)}.")
    kind = part["type"]
    if kind == TEXT:
        text = part.get("text")
        if not isinstance(text, str):
            raise _invalid(f"{where}.text must be a string.")
        if not text.strip():
            raise _invalid(f"{where}.text must not be blank.", code="empty_content")
        return {"type": TEXT, "text": text}
    if role != "user":
        raise _invalid(
            f"{where}: {kind} parts are accepted on user messages only.",
            code="field_not_for_role",
        )
    if kind == IMAGE_URL:
        return {"type": IMAGE_URL, "image_url": _image_reference(part.get("image_url"), where)}
    return {"type": FILE, "file": _file_reference(part.get("file"), where)}


def _image_reference(image: Any, where: str) -> dict[str, str]:
    if not isinstance(image, dict) or not isinstance(image.get("url"), str):
        raise _invalid(f"{where}.image_url must be an object with a url.")
    url = image["url"]
    if url.startswith("data:"):
        raise _invalid(
            f"{where}: inline image data is not stored; pass a URL the model can fetch.",
            code="inline_data_not_supported",
        )
    if not url.startswith(("https://", "http://")) or len(url) > MAX_URL_CHARS:
        raise _invalid(f"{where}.image_url.url must be an http(s) URL of at most 2048 characters.")
    _check_url_target(url, f"{where}.image_url.url")
    reference = {"url": url}
    detail = image.get("detail")
    if detail is not None:
        if detail not in IMAGE_DETAILS:
            raise _invalid(f"{where}.image_url.detail must be one of {', '.join(IMAGE_DETAILS)}.")
        reference["detail"] = detail
    return reference


def _check_url_target(url: str, where: str) -> None:
    """Refuse a URL the model server should not fetch (``InvalidRequest``, ``url_not_allowed``):
    a scheme or host outside ``CONVMEM_PART_URL_SCHEMES`` / ``CONVMEM_PART_URL_HOSTS``, or,
    unless ``CONVMEM_PART_URL_ALLOW_PRIVATE``, a host that is or resolves to an address that is
    not global (private, loopback, link-local such as 169.254.169.254, ...). Names are resolved
    now (``socket.getaddrinfo``); a name that does not resolve is accepted (there is nothing
    to reach), and a later change of its DNS records is not seen."""
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").rstrip(".").lower()
    except ValueError:
        raise _invalid(f"{where} is not a valid URL.", code="url_not_allowed") from None
    if parts.scheme.lower() not in settings.CONVMEM_PART_URL_SCHEMES:
        raise _invalid(f"{where}: the URL's scheme is not allowed.", code="url_not_allowed")
    if not host:
        raise _invalid(f"{where}: the URL names no host.", code="url_not_allowed")
    allowed = [name.lower().lstrip(".") for name in settings.CONVMEM_PART_URL_HOSTS]
    if allowed and not any(host == name or host.endswith(f".{name}") for name in allowed):
        raise _invalid(f"{where}: the host {host!r} is not allowed.", code="url_not_allowed")
    if not settings.CONVMEM_PART_URL_ALLOW_PRIVATE and not _only_global_addresses(host):
        raise _invalid(
            f"{where}: the host {host!r} is a private, loopback or link-local address.",
            code="url_not_allowed",
        )


def _only_global_addresses(host: str) -> bool:
    """Whether ``host`` (a name or an address literal) reaches only global addresses."""
    try:
        addresses = {ipaddress.ip_address(host)}
    except ValueError:
        try:
            found = socket.getaddrinfo(host, None)
        except (OSError, UnicodeError):
            return True
        addresses = {ipaddress.ip_address(info[4][0].split("%")[0]) for info in found}
    for address in addresses:
        mapped = getattr(address, "ipv4_mapped", None)
        if not (mapped or address).is_global:
            return False
    return True


def _file_reference(file: Any, where: str) -> dict[str, str]:
    if not isinstance(file, dict):
        raise _invalid(f"{where}.file must be an object with a file_id.")
    if "file_data" in file:
        raise _invalid(
            f"{where}: inline file data is not stored; upload the file and pass its file_id.",
            code="inline_data_not_supported",
        )
    file_id = file.get("file_id")
    if not isinstance(file_id, str) or not _CALL_ID_RE.match(file_id):
        raise _invalid(f"{where}.file.file_id must be 1-255 printable ASCII characters.")
    return {"file_id": file_id}


def normalise_tool_calls(value: Any) -> list[dict[str, Any]]:
    """An assistant turn's ``tool_calls`` in the Chat Completions shape, ids unique."""
    if not isinstance(value, list) or not value:
        raise _invalid("tool_calls must be a non-empty list.", code="invalid_tool_calls")
    if len(value) > MAX_TOOL_CALLS:
        raise _invalid(
            f"at most {MAX_TOOL_CALLS} tool calls are accepted.", code="invalid_tool_calls"
        )
    calls = [_normalise_call(call, index) for index, call in enumerate(value)]
    ids = [call["id"] for call in calls]
    if len(set(ids)) != len(ids):
        raise _invalid("tool call ids must be unique.", code="duplicate_tool_call_ids")
    check_text_size("".join(call["function"]["arguments"] for call in calls))
    return calls


def _normalise_call(call: Any, index: int) -> dict[str, Any]:
    where = f"tool_calls[{index}]"
    if not isinstance(call, dict):
        raise _invalid(f"{where} must be an object.", code="invalid_tool_calls")
    call_id = call.get("id")
    if not isinstance(call_id, str) or not _CALL_ID_RE.match(call_id):
        raise _invalid(
            f"{where}.id must be 1-255 printable ASCII characters.", code="invalid_tool_calls"
        )
    if call.get("type", "function") != "function":
        raise _invalid(f'{where}.type must be "function".', code="invalid_tool_calls")
    function = call.get("function")
    if not isinstance(function, dict):
        raise _invalid(f"{where}.function must be an object.", code="invalid_tool_calls")
    name = function.get("name")
    if not isinstance(name, str) or not _TOOL_NAME_RE.match(name):
        raise _invalid(
            f"{where}.function.name must be 1-64 letters, digits, _ or -.",
            code="invalid_tool_calls",
        )
    arguments = function.get("arguments", "")
    if not isinstance(arguments, str):
        raise _invalid(
            f"{where}.function.arguments must be a string (the JSON text the model wrote).",
            code="invalid_tool_calls",
        )
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def normalise_tool_call_id(value: Any) -> str:
    if not isinstance(value, str) or not _CALL_ID_RE.match(value):
        raise _invalid(
            "tool_call_id must be 1-255 printable ASCII characters.", code="invalid_tool_call_id"
        )
    return value


def usage_count_ok(count: Any) -> bool:
    """A token count a usage report may hold: an integer from 0 to ``MAX_USAGE_TOKENS``."""
    return isinstance(count, int) and not isinstance(count, bool) and 0 <= count <= MAX_USAGE_TOKENS


# Cached input tokens, by the names providers report them under: the stored key first.
CACHED_TOKEN_NAMES = {
    "cached_tokens": ("cached_tokens", "cache_read_input_tokens"),
    "cache_write_tokens": ("cache_write_tokens", "cache_creation_input_tokens"),
}


def normalise_usage(value: Any) -> dict[str, int]:
    """The usage a model reported for an assistant turn: prompt and completion tokens, each
    from 0 to ``MAX_USAGE_TOKENS`` (``InvalidRequest`` otherwise), and of the prompt tokens,
    those read from a prompt cache and those written to it (``cached_tokens``,
    ``cache_write_tokens``: 0 when not reported; see ``cached_usage``)."""
    if not isinstance(value, dict):
        raise _invalid("usage must be an object.", code="invalid_usage")
    usage = {}
    for key in ("prompt_tokens", "completion_tokens"):
        count = value.get(key)
        if not usage_count_ok(count):
            raise _invalid(
                f"usage.{key} must be an integer from 0 to {MAX_USAGE_TOKENS}.",
                code="invalid_usage",
            )
        usage[key] = count
    usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    cached = cached_usage(value)
    if cached is None:
        raise _invalid(
            "usage.cached_tokens and usage.cache_write_tokens must be integers from 0 to "
            f"{MAX_USAGE_TOKENS} that add up to no more than prompt_tokens.",
            code="invalid_usage",
        )
    if cached["cached_tokens"] + cached["cache_write_tokens"] > usage["prompt_tokens"]:
        raise _invalid(
            "usage.cached_tokens and usage.cache_write_tokens are part of prompt_tokens: "
            "together they cannot be more.",
            code="invalid_usage",
        )
    return usage | {key: count for key, count in cached.items() if count}


def cached_usage(value: dict[str, Any]) -> dict[str, int] | None:
    """Of a usage report, the prompt tokens read from and written to a prompt cache, under any
    name a provider reports them by (OpenAI's ``prompt_tokens_details.cached_tokens``,
    Anthropic's ``cache_read_input_tokens`` and ``cache_creation_input_tokens``, or ours);
    None if one is not a count a turn may store."""
    details = value.get("prompt_tokens_details")
    found: dict[str, Any] = {}
    if isinstance(details, dict) and details.get("cached_tokens") is not None:
        found["cached_tokens"] = details["cached_tokens"]
    for key, names in CACHED_TOKEN_NAMES.items():
        for name in names:
            if value.get(name) is not None:
                found.setdefault(key, value[name])
    counts = {key: found.get(key, 0) for key in CACHED_TOKEN_NAMES}
    return counts if all(usage_count_ok(count) for count in counts.values()) else None


def image_part_tokens(part: dict[str, Any]) -> int:
    if part["image_url"].get("detail") == "low":
        return LOW_DETAIL_IMAGE_TOKENS
    return settings.CONVMEM_IMAGE_PART_TOKENS


def message_token_count(
    *, content: Content, tool_calls: list[dict[str, Any]] | None, encoding: str
) -> int:
    """What a message costs in the model input, without its per-message framing.

    Text is counted with the thread's encoding; images and files by reference are priced by
    settings (their real cost depends on what the model fetches); each tool call costs its
    name, its arguments and ``TOOL_CALL_OVERHEAD``.
    """
    tokens = count_tokens(content.text, encoding) if content.text else 0
    for part in content.parts or ():
        if part["type"] == IMAGE_URL:
            tokens += image_part_tokens(part)
        elif part["type"] == FILE:
            tokens += settings.CONVMEM_FILE_PART_TOKENS
    for call in tool_calls or ():
        function = call["function"]
        tokens += TOOL_CALL_OVERHEAD + count_tokens(function["name"], encoding)
        tokens += count_tokens(function["arguments"], encoding)
    return tokens
