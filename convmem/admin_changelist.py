"""Admin helpers every app shares: changelists that treat an impossible date filter like any
other bad filter, and the view-only admin of records nobody edits by hand."""

from typing import Any

from django.contrib import admin
from django.contrib.admin.options import IncorrectLookupParameters
from django.contrib.admin.views.main import ChangeList
from django.http import HttpRequest


class BoundedDateChangeList(ChangeList):
    """Django turns the date-hierarchy parameters into a range itself, and catches only the
    ValueError of ``datetime(year, month, day)``: a year such as 99999999999 raises
    OverflowError instead, and the end of a range in year 9999 (the next year, month or day)
    overflows after that check. Both were 500s. Here they are IncorrectLookupParameters,
    which the changelist answers as it does any bad filter: by redirecting to ``?e=1``, the
    list without its filters."""

    def get_filters(self, request: HttpRequest) -> Any:
        try:
            return super().get_filters(request)
        except (OverflowError, ValueError) as exc:
            raise IncorrectLookupParameters(exc) from exc


class BoundedDateHierarchyMixin:
    """For ModelAdmins with a ``date_hierarchy``: use :class:`BoundedDateChangeList`."""

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return BoundedDateChangeList


class ViewOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False
