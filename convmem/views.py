"""The API's front door and its answers for paths that lead nowhere: JSON, like every API error.

``/api/v1/`` lists the endpoints (read from the URLconf, so the list cannot drift); any other
path under ``/api/`` that matches no endpoint is a JSON 404, and an unexpected error on an API
path is a JSON 500 — never Django's HTML pages, which an API client cannot read.
"""

from functools import cache
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import reverse
from django.views import defaults
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.generators import EndpointEnumerator
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from convmem.errors import error_body

API_PREFIX = "/api/"
_DOCS_VIEWS = (SpectacularAPIView, SpectacularSwaggerView, SpectacularRedocView)


@extend_schema(exclude=True)
class ApiRootView(APIView):
    """What the API offers, for anyone: no key needed to read the map."""

    authentication_classes: list[type] = []
    permission_classes = [AllowAny]

    def get(self, request: Request) -> Response:
        return Response(
            {
                "name": "convmem API",
                "version": "v1",
                "authentication": "Authorization: Bearer <api key>",
                "docs": request.build_absolute_uri(reverse("docs")),
                "redoc": request.build_absolute_uri(reverse("redoc")),
                "schema": request.build_absolute_uri(reverse("schema")),
                "endpoints": [{"method": m, "path": p} for m, p in api_endpoints()],
            }
        )


@cache
def api_endpoints() -> list[tuple[str, str]]:
    """(method, path template) of every API operation, in path order."""
    return [
        (method, path)
        for path, _, method, view in EndpointEnumerator().get_api_endpoints()
        if not issubclass(view.cls, (ApiRootView, *_DOCS_VIEWS))
    ]


@csrf_exempt
def api_not_found(request: HttpRequest, *args: Any, **kwargs: Any) -> JsonResponse:
    """Every method on any path under ``/api/`` that no endpoint matches."""
    detail = f"No API endpoint at {request.path}. The endpoints are listed at /api/v1/."
    return JsonResponse(error_body("not_found", detail), status=404)


def server_error(request: HttpRequest) -> HttpResponse:
    """``handler500``: JSON under ``/api/`` (the error was logged), the 500 page elsewhere."""
    if request.path.startswith(API_PREFIX):
        detail = "An unexpected error occurred; it has been logged. Nothing can be assumed written."
        return JsonResponse(error_body("server_error", detail), status=500)
    return defaults.server_error(request)
