"""The kernel's admin: tenants, API keys, model profiles, and the site's own name."""

from django.contrib import admin, messages
from django.http import HttpRequest
from rest_framework_api_key.models import APIKey

from convmem.admin_changelist import BoundedChangeListMixin, ConvmemModelAdmin
from convmem.models import ApiKey, ModelProfile, Tenant
from convmem.tenancy import api_key_create

admin.site.site_header = "convmem"
admin.site.site_title = "convmem"
admin.site.index_title = "Conversations, memos and compliance"

# The key library registers an admin for its own (unused) APIKey model: it showed a second
# "API keys" entry beside ours, which is the one the API authenticates with.
if admin.site.is_registered(APIKey):
    admin.site.unregister(APIKey)


class ApiKeyInline(admin.TabularInline):
    model = ApiKey
    fields = ["name", "prefix", "scopes", "revoked", "expiry_date", "created"]
    readonly_fields = ["prefix", "created"]
    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(Tenant)
class TenantAdmin(ConvmemModelAdmin):
    list_display = ["name", "created_at"]
    search_fields = ["name"]
    inlines = [ApiKeyInline]


@admin.register(ApiKey)
class ApiKeyAdmin(ConvmemModelAdmin):
    """Keys are created here (the plaintext key is shown once, in a message) and revoked."""

    list_display = ["name", "tenant", "prefix", "scopes", "revoked", "expiry_date", "created"]
    list_filter = ["tenant", "revoked"]
    search_fields = ["name", "prefix", "tenant__name"]
    fields = ["tenant", "name", "scopes", "expiry_date", "revoked", "prefix", "created"]
    readonly_fields = ["prefix", "created"]

    def get_readonly_fields(self, request: HttpRequest, obj: ApiKey | None = None) -> list[str]:
        return [*self.readonly_fields, "tenant"] if obj else self.readonly_fields

    def save_model(self, request: HttpRequest, obj: ApiKey, form: object, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        created, key = api_key_create(tenant=obj.tenant, name=obj.name, scopes=obj.scopes or [])
        obj.pk = created.pk
        messages.warning(request, f"The API key is shown only this once: {key}")


@admin.register(ModelProfile)
class ModelProfileAdmin(ConvmemModelAdmin):
    list_display = [
        "name",
        "tenant",
        "is_default",
        "window_tokens",
        "reserve_tokens",
        "encoding",
        "min_recent_turns",
        "memo_max_tokens",
        "high_water",
        "low_water",
        "tool_result_elide_tokens",
        "recall",
        "thread_ttl",
    ]
    list_filter = ["tenant", "is_default"]
    search_fields = ["name", "tenant__name"]
    list_select_related = ["tenant"]


# The ModelAdmins registered by the apps listed before this one (Django's users and groups,
# the API-key library's) get the same guard against impossible dates; convmem's own admins
# derive from ConvmemModelAdmin.
for _model, _admin in list(admin.site._registry.items()):
    if not isinstance(_admin, BoundedChangeListMixin):
        _class = type(_admin)
        admin.site.unregister(_model)
        admin.site.register(_model, type(_class.__name__, (BoundedChangeListMixin, _class), {}))
