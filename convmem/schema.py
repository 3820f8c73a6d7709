"""OpenAPI generation: the Bearer scheme and the error responses every operation can give.

Views document their success responses with ``extend_schema``; the errors come from here so
each operation lists exactly the status codes the API can answer it with, all with the one
``Error`` shape of ``convmem.errors`` (schemathesis checks responses against this schema).
"""

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema as SpectacularAutoSchema
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse
from rest_framework import serializers

from convmem.api import IDEMPOTENCY_HEADER
from convmem.auth import IsTenant


class ErrorSerializer(serializers.Serializer):
    """``{"code", "detail"}``; validation errors add ``errors`` with per-field messages."""

    code = serializers.CharField(help_text="Stable, machine-readable error code.")
    detail = serializers.CharField(help_text="Human-readable explanation.")
    errors = serializers.JSONField(
        required=False, help_text="Per-field validation messages (400 `invalid` only)."
    )

    class Meta:
        ref_name = "Error"


ERROR_DESCRIPTIONS = {
    400: "Invalid body, parameter or header.",
    401: "Missing, invalid or revoked API key.",
    403: "The API key lacks a required scope.",
    404: "Unknown object, or another tenant's.",
    409: "A request with this Idempotency-Key is still in flight.",
    413: "Request body or content over the configured limit.",
    415: "The body is not JSON.",
    422: "The Idempotency-Key was used before with a different request.",
    429: "Throttled.",
    503: "The database is unavailable; nothing was written.",
}


LEGAL_HOLD_RESPONSE = OpenApiResponse(
    response=ErrorSerializer,
    description="`legal_hold`: a legal hold covers the data; nothing was erased.",
)


class BearerApiKeyScheme(OpenApiAuthenticationExtension):
    target_class = "convmem.auth.ApiKeyAuthentication"
    name = "ApiKey"

    def get_security_definition(self, auto_schema: SpectacularAutoSchema) -> dict[str, Any]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "`Authorization: Bearer <api key>` (keys are created per tenant).",
        }


class AutoSchema(SpectacularAutoSchema):
    """drf-spectacular's AutoSchema plus the error responses the operation can produce."""

    def _get_response_bodies(self, direction: str = "response") -> dict[str, Any]:
        responses = super()._get_response_bodies(direction)
        for status in sorted(self._error_statuses()):
            code = str(status)
            if code not in responses:
                response = self._get_response_for_code(ErrorSerializer, code, direction=direction)
                response["description"] = ERROR_DESCRIPTIONS[status]
                responses[code] = response
        return responses

    def _error_statuses(self) -> set[int]:
        statuses = {401, 429, 503}
        parameters = [p for p in self.get_override_parameters() if isinstance(p, OpenApiParameter)]
        if any(not isinstance(p, IsTenant) for p in self.view.get_permissions()):
            statuses.add(403)
        if "{" in self.path:
            statuses.add(404)
        if self.method in ("POST", "PUT", "PATCH"):
            statuses |= {400, 413, 415}
        if any(p.location in (OpenApiParameter.QUERY, OpenApiParameter.HEADER) for p in parameters):
            statuses.add(400)
        if any(p.name == IDEMPOTENCY_HEADER for p in parameters):
            statuses |= {400, 409, 422}
        return statuses


def forbid_unknown_body_fields(
    result: dict[str, Any], generator: Any, request: Any, public: bool
) -> dict[str, Any]:
    """Postprocessing hook: request bodies (and the objects nested in them field by field)
    say ``additionalProperties: false``, as ``convmem.strict`` enforces."""
    components = result.get("components", {}).get("schemas", {})
    seen: set[str] = set()

    def close(schema: dict[str, Any]) -> None:
        if "$ref" in schema:
            name = schema["$ref"].rsplit("/", 1)[-1]
            if name not in seen and name in components:
                seen.add(name)
                close(components[name])
            return
        for part in schema.get("allOf", []):
            close(part)
        if "properties" in schema:
            schema["additionalProperties"] = False
            for value in schema["properties"].values():
                close(value)
        if isinstance(schema.get("items"), dict):
            close(schema["items"])

    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            body = operation.get("requestBody", {}).get("content", {}).get("application/json")
            if body:
                close(body["schema"])
    return result
