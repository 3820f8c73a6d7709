"""A JSON parser that turns every malformed body, and every unknown field, into a clean 400."""

import json
import math
import re
from typing import Any

from django.conf import settings
from django.utils.http import parse_header_parameters
from rest_framework.exceptions import ParseError, UnsupportedMediaType
from rest_framework.parsers import JSONParser

_SURROGATE = re.compile("[\ud800-\udfff]")


class StrictJSONParser(JSONParser):
    """DRF's JSON parser, also rejecting invalid UTF-8, a ``charset`` other than UTF-8 (415),
    nesting deeper than ``CONVMEM_MAX_JSON_DEPTH``, numbers no float can hold (``1e999``
    would be infinity, which neither PostgreSQL's jsonb nor JSON itself can store), and text
    that cannot be stored (NUL characters, unpaired surrogates).

    Nesting has a limit of its own because recursion has one: Python's json module raises
    RecursionError past roughly 990 levels, and a body that parses just under that (say 930
    levels of ``metadata``) still fails later — serialised for the idempotency fingerprint,
    validated, saved — as a RecursionError deep in the stack, a 500.
    """

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        _check_charset(media_type)
        try:
            raw = stream.read() if stream is not None else b""
            text = raw.decode("utf-8")
            data = json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
        except UnicodeDecodeError:
            raise ParseError("Request body is not valid UTF-8.", code="parse_error") from None
        except RecursionError:
            raise _too_deep() from None
        except ValueError as exc:
            raise ParseError(f"Malformed JSON: {exc}", code="parse_error") from None
        _check_values(data)
        _check_fields(data, parser_context)
        return data


def _check_fields(data: Any, parser_context: Any) -> None:
    """Refuse fields the operation's documented body does not have (``convmem.strict``)."""
    # Imported here: DRF imports this module while ``rest_framework.views`` (which
    # ``convmem.errors`` imports) is still loading.
    from convmem.strict import UnknownFields, unknown_body_fields

    request = (parser_context or {}).get("request")
    match = getattr(getattr(request, "_request", None), "resolver_match", None)
    if match is None:
        return
    unknown = unknown_body_fields(match.route, request.method, data)
    if unknown:
        raise UnknownFields(unknown)


def _too_deep() -> ParseError:
    limit = settings.CONVMEM_MAX_JSON_DEPTH
    return ParseError(
        f"JSON nesting is too deep: at most {limit} levels of objects and arrays.",
        code="nesting_too_deep",
    )


def _check_values(data: Any) -> None:
    """Refuse nesting over the limit, and keys or strings PostgreSQL cannot store.

    JSON escapes can spell NUL (``\\u0000``) and lone surrogates (``\\ud800``); neither fits in
    a text or jsonb column (nor in UTF-8, for surrogates), so they would fail at write time as
    a database or encoding error instead of a 400. Walked without recursion: ``data`` may nest
    as deep as the json module allowed.
    """
    limit = settings.CONVMEM_MAX_JSON_DEPTH
    stack = [(data, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if "\x00" in item or _SURROGATE.search(item):
                raise ParseError(
                    "Text must not contain NUL characters or unpaired surrogates.", code="invalid"
                )
        elif isinstance(item, dict | list):
            if depth == limit:
                raise _too_deep()
            children = [*item.keys(), *item.values()] if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:40]} is out of range")
    return value


def _check_charset(media_type: str | None) -> None:
    """Bodies are read as UTF-8 (as RFC 8259 requires of JSON); a body declared in another
    charset would be misread, so it is refused (415) instead."""
    _, params = parse_header_parameters(media_type or "")
    charset = params.get("charset", "utf-8").strip().lower()
    if charset not in ("utf-8", "utf8"):
        raise UnsupportedMediaType(
            media_type, detail=f"Only UTF-8 JSON is accepted, not charset={charset}."
        )
