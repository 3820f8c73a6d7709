"""A JSON parser that turns every malformed body into a clean 400."""

import json
from typing import Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser


class StrictJSONParser(JSONParser):
    """DRF's JSON parser, also rejecting invalid UTF-8 and absurdly deep nesting.

    Python's json module raises RecursionError (not ValueError) on deep nesting, which
    would otherwise surface as a 500.
    """

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        try:
            raw = stream.read() if stream is not None else b""
            text = raw.decode("utf-8")
            return json.loads(text, parse_constant=_reject_constant)
        except UnicodeDecodeError:
            raise ParseError("Request body is not valid UTF-8.", code="parse_error") from None
        except RecursionError:
            raise ParseError("JSON nesting is too deep.", code="parse_error") from None
        except ValueError as exc:
            raise ParseError(f"Malformed JSON: {exc}", code="parse_error") from None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")
