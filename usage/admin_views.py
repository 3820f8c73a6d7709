"""The usage page: one tenant's tokens and cost per day or month, drawn as server-side SVG bars
(no script, nothing fetched from elsewhere), with the numbers in a table and the end users
whose turns cost most. Reads only aggregates (``usage.selectors``)."""

from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal

from django import forms
from django.contrib.admin import ModelAdmin
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils import timezone

from convmem.models import Tenant
from usage.selectors import GROUPINGS, InvalidPeriod, Rollup, Usage, top_users, usage_rollup

CHART_WIDTH = 800
CHART_HEIGHT = 200


class UsageForm(forms.Form):
    tenant = forms.ModelChoiceField(queryset=Tenant.objects.order_by("name"), empty_label=None)
    start = forms.DateField(label="From", widget=forms.DateInput(attrs={"type": "date"}))
    end = forms.DateField(label="To", widget=forms.DateInput(attrs={"type": "date"}))
    group_by = forms.ChoiceField(choices=[(g, g) for g in GROUPINGS])
    user_ref = forms.CharField(required=False, max_length=255, label="End user (user_ref)")


@dataclass(frozen=True)
class Bar:
    period: date
    usage: Usage
    x: float
    y: float
    width: float
    height: float


def _periods(start: date, end: date, group_by: str) -> list[date]:
    """Every day (or first day of a month) of the period: bars for empty periods too."""
    periods, current = [], start if group_by == "day" else start.replace(day=1)
    while current <= end:
        periods.append(current)
        if group_by == "day":
            current += timedelta(days=1)
        else:
            current = (current.replace(day=28) + timedelta(days=4)).replace(day=1)
    return periods


def chart_bars(rollup: Rollup) -> tuple[list[Bar], str]:
    """Bars of cost per period; of tokens when nothing has a price (every cost 0)."""
    periods = _periods(rollup.start, rollup.end, rollup.group_by)
    by_cost = rollup.totals.cost > 0
    metric = "cost" if by_cost else "tokens"

    def value(usage: Usage) -> Decimal:
        return usage.cost if by_cost else Decimal(usage.total_tokens)

    peak = max((value(u) for u in rollup.periods.values()), default=Decimal(0)) or Decimal(1)
    width = CHART_WIDTH / max(len(periods), 1)
    bars = []
    for index, period in enumerate(periods):
        usage = rollup.periods.get(period, Usage())
        height = float(value(usage) / peak) * CHART_HEIGHT
        bars.append(
            Bar(
                period=period,
                usage=usage,
                x=index * width + width * 0.1,
                y=CHART_HEIGHT - height,
                width=width * 0.8,
                height=height,
            )
        )
    return bars, metric


def usage_view(model_admin: ModelAdmin, request: HttpRequest) -> HttpResponse:
    if not model_admin.has_view_permission(request):
        raise PermissionDenied
    today = timezone.localdate()
    initial = {
        "tenant": Tenant.objects.order_by("name").first(),
        "start": today - timedelta(days=29),
        "end": today,
        "group_by": "day",
    }
    form = UsageForm(request.GET or None, initial=initial)
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.model._meta,
        "title": "Usage and cost",
        "form": form,
    }
    params = form.cleaned_data if form.is_bound and form.is_valid() else initial
    if (not form.is_bound or form.is_valid()) and params["tenant"] is not None:
        try:
            rollup = usage_rollup(
                tenant=params["tenant"],
                start=params["start"],
                end=params["end"],
                group_by=params["group_by"],
                user_ref=params.get("user_ref") or None,
            )
        except InvalidPeriod as error:
            form.add_error(None, str(error))
        else:
            bars, metric = chart_bars(rollup)
            context |= {
                "tenant": params["tenant"],
                "rollup": rollup,
                "bars": bars,
                "metric": metric,
                "chart_width": CHART_WIDTH,
                "chart_height": CHART_HEIGHT,
                "top_users": []
                if rollup.user_ref
                else top_users(tenant=params["tenant"], start=rollup.start, end=rollup.end),
            }
    return TemplateResponse(request, "admin/usage/usagereport/usage.html", context)
