"""The errors the client raises: one small hierarchy.

    ConvmemError                      anything this client raises
    ├── APIConnectionError            no answer (refused, reset, cut mid-stream); a ConnectionError
    │   └── APITimeoutError           no answer in time; a TimeoutError too
    └── APIError                      an error answer: status, code, detail, errors, body
        └── RateLimited               429, with retry_after (seconds, or None)

Every error of a write carries the ``idempotency_key`` it was sent with: retrying the call with
``idempotency_key=error.idempotency_key`` replays or resumes the first request, never writes twice.
"""

from __future__ import annotations

import builtins
from typing import Any

__all__ = ["APIConnectionError", "APIError", "APITimeoutError", "ConvmemError", "RateLimited"]


class ConvmemError(Exception):
    """Base of every error of this client."""

    def __init__(self, message: str, *, idempotency_key: str | None = None) -> None:
        super().__init__(message)
        self.idempotency_key = idempotency_key


class APIConnectionError(ConvmemError, builtins.ConnectionError):
    """The server could not be reached, or the connection broke before a complete answer
    (after the retries)."""


class APITimeoutError(APIConnectionError, builtins.TimeoutError):
    """No answer within the timeout (after the retries)."""


class APIError(ConvmemError):
    """An error answer of the API: its HTTP ``status``, stable ``code``, human ``detail``, the
    per-field ``errors`` of a 400 ``invalid``, and the whole JSON ``body``."""

    def __init__(
        self,
        status: int,
        code: str,
        detail: str,
        *,
        body: Any = None,
        idempotency_key: str | None = None,
    ) -> None:
        super().__init__(f"{status} {code}: {detail}", idempotency_key=idempotency_key)
        self.status = status
        self.code = code
        self.detail = detail
        self.body = body
        self.errors = body.get("errors") if isinstance(body, dict) else None


class RateLimited(APIError):
    """429: throttled; ``retry_after`` is the server's ``Retry-After`` in seconds (or None)."""

    def __init__(self, *args: Any, retry_after: float | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.retry_after = retry_after
