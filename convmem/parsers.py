"""A JSON parser that turns every malformed body into a clean 400."""

import json
import re
from typing import Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

_SURROGATE = re.compile("[\ud800-\udfff]")


class StrictJSONParser(JSONParser):
    """DRF's JSON parser, also rejecting invalid UTF-8, absurdly deep nesting, and text that
    cannot be stored (NUL characters, unpaired surrogates).

    Python's json module raises RecursionError (not ValueError) on deep nesting, which
    would otherwise surface as a 500.
    """

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        try:
            raw = stream.read() if stream is not None else b""
            text = raw.decode("utf-8")
            data = json.loads(text, parse_constant=_reject_constant)
        except UnicodeDecodeError:
            raise ParseError("Request body is not valid UTF-8.", code="parse_error") from None
        except RecursionError:
            raise ParseError("JSON nesting is too deep.", code="parse_error") from None
        except ValueError as exc:
            raise ParseError(f"Malformed JSON: {exc}", code="parse_error") from None
        if not _storable(data):
            raise ParseError(
                "Text must not contain NUL characters or unpaired surrogates.", code="invalid"
            )
        return data


def _storable(data: Any) -> bool:
    """Whether every key and string in ``data`` is text PostgreSQL can store.

    JSON escapes can spell NUL (``\\u0000``) and lone surrogates (``\\ud800``); neither fits in
    a text or jsonb column (nor in UTF-8, for surrogates), so they would fail at write time as
    a database or encoding error instead of a 400. Walked without recursion: ``data`` may nest
    as deep as the parser allowed.
    """
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if "\x00" in item or _SURROGATE.search(item):
                return False
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return True


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")
