"""The API's front door and its answer for paths that lead nowhere: JSON, like every API error.

``/api/v1/`` lists the endpoints (read from the URLconf, so the list cannot drift); any other
path under ``/api/`` that matches no endpoint is a JSON 404, never Django's HTML page, which an
API client cannot read (see also ``convmem.error_pages``).
"""

from functools import cache
from typing import Any

from django.http import HttpRequest, JsonResponse
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.generators import EndpointEnumerator
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from convmem.error_pages import api_not_found

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
def api_route_not_found(request: HttpRequest, *args: Any, **kwargs: Any) -> JsonResponse:
    """Every method on any path under ``/api/`` that no endpoint matches (whatever ``DEBUG``
    says: Django's handler404 runs only with it off)."""
    return api_not_found(request)
