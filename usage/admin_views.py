"""The usage page: one tenant's tokens and cost per day or month, drawn as a server-side SVG bar
chart with axes (``usage.chart``: no script, nothing fetched from elsewhere), with the numbers
in a table and the end users whose turns cost most, every cost with its currency. Reads only
aggregates (``usage.selectors``)."""

from datetime import timedelta

from django import forms
from django.contrib.admin import ModelAdmin
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils import timezone

from convmem.models import Tenant
from usage.chart import usage_chart
from usage.currency import cost_currency
from usage.selectors import GROUPINGS, InvalidPeriod, top_users, usage_rollup


class UsageForm(forms.Form):
    tenant = forms.ModelChoiceField(queryset=Tenant.objects.order_by("name"), empty_label=None)
    start = forms.DateField(label="From", widget=forms.DateInput(attrs={"type": "date"}))
    end = forms.DateField(label="To", widget=forms.DateInput(attrs={"type": "date"}))
    group_by = forms.ChoiceField(choices=[(g, g) for g in GROUPINGS], label="Per")
    user_ref = forms.CharField(required=False, max_length=255, label="End user (user_ref)")


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
            context |= {
                "tenant": params["tenant"],
                "currency": cost_currency(params["tenant"]),
                "rollup": rollup,
                "chart": usage_chart(rollup),
                "top_users": []
                if rollup.user_ref
                else top_users(tenant=params["tenant"], start=rollup.start, end=rollup.end),
            }
    return TemplateResponse(request, "admin/usage/usagereport/usage.html", context)
