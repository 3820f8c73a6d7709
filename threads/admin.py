"""Threads in the staff admin: read-only, found by id, user_ref, tenant and date.

A thread's page is the conversation drawn as branches (``threads.admin_views``); a message's
page is its lineage. Nothing here writes to the record: edits come from the API and erasure
from an approved deletion request.

Apps above threads extend these admins by subclassing them and registering the subclass in
place of the one before (compaction adds the memos, audit adds exports): threads knows neither.
"""

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.db.models.functions import Substr
from django.http import Http404, HttpRequest, HttpResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html

from auditlog.events import Actor, audit_event_record
from convmem.admin_changelist import ViewOnlyAdmin
from threads import admin_views
from threads.erasure import ERASED
from threads.models import Message, Role, Thread


def public_id_or_pk(object_id: str) -> dict[str, str]:
    """Admin URLs name an object by its public id (``thr_…``); a pk still works (admin links)."""
    return {"pk": object_id} if object_id.isdigit() else {"public_id": object_id}


@admin.register(Thread)
class ThreadAdmin(ViewOnlyAdmin):
    list_display = ["public_id", "tenant", "user_ref", "title", "created_at", "updated_at"]
    list_filter = ["tenant"]
    date_hierarchy = "created_at"
    search_fields = ["=public_id", "=user_ref", "title"]
    search_help_text = "A thread id (thr_…), an exact user_ref, or words of the title."
    list_select_related = ["tenant"]
    show_full_result_count = False

    def can_export(self, request: HttpRequest) -> bool:
        """Whether the pages offer an export (the compliance app's admin says yes)."""
        return False

    def memos_ending_at(self, thread: Thread, message_pks: list[int]) -> dict[int, list[Any]]:
        """The memos to show under each message of a page, by message pk (compaction's admin)."""
        return {}

    def get_urls(self) -> list[URLPattern]:
        own = [
            path(
                "<str:object_id>/branch/<str:message_id>/",
                self.admin_site.admin_view(self.branch_view),
                name="threads_thread_branch",
            ),
        ]
        return own + super().get_urls()

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        thread = self.thread_or_denied(request, object_id)
        return admin_views.conversation_view(self, request, thread)

    def branch_view(self, request: HttpRequest, object_id: str, message_id: str) -> HttpResponse:
        thread = self.thread_or_denied(request, object_id)
        return admin_views.branch_fragment_view(self, request, thread, message_id)

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        extra = {"can_export": self.can_export(request), **(extra_context or {})}
        return super().changelist_view(request, extra)

    def thread_or_denied(self, request: HttpRequest, object_id: str) -> Thread:
        admin_views.require_view(self, request)
        thread = (
            self.get_queryset(request)
            .select_related("tenant", "profile", "active_leaf")
            .filter(**public_id_or_pk(object_id))
            .first()
        )
        if thread is None:
            raise Http404("No such thread.")
        return thread


@admin.register(Message)
class MessageAdmin(ViewOnlyAdmin):
    """Messages, searchable by content for staff who may view messages (searches are audited)."""

    list_display = ["public_id", "thread_link", "role", "preview", "token_count", "created_at"]
    list_filter = ["role"]
    date_hierarchy = "created_at"
    search_fields = ["=public_id", "=thread__public_id", "content"]
    search_help_text = "A message id, a thread id, or words of the content."
    list_select_related = ["thread"]
    show_full_result_count = False

    def get_queryset(self, request: HttpRequest) -> QuerySet[Message]:
        return (
            super()
            .get_queryset(request)
            .exclude(role=Role.ROOT)
            .defer("content")
            .annotate(content_preview=Substr("content", 1, 100))
        )

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Message], search_term: str
    ) -> tuple[QuerySet[Message], bool]:
        if search_term:
            # Who searched message content, not what for: the term may itself be personal data.
            audit_event_record(
                actor=Actor.staff(request.user),
                action="message.searched",
                tenant_id=None,
                details={"term_length": len(search_term)},
            )
        return super().get_search_results(request, queryset, search_term)

    @admin.display(description="thread", ordering="thread")
    def thread_link(self, obj: Message) -> str:
        url = reverse("admin:threads_thread_change", args=[obj.thread.public_id])
        return format_html('<a href="{}">{}</a>', url, obj.thread.public_id)

    def memos_covering(self, message: Message) -> list[Any]:
        """The memos to show on a message's page (compaction's admin)."""
        return []

    @admin.display(description="content")
    def preview(self, obj: Message) -> str:
        if obj.erased_at:
            return ERASED
        return obj.content_preview

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        admin_views.require_view(self, request)
        message = (
            Message.objects.exclude(role=Role.ROOT)
            .select_related("thread")
            .filter(**public_id_or_pk(object_id))
            .first()
        )
        if message is None:
            raise Http404("No such message.")
        return admin_views.message_lineage_view(self, request, message)
