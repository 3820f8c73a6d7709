"""The staff admin's "Usage and cost" page (``usage.admin_views``)."""

from typing import Any

from django.contrib import admin
from django.http import HttpRequest, HttpResponse

from usage import admin_views
from usage.models import UsageReport


@admin.register(UsageReport)
class UsageReportAdmin(admin.ModelAdmin):
    """Read-only: the list page is the report."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        return admin_views.usage_view(self, request)
