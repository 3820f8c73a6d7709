"""Basic admin registration of the audit app. Every write goes through the audit services, so the
admin checks the same permissions and writes the same audit events as every other caller.
"""

from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import URLPattern, path

from audit import admin_views, deletion, services
from audit.admin_views import DeletionReviewAdminMixin
from audit.exports import EXPORT_PERMISSION
from audit.models import DeletionRequest, LegalHold, RetentionPolicy
from auditlog.events import Actor
from compaction import admin as compaction_admin
from convmem.admin_changelist import ConvmemModelAdmin
from threads.models import Thread


@admin.register(RetentionPolicy)
class RetentionPolicyAdmin(ConvmemModelAdmin):
    list_display = ["tenant", "erase_content_after_days", "enabled", "updated_at"]
    fields = ["tenant", "erase_content_after_days", "enabled"]

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def save_model(
        self, request: HttpRequest, obj: RetentionPolicy, form: Any, change: bool
    ) -> None:
        saved = services.retention_policy_set(
            tenant=obj.tenant,
            actor=Actor.staff(request.user),
            erase_content_after_days=obj.erase_content_after_days,
            enabled=obj.enabled,
        )
        obj.pk = saved.pk


@admin.register(LegalHold)
class LegalHoldAdmin(ConvmemModelAdmin):
    """Holds are placed here and released with the action; a hold is never edited or deleted."""

    list_display = ["pk", "tenant", "user_ref", "thread", "active", "placed_by", "placed_at"]
    list_filter = ["active", "tenant"]
    search_fields = ["=user_ref", "=thread__public_id"]
    raw_id_fields = ["thread"]
    fields = ["tenant", "user_ref", "thread", "reason"]
    actions = ["release"]

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return obj is None and super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def save_model(self, request: HttpRequest, obj: LegalHold, form: Any, change: bool) -> None:
        placed = services.legal_hold_place(
            tenant=obj.tenant,
            actor=Actor.staff(request.user),
            reason=obj.reason,
            user_ref=obj.user_ref,
            thread=obj.thread,
        )
        obj.pk = placed.pk

    @admin.action(description="Release the selected holds", permissions=["change"])
    def release(self, request: HttpRequest, queryset: QuerySet[LegalHold]) -> None:
        for hold in queryset:
            services.legal_hold_release(hold=hold, actor=Actor.staff(request.user))
        self.message_user(request, f"Released {queryset.count()} hold(s).")


@admin.register(DeletionRequest)
class DeletionRequestAdmin(DeletionReviewAdminMixin, ConvmemModelAdmin):
    """Staff file requests here; approve and execute are actions gated by the permissions."""

    list_display = ["public_id", "tenant", "user_ref", "thread", "status", "created_at", "due_at"]
    list_filter = ["status", "tenant"]
    search_fields = ["=public_id", "=user_ref", "=thread__public_id"]
    list_select_related = ["tenant", "thread"]
    raw_id_fields = ["thread"]
    actions = ["approve", "execute"]

    def get_fields(self, request: HttpRequest, obj: DeletionRequest | None = None) -> list[str]:
        if obj is None:
            return ["tenant", "user_ref", "thread", "reason"]
        return [
            "public_id",
            "tenant",
            "user_ref",
            "thread",
            "reason",
            "status",
            "filed_by",
            "created_at",
            "due_at",
            "decided_by",
            "decided_at",
            "rejection_reason",
            "execution_requested_by",
            "execution_requested_at",
            "executed_at",
            "progress",
            "proof",
        ]

    def get_readonly_fields(
        self, request: HttpRequest, obj: DeletionRequest | None = None
    ) -> list[str]:
        return self.get_fields(request, obj) if obj is not None else []

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def save_model(
        self, request: HttpRequest, obj: DeletionRequest, form: Any, change: bool
    ) -> None:
        filed = deletion.deletion_request_file(
            tenant=obj.tenant,
            actor=Actor.staff(request.user),
            user_ref=obj.user_ref,
            thread=obj.thread,
            reason=obj.reason,
        )
        obj.pk = filed.pk

    def _each(self, request: HttpRequest, queryset: QuerySet[DeletionRequest], step: Any) -> None:
        for item in queryset:
            try:
                step(request=item, user=request.user)
            except (deletion.DeletionError, PermissionDenied) as error:
                self.message_user(request, f"{item.public_id}: {error}", messages.ERROR)
            else:
                self.message_user(request, f"{item.public_id}: done.")

    @admin.action(description="Approve the selected requests")
    def approve(self, request: HttpRequest, queryset: QuerySet[DeletionRequest]) -> None:
        self._each(request, queryset, deletion.deletion_request_approve)

    @admin.action(description="Execute the selected (approved) requests")
    def execute(self, request: HttpRequest, queryset: QuerySet[DeletionRequest]) -> None:
        self._each(request, queryset, deletion.deletion_request_execute)


class ThreadAdmin(compaction_admin.ThreadAdmin):
    """Threads' admin (with compaction's memos), offering exports to staff who may export: the
    thread's full history from its page, every thread of an end user from the list."""

    def can_export(self, request: HttpRequest) -> bool:
        return request.user.has_perm(EXPORT_PERMISSION)

    def get_urls(self) -> list[URLPattern]:
        own = [
            path(
                "export/",
                self.admin_site.admin_view(self.user_export_view),
                name="threads_thread_export_user",
            ),
            path(
                "<str:object_id>/export/",
                self.admin_site.admin_view(self.export_view),
                name="threads_thread_export",
            ),
        ]
        return own + super().get_urls()

    def export_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        thread = self.thread_or_denied(request, object_id)
        return admin_views.thread_export_view(self, request, thread)

    def user_export_view(self, request: HttpRequest) -> HttpResponse:
        return admin_views.user_export_view(self, request)


admin.site.unregister(Thread)
admin.site.register(Thread, ThreadAdmin)
