from django.contrib import admin

from threads.models import Message, Thread


@admin.register(Thread)
class ThreadAdmin(admin.ModelAdmin):
    list_display = ["public_id", "tenant", "user_ref", "title", "created_at"]
    list_filter = ["tenant", "created_at"]
    search_fields = ["=public_id", "=user_ref", "title"]
    readonly_fields = ["public_id", "tenant", "root", "active_leaf", "created_at", "updated_at"]
    fields = ["public_id", "tenant", "user_ref", "title", "metadata", "profile", "active_leaf"]
    list_select_related = ["tenant"]
    show_full_result_count = False


@admin.register(Message)
class MessageAdmin(admin.ModelAdmin):
    list_display = ["public_id", "thread", "role", "token_count", "depth", "created_at"]
    list_filter = ["role"]
    search_fields = ["=public_id", "=thread__public_id"]
    list_select_related = ["thread"]
    show_full_result_count = False
    readonly_fields = [
        "public_id",
        "thread",
        "parent",
        "role",
        "content",
        "token_count",
        "depth",
        "edits",
        "assembly",
        "erased_at",
        "created_at",
    ]

    def has_add_permission(self, request: object) -> bool:
        return False

    def has_delete_permission(self, request: object, obj: object = None) -> bool:
        return False
