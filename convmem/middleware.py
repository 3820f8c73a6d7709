"""Reject oversized request bodies before anything reads them."""

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse

from convmem.errors import error_body


class RequestSizeLimitMiddleware:
    """Answer 413 for API bodies over ``CONVMEM_MAX_REQUEST_BYTES``.

    DRF streams the body straight into the parser, bypassing Django's
    ``DATA_UPLOAD_MAX_MEMORY_SIZE`` check, so the limit is enforced here on Content-Length.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path.startswith("/api/") and self._too_large(request):
            body = error_body(
                "payload_too_large",
                f"Request body exceeds {settings.CONVMEM_MAX_REQUEST_BYTES} bytes.",
            )
            return JsonResponse(body, status=413)
        return self.get_response(request)

    @staticmethod
    def _too_large(request: HttpRequest) -> bool:
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return False
        return length > settings.CONVMEM_MAX_REQUEST_BYTES
