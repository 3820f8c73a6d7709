"""Request bodies sent with ``Transfer-Encoding: chunked``: read them, or refuse them clearly.

Django reads a body only up to ``Content-Length``, so a chunked body (which has none) reads as
empty: a chunked append came back as "content: This field is required.", a chunked PATCH as a
silent no-op. WSGI has no way to say "the body ends where the input ends" except the
``wsgi.input_terminated`` flag, which servers that de-chunk the input set (gunicorn does).
With it, the body is read here (up to ``CONVMEM_MAX_REQUEST_BYTES``) and handed to Django with
its length. Without it (``runserver``, wsgiref) nothing can tell where the body ends, so the
request is refused with 411 Length Required.
"""

import io
import json
from collections.abc import Callable, Iterable
from typing import Any

from django.conf import settings

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class ChunkedBodyMiddleware:
    """WSGI middleware around the Django application (see the module docstring)."""

    def __init__(self, app: WSGIApp) -> None:
        self.app = app

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        if not _is_chunked(environ):
            return self.app(environ, start_response)
        if not environ.get("wsgi.input_terminated"):
            return _refuse(
                start_response,
                "411 Length Required",
                "length_required",
                "This server cannot read a chunked request body: send it with a "
                "Content-Length header.",
            )
        limit = settings.CONVMEM_MAX_REQUEST_BYTES
        body = environ["wsgi.input"].read(limit + 1)
        if len(body) > limit:
            return _refuse(
                start_response,
                "413 Request Entity Too Large",
                "payload_too_large",
                f"Request body exceeds {limit} bytes.",
            )
        environ["wsgi.input"] = io.BytesIO(body)
        environ["CONTENT_LENGTH"] = str(len(body))
        return self.app(environ, start_response)


def _is_chunked(environ: dict[str, Any]) -> bool:
    encoding = environ.get("HTTP_TRANSFER_ENCODING", "").lower()
    return "chunked" in encoding and not environ.get("CONTENT_LENGTH")


def _refuse(start_response: Callable[..., Any], status: str, code: str, detail: str) -> list[bytes]:
    """An error in the API's shape (``convmem.errors``, not imported: this module loads before
    Django is set up)."""
    payload = json.dumps({"code": code, "detail": detail}).encode()
    start_response(
        status,
        [("Content-Type", "application/json"), ("Content-Length", str(len(payload)))],
    )
    return [payload]
