"""A strict API: a body field or query parameter the schema does not name is a 400 naming it.

One mechanism for every endpoint, read from the published OpenAPI schema (``/api/v1/schema/``),
so what is accepted and what is documented cannot drift apart, and a new endpoint is strict as
soon as it is documented:

- query parameters: ``StrictQueryParametersMiddleware`` compares the request's parameters with
  the operation's ``in: query`` parameters before the view runs;
- bodies: ``convmem.parsers.StrictJSONParser`` calls ``unknown_body_fields`` on every parsed
  JSON object, walking nested objects the schema describes field by field (e.g. the items of
  ``retrieved``). Free-form objects (``metadata``) and the content parts and tool calls checked
  by ``threads.content`` are not walked here.

Operations the schema leaves out (the docs views, the API root) are not checked.
"""

import re
import threading
from collections.abc import Callable
from functools import cache
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from rest_framework import status

from convmem.errors import ApiError, error_body

_CONVERTER = re.compile(r"<(?:\w+:)?(\w+)>")


class UnknownFields(ApiError):
    status_code = status.HTTP_400_BAD_REQUEST
    default_code = "unknown_field"

    def __init__(self, names: list[str]) -> None:
        plural = "s" if len(names) > 1 else ""
        super().__init__(f"Unknown field{plural}: {', '.join(names)}.", code="unknown_field")
        self.extra = {"errors": {name: ["Unknown field."] for name in names}}


def unknown_parameters_body(names: list[str]) -> dict[str, Any]:
    plural = "s" if len(names) > 1 else ""
    return error_body(
        "unknown_parameter",
        f"Unknown query parameter{plural}: {', '.join(names)}.",
        errors={name: ["Unknown query parameter."] for name in names},
    )


_SCHEMA_LOCK = threading.Lock()


@cache
def _generated_schema() -> dict[str, Any]:
    from drf_spectacular.generators import SchemaGenerator

    return SchemaGenerator().get_schema(request=None, public=True)


def api_schema() -> dict[str, Any]:
    """The OpenAPI schema, generated once per process (as ``/api/v1/schema/`` serves it).
    Under a lock: drf-spectacular's generator is not thread-safe, and two first requests of a
    threaded worker arriving together failed with a 500."""
    with _SCHEMA_LOCK:
        return _generated_schema()


def _operation(route: str | None, method: str) -> dict[str, Any] | None:
    """The schema's operation for a URL route (``api/v1/threads/<str:thread_id>``)."""
    if route is None:
        return None
    path = "/" + _CONVERTER.sub(r"{\1}", route)
    return api_schema()["paths"].get(path, {}).get(method.lower())


def _resolve(schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = api_schema()["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
    if "allOf" in schema and len(schema["allOf"]) == 1:
        return _resolve(schema["allOf"][0])
    return schema


def _unknown(data: Any, schema: dict[str, Any], prefix: str) -> list[str]:
    schema = _resolve(schema)
    if isinstance(data, dict) and "properties" in schema:
        found = []
        for name, value in data.items():
            if name not in schema["properties"]:
                found.append(f"{prefix}{name}")
            else:
                found += _unknown(value, schema["properties"][name], f"{prefix}{name}.")
        return found
    if isinstance(data, list) and "items" in schema:
        base = prefix.removesuffix(".")
        return [
            name
            for index, item in enumerate(data)
            for name in _unknown(item, schema["items"], f"{base}[{index}].")
        ]
    return []


def unknown_body_fields(route: str | None, method: str, data: Any) -> list[str]:
    """The names (dotted for nested fields) in ``data`` that the operation's JSON request body
    does not declare; empty for an undocumented operation."""
    operation = _operation(route, method)
    if operation is None or "requestBody" not in operation:
        return []
    body = operation["requestBody"]["content"].get("application/json")
    return _unknown(data, body["schema"], "") if body else []


def unknown_query_parameters(route: str | None, method: str, names: list[str]) -> list[str]:
    operation = _operation(route, method)
    if operation is None:
        return []
    declared = {p["name"] for p in operation.get("parameters", []) if p["in"] == "query"}
    return sorted(set(names) - declared)


class StrictQueryParametersMiddleware:
    """400 ``unknown_parameter`` for a query parameter the API operation does not declare."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_view(
        self, request: HttpRequest, view: Callable[..., Any], args: Any, kwargs: Any
    ) -> HttpResponse | None:
        if not request.path.startswith("/api/") or not request.GET:
            return None
        route = request.resolver_match.route if request.resolver_match else None
        unknown = unknown_query_parameters(route, request.method or "GET", list(request.GET))
        if unknown:
            return JsonResponse(unknown_parameters_body(unknown), status=400)
        return None
