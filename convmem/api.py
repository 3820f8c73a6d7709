"""Small helpers shared by the API views of every app."""

import base64
import binascii
from typing import Any
from urllib.parse import urlencode

from drf_spectacular.utils import OpenApiParameter
from rest_framework.request import Request

from convmem.auth import TenantPrincipal
from convmem.errors import InvalidCursor
from convmem.ids import PUBLIC_ID
from convmem.models import Tenant

IDEMPOTENCY_HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"


def idempotency_parameter(*, required: bool) -> OpenApiParameter:
    return OpenApiParameter(
        IDEMPOTENCY_HEADER,
        # The same rule as threads.idempotency.KEY_PATTERN, spelled for JSON Schema.
        {"type": "string", "pattern": "^[!-~]{1,255}$", "minLength": 1, "maxLength": 255},
        OpenApiParameter.HEADER,
        required=required,
        description="1-255 printable ASCII characters, unique per logical request and tenant. "
        "A retry with the same key and body replays the first response "
        f"(marked `{REPLAYED_HEADER}: true`).",
    )


def tenant_of(request: Request) -> Tenant:
    principal: TenantPrincipal = request.user
    return principal.tenant


def encode_cursor(value: str) -> str:
    return base64.urlsafe_b64encode(value.encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> str:
    """The public id inside a cursor made by ``encode_cursor``; ``InvalidCursor`` otherwise."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        # validate=True: urlsafe_b64decode would silently drop foreign characters, turning a
        # garbled cursor into "" (which reads as "no cursor") instead of an error.
        value = base64.b64decode(padded.encode(), altchars=b"-_", validate=True).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise InvalidCursor() from None
    # Only ids are ever encoded: anything else (NUL bytes above all, which PostgreSQL cannot
    # even compare) was not issued by this server.
    if not PUBLIC_ID.fullmatch(value):
        raise InvalidCursor()
    return value


def page_url(request: Request, **params: Any) -> str:
    query = request.query_params.copy()
    for name, value in params.items():
        query[name] = value
    return request.build_absolute_uri(request.path) + "?" + urlencode(sorted(query.items()))
