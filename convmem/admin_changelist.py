"""Admin helpers every app shares: changelists that treat an impossible date filter like any
other bad filter (``ConvmemModelAdmin``, the base of every ModelAdmin here), and the view-only
admin of records nobody edits by hand."""

from typing import Any

from django.contrib import admin
from django.contrib.admin.options import IncorrectLookupParameters
from django.contrib.admin.views.main import ChangeList
from django.db.models import QuerySet
from django.http import HttpRequest


class BoundedDateChangeList(ChangeList):
    """A year outside 1..9999 in a changelist URL is a bad filter, not a 500.

    Two ways in: the date hierarchy, which Django turns into a range itself, catching only
    the ValueError of ``datetime(year, month, day)`` (a year such as 99999999999 raises
    OverflowError, and the end of a range in year 9999 overflows after that check); and any
    ``<date field>__year=`` typed into the URL (``created_at__year=0``, ``=10000``), which
    Django filters by and which fails only when the query is compiled, while the page renders.
    Both become IncorrectLookupParameters here, which the changelist answers as it does any
    bad filter: by redirecting to ``?e=1``, the list without its filters."""

    def get_filters(self, request: HttpRequest) -> Any:
        try:
            return super().get_filters(request)
        except (OverflowError, ValueError) as exc:
            raise IncorrectLookupParameters(exc) from exc

    def get_queryset(self, request: HttpRequest, exclude_parameters: Any = None) -> QuerySet:
        queryset = super().get_queryset(request, exclude_parameters)
        try:
            # Compiling needs no database: it computes the bounds of every year lookup.
            queryset.query.get_compiler(queryset.db).as_sql()
        except (OverflowError, ValueError) as exc:
            raise IncorrectLookupParameters(exc) from exc
        return queryset


class BoundedChangeListMixin:
    """For any ModelAdmin (Django's own ones too): the changelist is a
    ``BoundedDateChangeList``."""

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return BoundedDateChangeList


class ConvmemModelAdmin(BoundedChangeListMixin, admin.ModelAdmin):
    """The base of every ModelAdmin of convmem."""


class ViewOnlyAdmin(ConvmemModelAdmin):
    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False
