"""The API's front door and its answer for paths that lead nowhere: JSON, like every API error.

``/api/v1/`` lists the endpoints (read from the URLconf, so the list cannot drift); any other
path under ``/api/`` that matches no endpoint is a JSON 404, never Django's HTML page, which an
API client cannot read (see also ``convmem.error_pages``).
"""

from functools import cache
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
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

_DOCS_VIEWS: tuple[type, ...] = (SpectacularAPIView, SpectacularSwaggerView, SpectacularRedocView)


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


def landing(request: HttpRequest) -> HttpResponse:
    """``/`` (where the admin's "View site" goes): links to the admin and the API docs."""
    return render(request, "landing.html")


# What the ReDoc page may load: only this server. ReDoc's footer shows Redocly's logo from
# their CDN; the browser is told not to fetch it (the page hides a logo that fails to load).
REDOC_CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self' blob:",
        "worker-src 'self' blob:",
        # ReDoc styles itself with <style> elements it inserts (styled-components).
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data:",
        "font-src 'self' data:",
        "connect-src 'self'",
    ]
)


class RedocView(SpectacularRedocView):
    """drf-spectacular's ReDoc page, making no request outside this server: ReDoc from
    drf-spectacular-sidecar, no Google Fonts (``templates/drf_spectacular/redoc.html``), and a
    Content-Security-Policy that keeps the browser on this origin."""

    @extend_schema(exclude=True)
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        response = super().get(request, *args, **kwargs)
        response["Content-Security-Policy"] = REDOC_CONTENT_SECURITY_POLICY
        return response
