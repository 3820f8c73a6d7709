"""Threads in the staff admin: read-only, found by id, user_ref, tenant and date.

A thread's page is the conversation drawn as branches (``threads.admin_views``); a message's
page is its lineage. Nothing here writes to the record: edits come from the API and erasure
from an approved deletion request.

Apps above threads extend these admins by subclassing them and registering the subclass in
place of the one before (compaction adds the memos, audit adds exports): threads knows neither.
"""

from datetime import timedelta
from typing import Any

from django.contrib import admin
from django.db.models import Case, F, Q, QuerySet, TextField, When
from django.db.models.functions import Substr
from django.http import Http404, HttpRequest, HttpResponse
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.formats import date_format
from django.utils.html import format_html
from django.utils.safestring import mark_safe

from auditlog.events import Actor, audit_event_record
from convmem.admin_changelist import ViewOnlyAdmin
from convmem.ids import PUBLIC_ID
from convmem.sealed_fields import stored_open
from threads import admin_views, search
from threads.erasure import ERASED
from threads.models import Message, Role, Thread


class MessageBodyHooks:
    """What the message bodies of the thread and message pages need from apps above threads."""

    def elided_in_latest_input(self, thread: Thread) -> set[str]:
        """Public ids of the tool results the thread's latest model input showed as a short
        marker (compaction's admin)."""
        return set()


def public_id_or_pk(object_id: str) -> dict[str, str]:
    """Admin URLs name an object by its public id (``thr_…``); a pk still works (admin links)."""
    return {"pk": object_id} if object_id.isdigit() else {"public_id": object_id}


class ErasedFilter(admin.SimpleListFilter):
    title = "erased"
    parameter_name = "erased"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("no", "live"), ("yes", "erased")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Thread]) -> QuerySet[Thread]:
        erased = Q(erased_at__isnull=False) | Q(deleted_at__isnull=False)
        if self.value() == "yes":
            return queryset.filter(erased)
        if self.value() == "no":
            return queryset.exclude(erased)
        return queryset


class ExpiryFilter(admin.SimpleListFilter):
    """Live threads by expiry: past it (erased on the next run, unless a legal hold keeps
    them), expiring within the next 7 days, or without one."""

    title = "expiry"
    parameter_name = "expiry"
    SOON = timedelta(days=7)

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("expired", "expired"), ("soon", "expiring within 7 days"), ("none", "no expiry")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Thread]) -> QuerySet[Thread]:
        now = timezone.now()
        live = queryset.filter(deleted_at__isnull=True)
        if self.value() == "expired":
            return live.filter(expires_at__lte=now)
        if self.value() == "soon":
            return live.filter(expires_at__gt=now, expires_at__lte=now + self.SOON)
        if self.value() == "none":
            return live.filter(expires_at__isnull=True)
        return queryset


@admin.register(Thread)
class ThreadAdmin(MessageBodyHooks, ViewOnlyAdmin):
    list_display = ["public_id", "tenant", "user_ref", "title_or_erased", "created_at", "expiry"]
    list_filter = ["tenant", ErasedFilter, ExpiryFilter]
    date_hierarchy = "created_at"
    search_fields = ["=public_id", "=user_ref", "title"]
    search_help_text = "A thread id (thr_…), an exact user_ref, or words of the title."
    list_select_related = ["tenant"]
    show_full_result_count = False

    @admin.display(description="title", ordering="title")
    def title_or_erased(self, obj: Thread) -> str:
        if obj.erased_at or obj.deleted_at:
            return mark_safe('<span class="cm-badge bad cm-erased">erased</span>')
        return obj.title or "—"

    @admin.display(description="expires", ordering="expires_at")
    def expiry(self, obj: Thread) -> str:
        if obj.expires_at is None or obj.deleted_at:
            return "—"
        when = date_format(timezone.localtime(obj.expires_at), "DATETIME_FORMAT")
        if obj.expires_at <= timezone.now():
            return format_html('<span class="cm-badge bad cm-expired">expired {}</span>', when)
        return when

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


PREVIEW_CHARS = 100


@admin.register(Message)
class MessageAdmin(MessageBodyHooks, ViewOnlyAdmin):
    """Messages, searchable by content for staff who may view messages (searches are audited).

    A message or thread id finds that message or that thread's messages; any other search is
    answered by the full-text index the search API uses (``threads.search``): whole words,
    every word must occur, erased content never matches.
    """

    list_display = ["public_id", "thread_link", "role", "preview", "token_count", "created_at"]
    list_filter = ["role"]
    date_hierarchy = "created_at"
    search_fields = ["=public_id", "=thread__public_id"]
    search_help_text = (
        "A message id, a thread id, or words of the content (whole words, all of them)."
    )
    list_select_related = ["thread"]
    show_full_result_count = False

    def get_queryset(self, request: HttpRequest) -> QuerySet[Message]:
        return (
            super()
            .get_queryset(request)
            .exclude(role=Role.ROOT)
            .defer("content")
            # A sealed message's preview is its whole (ciphertext) content, opened in
            # ``preview``: a prefix of ciphertext opens to nothing.
            .annotate(
                content_preview=Case(
                    When(search_terms="", then=Substr("content", 1, PREVIEW_CHARS)),
                    default=F("content"),
                    output_field=TextField(),
                )
            )
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
        term = search_term.strip()
        if not term or PUBLIC_ID.fullmatch(term):
            return super().get_search_results(request, queryset, term)
        return search.message_search(queryset, term)[0], False

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
        return stored_open(Message, "content", obj.public_id, obj.content_preview)[:PREVIEW_CHARS]

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
