"""Staff admin pages of the compliance app: the review of a deletion request, and the exports of
a thread or of an end user's threads (offered on the threads' admin pages).

The deletion review shows the subject's footprint and any legal hold before anything happens;
approve, reject (with a reason) and execute are separate POSTs, each checked and audited by the
services in ``audit.deletion`` (this module only turns their refusals into messages).
"""

from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.admin import ModelAdmin
from django.core.exceptions import PermissionDenied
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseBadRequest,
    HttpResponseRedirect,
)
from django.template.response import TemplateResponse
from django.urls import URLPattern, re_path, reverse
from django.utils import timezone

from audit import admin_display, deletion
from audit.exports import EXPORT_PERMISSION, FORMATS, export_begin
from audit.models import DeletionRequest
from audit.selectors import deletion_request_threads
from auditlog.events import Actor
from auditlog.models import AuditEvent
from convmem.admin_permissions import permission_needed
from convmem.models import Tenant
from threads.models import Thread

SUBJECT_THREADS_SHOWN = 20
EVENTS_SHOWN = 50


def _review_url(request: DeletionRequest) -> str:
    return reverse("admin:audit_deletionrequest_change", args=[request.public_id])


def deletion_review_view(
    model_admin: ModelAdmin, http_request: HttpRequest, request: DeletionRequest
) -> HttpResponse:
    """The review page: subject, footprint, legal holds, due date, the steps the viewer may
    take, the progress of a running execution and, once executed, the proof."""
    user = http_request.user
    footprint = deletion.deletion_request_footprint(request)
    threads = [
        (public_id, user_ref, created, erased is not None or deleted is not None)
        for public_id, user_ref, created, erased, deleted in deletion_request_threads(request)
        .order_by("pk")
        .values_list("public_id", "user_ref", "created_at", "erased_at", "deleted_at")[
            : SUBJECT_THREADS_SHOWN + 1
        ]
    ]
    # The request's own trail: its events all come after it was filed (indexed) and name it.
    events = AuditEvent.objects.filter(
        created_at__gte=request.created_at,
        tenant_id=request.tenant_id,
        action__startswith="deletion_request.",
        object_ids__icontains=request.public_id,
    ).order_by("-id")[:EVENTS_SHOWN]
    status = DeletionRequest.Status
    progress = request.progress or {}
    running = (
        request.status == status.APPROVED
        and request.execution_requested_at is not None
        and progress.get("state") in {"queued", "running"}
    )
    proof = request.proof if request.status == status.EXECUTED else None
    may_decide = user.has_perm(deletion.APPROVE_PERMISSION)
    may_execute = user.has_perm(deletion.EXECUTE_PERMISSION)
    context = {
        **model_admin.admin_site.each_context(http_request),
        "opts": model_admin.model._meta,
        "title": "Deletion request",
        "request_obj": request,
        "footprint": footprint,
        "left_messages": footprint.messages - footprint.messages_already_erased,
        "threads": threads[:SUBJECT_THREADS_SHOWN],
        "more_threads": len(threads) > SUBJECT_THREADS_SHOWN,
        "events": [
            (
                event,
                admin_display.event_action(event.action),
                admin_display.event_details(event.details),
            )
            for event in events
        ],
        "overdue": request.due_at < timezone.now() and request.status != status.EXECUTED,
        "running": running,
        "progress": progress,
        "progress_state": admin_display.progress_state(progress),
        "can_approve": may_decide and request.status == status.RECEIVED,
        # While running, asking again re-queues the (resumable) task, e.g. after a lost worker.
        "can_execute": may_execute and request.status == status.APPROVED,
        "may_decide": may_decide,
        "may_execute": may_execute,
        "proof": proof,
        "proof_rows": admin_display.proof_rows(proof) if proof else [],
        "proof_times": admin_display.proof_times(proof) if proof else {},
        "has_view_permission": True,
    }
    return TemplateResponse(http_request, "admin/audit/deletionrequest/review.html", context)


def deletion_step_view(
    http_request: HttpRequest, request: DeletionRequest, step: str
) -> HttpResponseRedirect:
    """Take one step (``approve``, ``reject`` or ``execute``) through the audit services.

    The services check the permission and the transition and write the audit event; a refusal
    (wrong state, legal hold, missing reason) comes back as a message on the review page.
    """
    if http_request.method != "POST":
        raise PermissionDenied("Approve, Reject and Execute are buttons on the review page.")
    user = http_request.user
    try:
        if step == "approve":
            note = http_request.POST.get("note", "")
            deletion.deletion_request_approve(request=request, user=user, note=note)
            messages.success(http_request, "Approved. Execution is a separate step.")
        elif step == "reject":
            reason = http_request.POST.get("reason", "")
            deletion.deletion_request_reject(request=request, user=user, reason=reason)
            messages.success(http_request, "Rejected.")
        else:
            deletion.deletion_request_execute(request=request, user=user)
            messages.success(http_request, "Execution queued; progress shows below.")
    except deletion.DeletionError as refusal:
        messages.error(http_request, str(refusal))
    return HttpResponseRedirect(_review_url(request))


def _deletion_request_or_404(
    model_admin: Any, http_request: HttpRequest, object_id: str
) -> DeletionRequest:
    if not model_admin.has_view_permission(http_request):
        raise PermissionDenied
    lookup = {"pk": object_id} if object_id.isdigit() else {"public_id": object_id}
    found = DeletionRequest.objects.select_related("tenant", "thread").filter(**lookup).first()
    if found is None:
        raise Http404("No such deletion request.")
    return found


class DeletionReviewAdminMixin:
    """For ``DeletionRequestAdmin``: the change page is the review page, and each step is a
    POST of its own (``<id>/approve/``, ``<id>/reject/``, ``<id>/execute/``)."""

    def get_urls(self) -> list[URLPattern]:
        own = [
            re_path(
                r"^(?P<object_id>[^/]+)/(?P<step>approve|reject|execute)/$",
                self.admin_site.admin_view(self.deletion_step_view),
                name="audit_deletionrequest_step",
            )
        ]
        return own + super().get_urls()

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        deletion_request = _deletion_request_or_404(self, request, object_id)
        return deletion_review_view(self, request, deletion_request)

    def deletion_step_view(self, request: HttpRequest, object_id: str, step: str) -> HttpResponse:
        deletion_request = _deletion_request_or_404(self, request, object_id)
        return deletion_step_view(request, deletion_request, step)


def thread_export_view(
    model_admin: ModelAdmin, request: HttpRequest, thread: Thread
) -> HttpResponse:
    """The thread's full history, by the same export as the API (``audit.exports``)."""
    if not model_admin.can_export(request):
        raise PermissionDenied(permission_needed(EXPORT_PERMISSION))
    fmt = request.GET.get("format", "json")
    if fmt not in FORMATS:
        return HttpResponseBadRequest(f"format must be one of {', '.join(FORMATS)}.")
    export = export_begin(
        tenant=thread.tenant,
        actor=Actor.staff(request.user),
        thread=thread,
        fmt=fmt,
        user=request.user,
    )
    return export.response()


FORMAT_WORDS = {
    "html": "A page for the person (HTML, readable)",
    "pdf": "A document for the person (PDF, the same page printed)",
    "json": "JSON (machine-readable, one file)",
    "jsonl": "JSON Lines (machine-readable, one record a line)",
}


class UserExportForm(forms.Form):
    tenant = forms.ModelChoiceField(queryset=Tenant.objects.order_by("name"))
    user_ref = forms.CharField(max_length=255, label="End user (user_ref)")
    format = forms.ChoiceField(
        choices=[(f, FORMAT_WORDS.get(f, f)) for f in FORMATS], initial="html"
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        tenants = self.fields["tenant"]
        # With one tenant there is nothing to choose: no blank "---------" to trip over.
        if tenants.queryset.count() == 1:
            tenants.empty_label = None


def user_export_view(model_admin: ModelAdmin, request: HttpRequest) -> HttpResponse:
    """Every thread of one end user (``user_ref`` of a tenant); a form until asked."""
    if not model_admin.can_export(request):
        raise PermissionDenied(permission_needed(EXPORT_PERMISSION))
    form = UserExportForm(request.GET or None)
    if form.is_valid():
        export = export_begin(
            tenant=form.cleaned_data["tenant"],
            actor=Actor.staff(request.user),
            user_ref=form.cleaned_data["user_ref"],
            fmt=form.cleaned_data["format"],
            user=request.user,
        )
        return export.response()
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.model._meta,
        "title": "Export the history of an end user",
        "form": form,
        "has_view_permission": True,
    }
    return TemplateResponse(request, "admin/threads/thread/export_user.html", context)
