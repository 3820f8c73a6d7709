from django.contrib import admin
from django.urls import include, path, re_path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView

from convmem.views import ApiRootView, api_route_not_found

api_v1 = [
    path("", ApiRootView.as_view(), name="api-root"),
    # audit first: it routes the thread resource itself, adding DELETE to threads' view.
    path("", include("audit.urls")),
    path("", include("threads.urls")),
    path("", include("compaction.urls")),
    path("", include("respond.urls")),
    path("", include("usage.urls")),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="docs"),
    path("redoc/", SpectacularRedocView.as_view(url_name="schema"), name="redoc"),
]

# Admin pages of models that moved app in the December 2026 split: old bookmarks still work.
MOVED_ADMIN_PAGES = {
    "audit/auditevent": "auditlog/auditevent",
    "audit/assemblyrecord": "compaction/assemblyrecord",
    "audit/contentblob": "compaction/contentblob",
    "compaction/modelprofile": "convmem/modelprofile",
}

urlpatterns = [
    *(
        re_path(
            rf"^admin/{old}/(?P<rest>.*)$",
            RedirectView.as_view(url=f"/admin/{new}/%(rest)s", permanent=True, query_string=True),
        )
        for old, new in MOVED_ADMIN_PAGES.items()
    ),
    path("admin/", admin.site.urls),
    path("api/v1/", include(api_v1)),
    # Last: whatever else is under /api/ is a JSON 404, whatever the method (and DEBUG).
    re_path(r"^api(?:/.*)?$", api_route_not_found),
]

handler403 = "convmem.error_pages.permission_denied"
handler404 = "convmem.error_pages.page_not_found"
handler500 = "convmem.error_pages.server_error"
