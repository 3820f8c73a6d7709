"""Reject API requests that cannot be served before anything reads them."""

from collections.abc import Callable
from urllib.parse import unquote

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse

from convmem.errors import error_body


class RequestSizeLimitMiddleware:
    """Answer 413 for API bodies over ``CONVMEM_MAX_REQUEST_BYTES``, and 400 for a NUL
    character in the path or query string.

    DRF streams the body straight into the parser, bypassing Django's
    ``DATA_UPLOAD_MAX_MEMORY_SIZE`` check, so the limit is enforced here on Content-Length.
    PostgreSQL text cannot hold NUL, so an id or filter carrying one would fail in the database
    (a 503) instead of reading as what it is: a malformed request. Bodies are covered by the
    serializers (DRF's CharField refuses NUL).
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not request.path.startswith("/api/"):
            return self.get_response(request)
        if self._too_large(request):
            body = error_body(
                "payload_too_large",
                f"Request body exceeds {settings.CONVMEM_MAX_REQUEST_BYTES} bytes.",
            )
            return JsonResponse(body, status=413)
        if "\x00" in request.path or "\x00" in unquote(request.META.get("QUERY_STRING", "")):
            body = error_body("invalid", "The path or query string contains a NUL character.")
            return JsonResponse(body, status=400)
        return self.get_response(request)

    @staticmethod
    def _too_large(request: HttpRequest) -> bool:
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return False
        return length > settings.CONVMEM_MAX_REQUEST_BYTES
