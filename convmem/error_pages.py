"""Error pages: JSON under ``/api/`` (what an API client can read), pages in the admin's look
elsewhere (``templates/403.html``, ``404.html``, ``500.html``). The 403 page says which
permission is missing where that can be told.

Django calls these only with ``DEBUG`` off (with it on, it shows its technical pages).
"""

from typing import Any

from django.contrib import admin
from django.http import (
    HttpRequest,
    HttpResponse,
    HttpResponseForbidden,
    HttpResponseNotFound,
    JsonResponse,
)
from django.template import loader
from django.views import defaults

from convmem.admin_permissions import missing_page_permission, permission_needed
from convmem.errors import error_body

API_PREFIX = "/api/"


def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    if request.path.startswith(API_PREFIX):
        detail = str(exception) or "You do not have permission to perform this action."
        return JsonResponse(error_body("permission_denied", detail), status=403)
    missing = missing_page_permission(request)
    reason = permission_needed(missing) if missing else str(exception)
    body = loader.render_to_string(
        "403.html", {**_admin_context(request), "reason": reason}, request
    )
    return HttpResponseForbidden(body)


def api_not_found(request: HttpRequest) -> JsonResponse:
    detail = f"No API endpoint at {request.path}. The endpoints are listed at /api/v1/."
    return JsonResponse(error_body("not_found", detail), status=404)


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    if request.path.startswith(API_PREFIX):
        return api_not_found(request)
    body = loader.render_to_string(
        "404.html", {**_admin_context(request), "request_path": request.path}, request
    )
    return HttpResponseNotFound(body)


def server_error(request: HttpRequest) -> HttpResponse:
    """JSON under ``/api/`` (the error was logged), the plain 500 page elsewhere."""
    if request.path.startswith(API_PREFIX):
        detail = "An unexpected error occurred; it has been logged."
        return JsonResponse(error_body("server_error", detail), status=500)
    return defaults.server_error(request)


def _admin_context(request: HttpRequest) -> dict[str, Any]:
    """The admin's header, user tools and side navigation, for signed-in staff."""
    user = getattr(request, "user", None)
    if user is None or not user.is_active or not user.is_staff:
        return {}
    return admin.site.each_context(request)
