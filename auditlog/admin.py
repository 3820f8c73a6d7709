"""The audit log in the admin: view only, for everyone (the model refuses changes anyway)."""

from django.contrib import admin

from auditlog.models import AuditEvent
from convmem.admin_changelist import ViewOnlyAdmin


@admin.register(AuditEvent)
class AuditEventAdmin(ViewOnlyAdmin):
    """The append-only log: view only, for everyone (the model refuses changes anyway)."""

    list_display = ["created_at", "action", "actor_type", "actor_id", "thread_public_id", "tenant"]
    list_filter = ["action", "actor_type", "tenant"]
    search_fields = ["=thread_public_id", "=actor_id", "action"]
    date_hierarchy = "created_at"
    list_select_related = ["tenant"]
    show_full_result_count = False
