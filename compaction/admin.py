"""Admin: model profiles are edited here; summaries are read-only (written by the memo task)."""

from django.contrib import admin
from django.http import HttpRequest

from compaction.admin_views import SummaryAdminMixin
from compaction.models import ModelProfile, Summary


@admin.register(ModelProfile)
class ModelProfileAdmin(admin.ModelAdmin):
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
        "tool_result_elide_tokens",
    ]
    list_filter = ["tenant", "is_default"]
    search_fields = ["name", "tenant__name"]
    list_select_related = ["tenant"]


@admin.register(Summary)
class SummaryAdmin(SummaryAdminMixin, admin.ModelAdmin):
    list_display = ["public_id", "thread", "status", "chain_depth", "token_count", "created_at"]
    list_filter = ["status"]
    search_fields = ["=public_id", "=thread__public_id"]
    list_select_related = ["thread"]
    show_full_result_count = False
    readonly_fields = [
        "public_id",
        "thread",
        "first",
        "last",
        "covered_ids",
        "base",
        "chain_depth",
        "status",
        "text",
        "token_count",
        "max_tokens",
        "backend",
        "model",
        "prompt_version",
        "fingerprint",
        "scores",
        "attempts",
        "error",
        "enqueued_at",
        "leased_until",
        "created_at",
        "updated_at",
    ]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False
