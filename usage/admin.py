"""The staff admin's "Usage and cost" page (``usage.admin_views``)."""

from typing import Any

from django.contrib import admin
from django.http import HttpRequest, HttpResponse

from convmem.admin_changelist import ViewOnlyAdmin
from usage import admin_views
from usage.models import UsageReport


@admin.register(UsageReport)
class UsageReportAdmin(ViewOnlyAdmin):
    """Read-only: the list page is the report."""

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        return admin_views.usage_view(self, request)
