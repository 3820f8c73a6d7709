"""Webhook endpoints and the delivery log, with redelivery."""

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils.cache import add_never_cache_headers

from convmem.admin_changelist import ConvmemModelAdmin
from convmem.errors import InvalidRequest
from webhooks import services
from webhooks.models import EVENT_TYPES, WebhookDelivery, WebhookEndpoint


class WebhookEndpointForm(forms.ModelForm):
    """Events as checkboxes (not a JSON text box), and the URL checked as the API checks it,
    so a refused address is a form error rather than a server error."""

    url = forms.URLField(max_length=2000, assume_scheme="https")
    events = forms.MultipleChoiceField(
        choices=[(event, event) for event in EVENT_TYPES], widget=forms.CheckboxSelectMultiple
    )

    class Meta:
        model = WebhookEndpoint
        fields = ["tenant", "url", "events", "active"]

    def clean_url(self) -> str:
        try:
            return services.webhook_url_checked(self.cleaned_data["url"])
        except InvalidRequest as error:
            raise forms.ValidationError(str(error.detail)) from error


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(ConvmemModelAdmin):
    form = WebhookEndpointForm
    list_display = ["public_id", "tenant", "url", "events", "active", "created_at"]
    list_filter = ["active"]
    search_fields = ["public_id", "url", "tenant__name"]
    fields = ["public_id", "tenant", "url", "events", "active", "created_at"]
    readonly_fields = ["public_id", "created_at"]
    actions = ["rotate_secret"]

    # A signing secret is shown once, in the body of the response to the POST that made it (a
    # page of its own, ``secrets_page``), never through ``message_user``: Django's messages
    # go to a cookie (signed, not encrypted) or the session, so the secret would travel back
    # with the next requests and rest in the session store. The page is not cached
    # (``no-store``) and the admin's log entry says only "Added.".

    def save_model(self, request: HttpRequest, obj: WebhookEndpoint, form, change: bool) -> None:
        if not change:
            created = services.webhook_endpoint_create(
                tenant=obj.tenant, url=obj.url, events=obj.events
            )
            obj.pk, obj.public_id, obj.secret = created.pk, created.public_id, created.secret
            return
        super().save_model(request, obj, form, change)

    def response_add(
        self, request: HttpRequest, obj: WebhookEndpoint, post_url_continue: str | None = None
    ) -> HttpResponse:
        return self.secrets_page(request, [obj], title="Webhook endpoint added")

    @admin.action(description="Rotate the signing secret (the old one signs for a while)")
    def rotate_secret(
        self, request: HttpRequest, queryset: QuerySet[WebhookEndpoint]
    ) -> HttpResponse:
        rotated = [services.webhook_secret_rotate(endpoint=endpoint) for endpoint in queryset]
        return self.secrets_page(request, rotated, title="Signing secrets rotated")

    def secrets_page(
        self, request: HttpRequest, endpoints: list[WebhookEndpoint], *, title: str
    ) -> TemplateResponse:
        """The new signing secrets of ``endpoints``, shown this once."""
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": title,
            "endpoints": endpoints,
            "has_view_permission": True,
        }
        response = TemplateResponse(
            request, "admin/webhooks/webhookendpoint/secrets_shown.html", context
        )
        add_never_cache_headers(response)
        return response


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(ConvmemModelAdmin):
    list_display = [
        "event_id",
        "event_type",
        "endpoint_id_shown",
        "status",
        "attempts",
        "last_status_code_shown",
        "created_at",
    ]
    list_select_related = ["endpoint"]
    list_filter = ["status", "event_type"]
    search_fields = ["event_id", "endpoint__public_id"]
    readonly_fields = [f.name for f in WebhookDelivery._meta.fields]
    actions = ["redeliver"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    # The endpoint's id, not its "id -> url", and no delivered_at column: they pushed the log
    # wider than a 1400 px page. The URL and the delivery time are on the delivery's page.
    @admin.display(description="endpoint", ordering="endpoint__public_id")
    def endpoint_id_shown(self, delivery: WebhookDelivery) -> str:
        return delivery.endpoint.public_id

    @admin.display(description="HTTP", ordering="last_status_code")
    def last_status_code_shown(self, delivery: WebhookDelivery) -> int | None:
        return delivery.last_status_code

    @admin.action(description="Redeliver (same webhook-id)", permissions=["view"])
    def redeliver(self, request: HttpRequest, queryset: QuerySet[WebhookDelivery]) -> None:
        for delivery in queryset:
            services.delivery_redeliver(delivery=delivery)
        self.message_user(request, f"{queryset.count()} queued again.", messages.SUCCESS)
