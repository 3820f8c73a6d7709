from django.contrib import admin
from django.urls import include, path, re_path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from convmem.checks import MOVED_MODELS
from convmem.views import ApiRootView, RedocView, api_route_not_found, landing

api_v1 = [
    path("", ApiRootView.as_view(), name="api-root"),
    # audit first: it routes the thread resource itself, adding DELETE to threads' view.
    path("", include("audit.urls")),
    path("", include("threads.urls")),
    path("", include("compaction.urls")),
    path("", include("respond.urls")),
    path("", include("usage.urls")),
    path("", include("imports.urls")),
    path("", include("webhooks.urls")),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="docs"),
    path("redoc/", RedocView.as_view(url_name="schema"), name="redoc"),
]

urlpatterns = [
    path("", landing, name="landing"),
    # Admin pages of models that moved app in the December 2026 split: old bookmarks still work.
    *(
        re_path(
            rf"^admin/{old}/{model}/(?P<rest>.*)$",
            RedirectView.as_view(
                url=f"/admin/{new}/{model}/%(rest)s", permanent=True, query_string=True
            ),
        )
        for old, model, new in MOVED_MODELS
    ),
    path("admin/", admin.site.urls),
    path("api/v1/", include(api_v1)),
    # Last: whatever else is under /api/ is a JSON 404, whatever the method (and DEBUG).
    re_path(r"^api(?:/.*)?$", api_route_not_found),
]

handler403 = "convmem.error_pages.permission_denied"
handler404 = "convmem.error_pages.page_not_found"
handler500 = "convmem.error_pages.server_error"
