"""Cursor pagination for the lists ordered newest first (threads, summaries).

DRF's ``CursorPagination`` trusts the cursor it decodes: a garbled one reads as page 1, a
position that is not a timestamp fails in the query (a 500), a NUL in it fails in PostgreSQL
(a 503). Here every cursor the server did not issue is a 400 ``invalid_cursor``.
"""

import base64
import binascii
from datetime import UTC
from typing import Any
from urllib.parse import parse_qs

from django.conf import settings
from django.utils.dateparse import parse_datetime
from rest_framework import serializers
from rest_framework.pagination import Cursor, CursorPagination
from rest_framework.request import Request

from convmem.errors import InvalidCursor

# The ``limit`` query parameter as the schema states it (every paginated list).
LIMIT_SCHEMA = {"type": "integer", "minimum": 1, "maximum": settings.CONVMEM_MAX_PAGE_SIZE}
LIMIT_DESCRIPTION = (
    f"Page size (default {settings.CONVMEM_PAGE_SIZE}; at most "
    f"{settings.CONVMEM_MAX_PAGE_SIZE}: a larger value is a 400)."
)


class NewestFirstPagination(CursorPagination):
    """Newest first by ``created_at`` (ties broken by id); a bad ``limit`` or cursor is a 400."""

    ordering = ("-created_at", "-id")
    # DRF's default PAGE_SIZE is None, which would turn pagination off.
    page_size = settings.CONVMEM_PAGE_SIZE
    page_size_query_param = "limit"
    max_page_size = settings.CONVMEM_MAX_PAGE_SIZE

    def get_page_size(self, request: Request) -> int:
        # DRF silently falls back to the default on a bad `limit`; answer 400 like the other lists.
        return page_size(request.query_params.get(self.page_size_query_param))

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.page_size_query_param:
                parameter |= {"schema": LIMIT_SCHEMA, "description": LIMIT_DESCRIPTION}
        return parameters

    def decode_cursor(self, request: Request) -> Cursor | None:
        encoded = cursor_param(request)
        if encoded is None:
            return None
        tokens = _cursor_tokens(encoded)
        return Cursor(
            offset=self._offset(tokens.get("o", "0")),
            reverse=_reverse(tokens.get("r", "0")),
            position=_position(tokens.get("p")),
        )

    def _offset(self, raw: str) -> int:
        """Issued only to step over rows sharing a position; DRF caps it at offset_cutoff."""
        if not raw.isascii() or not raw.isdigit() or int(raw) > self.offset_cutoff:
            raise InvalidCursor()
        return int(raw)


def cursor_param(request: Request) -> str | None:
    """The ``cursor`` query parameter; given empty (``?cursor=``) it is a cursor the server
    never issued (a 400), not an absent one (which would silently read page 1)."""
    encoded = request.query_params.get("cursor")
    if encoded == "":
        raise InvalidCursor()
    return encoded


def _cursor_tokens(encoded: str) -> dict[str, str]:
    """The ``o``/``r``/``p`` fields of a DRF cursor (base64 of a query string), each at most
    once; nothing else."""
    try:
        text = base64.b64decode(encoded.encode("ascii"), validate=True).decode("ascii")
        fields = parse_qs(text, keep_blank_values=True, strict_parsing=True)
    except (UnicodeError, binascii.Error, ValueError):
        raise InvalidCursor() from None
    if not fields.keys() <= {"o", "r", "p"} or any(len(v) != 1 for v in fields.values()):
        raise InvalidCursor()
    return {name: values[0] for name, values in fields.items()}


def _reverse(raw: str) -> bool:
    if raw not in ("0", "1"):
        raise InvalidCursor()
    return raw == "1"


def _position(raw: str | None) -> str | None:
    """The ``created_at`` the page starts after, as the server wrote it (an aware timestamp)."""
    if raw is not None and not _is_aware_timestamp(raw):
        raise InvalidCursor()
    return raw


def _is_aware_timestamp(raw: str) -> bool:
    try:
        moment = parse_datetime(raw)
        # A timestamp at the edge of the calendar (year 1 at +05:00) overflows only once the
        # query converts it to UTC, so convert it here.
        return moment is not None and moment.tzinfo is not None and bool(moment.astimezone(UTC))
    except (ValueError, OverflowError):
        return False


def page_size(raw: str | None) -> int:
    """The ``limit`` query parameter, defaulted; above ``CONVMEM_MAX_PAGE_SIZE`` it is a 400
    naming the maximum (a silent cap would read as "no more pages" to a client that counts)."""
    if raw is None:
        return settings.CONVMEM_PAGE_SIZE
    try:
        value = int(raw)
    except ValueError:
        raise serializers.ValidationError({"limit": "must be an integer."}) from None
    if value < 1:
        raise serializers.ValidationError({"limit": "must be at least 1."})
    if value > settings.CONVMEM_MAX_PAGE_SIZE:
        raise serializers.ValidationError(
            {"limit": f"must be at most {settings.CONVMEM_MAX_PAGE_SIZE}."}
        )
    return value
