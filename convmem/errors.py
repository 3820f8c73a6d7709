"""API errors: JSON bodies with a stable ``code`` and a human ``detail``.

Every error leaves the API as ``{"code": ..., "detail": ...}`` (validation errors add
``errors`` with the per-field messages), so product apps can branch on ``code``.
"""

import logging
from typing import Any

from django.core.exceptions import PermissionDenied, RequestDataTooBig
from django.db import DatabaseError, InterfaceError, OperationalError
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler

from convmem.auth import AUTHORIZATION_FORM

logger = logging.getLogger(__name__)


class ApiError(exceptions.APIException):
    """Base for convmem's own errors; subclasses set status, code and a default detail."""


class IdempotencyKeyRequired(ApiError):
    status_code = status.HTTP_400_BAD_REQUEST
    default_code = "idempotency_key_required"
    default_detail = "This endpoint needs an Idempotency-Key header."


class IdempotencyKeyInvalid(ApiError):
    status_code = status.HTTP_400_BAD_REQUEST
    default_code = "idempotency_key_invalid"
    default_detail = "Idempotency-Key must be 1-255 printable ASCII characters."


class IdempotencyKeyInFlight(ApiError):
    status_code = status.HTTP_409_CONFLICT
    default_code = "idempotency_key_in_flight"
    default_detail = "A request with this Idempotency-Key is still being processed; retry later."


class ThreadBusy(ApiError):
    status_code = status.HTTP_409_CONFLICT
    default_code = "thread_busy"
    default_detail = (
        "An answer is being generated on this thread; wait for it (or cancel it) before "
        "asking for the next one."
    )


class RunFinished(ApiError):
    status_code = status.HTTP_409_CONFLICT
    default_code = "run_finished"
    default_detail = "This run has finished; there is nothing to cancel."


class RunCancelled(ApiError):
    status_code = status.HTTP_409_CONFLICT
    default_code = "run_cancelled"
    default_detail = "The run was cancelled; what was generated is stored as an interrupted turn."


class RunLost(ApiError):
    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_code = "run_lost"
    default_detail = (
        "The worker generating this answer stopped; retry with the same Idempotency-Key."
    )


class RunExpiredInQueue(ApiError):
    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_code = "run_expired_in_queue"
    default_detail = (
        "No worker started this answer within CONVMEM_RESPOND_QUEUE_SECONDS; retry with the "
        "same Idempotency-Key."
    )


class QueueUnavailable(ApiError):
    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_code = "queue_unavailable"
    default_detail = (
        "The answer could not be queued (Redis is unavailable); retry with the same "
        "Idempotency-Key."
    )


class IdempotencyKeyReused(ApiError):
    status_code = status.HTTP_422_UNPROCESSABLE_ENTITY
    default_code = "idempotency_key_reused"
    default_detail = "This Idempotency-Key was already used with a different request."


class PayloadTooLarge(ApiError):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "payload_too_large"
    default_detail = "The request is larger than this server accepts."


class InvalidRequest(ApiError):
    """A 400 for a body that is well-formed JSON but asks for something impossible."""

    status_code = status.HTTP_400_BAD_REQUEST
    default_code = "invalid"
    default_detail = "Invalid request."


class InvalidCursor(ApiError):
    """A ``cursor`` the server did not issue: garbled, tampered with, or from another list."""

    status_code = status.HTTP_400_BAD_REQUEST
    default_code = "invalid_cursor"
    default_detail = "Invalid cursor."


class ModelUnavailable(ApiError):
    """The chat model did not answer (timeout, refused connection, 429 or 5xx): a retry with the
    same Idempotency-Key resumes the turn."""

    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_code = "model_unavailable"
    default_detail = "The chat model is unavailable; retry with the same Idempotency-Key."


class ModelRefused(ApiError):
    """The chat model refused the request (4xx other than 408/409/429): retrying cannot help."""

    status_code = status.HTTP_502_BAD_GATEWAY
    default_code = "model_error"
    default_detail = "The chat model refused the request."


class AnswerTooLong(ApiError):
    """The chat model's answer went past ``CONVMEM_MAX_CONTENT_CHARS``: it is stored cut at the
    limit, as an ``interrupted`` turn (a retry with the Idempotency-Key asks again)."""

    status_code = status.HTTP_502_BAD_GATEWAY
    default_code = "answer_too_long"
    default_detail = (
        "The chat model's answer exceeded the content limit; what fits is stored as an "
        "interrupted turn."
    )


class LegalHoldActive(ApiError):
    status_code = status.HTTP_423_LOCKED
    default_code = "legal_hold"
    default_detail = "The data is under legal hold; it cannot be erased now."


class AlreadyErased(ApiError):
    status_code = status.HTTP_409_CONFLICT
    default_code = "already_erased"
    default_detail = "This content is already erased."


class ServiceUnavailable(ApiError):
    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_code = "service_unavailable"
    # Not "nothing was written": the request's own transaction is rolled back, but a respond
    # call may have stored its user turn before (a retry with its Idempotency-Key resumes).
    default_detail = "The database is unavailable. Retry later."


def error_body(code: str, detail: str, **extra: Any) -> dict[str, Any]:
    return {"code": code, "detail": detail, **extra}


def _first_message(errors: Any) -> str:
    """The first human message of a (nested) DRF validation error structure."""
    if isinstance(errors, dict):
        for field, value in errors.items():
            message = _first_message(value)
            return message if field == "non_field_errors" else f"{field}: {message}"
    if isinstance(errors, list) and errors:
        return _first_message(errors[0])
    return str(errors)


def _validation_response(exc: exceptions.ValidationError) -> Response:
    body = error_body("invalid", _first_message(exc.detail), errors=exc.detail)
    return Response(body, status=status.HTTP_400_BAD_REQUEST)


def _authorization_of_another_form(context: dict[str, Any]) -> bool:
    """Whether the request that was not authenticated sent an Authorization header all the
    same: the API's authentication passes over a scheme it does not take (an endpoint open to
    all still answers), so "not provided" would mislead. The header is never echoed back: it
    may be the key itself."""
    request = context.get("request")
    return request is not None and bool(request.META.get("HTTP_AUTHORIZATION", "").strip())


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, RequestDataTooBig):
        exc = PayloadTooLarge()
    elif isinstance(exc, OperationalError | InterfaceError):
        logger.warning("database unavailable: %s", exc)
        exc = ServiceUnavailable()
    elif isinstance(exc, DatabaseError):
        logger.exception("database error")
        exc = ServiceUnavailable()
    elif isinstance(exc, Http404):
        exc = exceptions.NotFound("Not found.")
    elif isinstance(exc, PermissionDenied):
        exc = exceptions.PermissionDenied()
    elif isinstance(exc, exceptions.NotAuthenticated) and _authorization_of_another_form(context):
        said = exceptions.NotAuthenticated(AUTHORIZATION_FORM)
        said.auth_header = getattr(exc, "auth_header", None)  # the challenge DRF set
        exc = said

    if isinstance(exc, exceptions.ValidationError):
        return _validation_response(exc)
    response = exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, exceptions.APIException):
        detail = exc.detail
        code = detail.code if hasattr(detail, "code") else exc.default_code
        extra = getattr(exc, "extra", None) or {}
        response.data = error_body(str(code or exc.default_code), str(detail), **extra)
    return response
