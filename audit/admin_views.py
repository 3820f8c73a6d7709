"""Staff admin pages of the audit app: what the model was given (an assembly record, its budget
bar and a replay with the hash check) and the review of a deletion request.

The deletion review shows the subject's footprint and any legal hold before anything happens;
approve, reject (with a reason) and execute are separate POSTs, each checked and audited by the
services in ``audit.deletion`` (this module only turns their refusals into messages).
"""

from dataclasses import dataclass
from typing import Any

from django.contrib import messages
from django.contrib.admin import ModelAdmin
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, re_path, reverse
from django.utils import timezone

from audit import admin_display, deletion
from audit.models import AssemblyRecord, AuditEvent, ContentBlob, DeletionRequest
from audit.replay import assembly_replay
from audit.selectors import deletion_request_threads
from audit.services import thread_view_record
from compaction.models import Summary
from threads.models import Message

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
    threads = list(
        deletion_request_threads(request)
        .order_by("pk")
        .values_list("public_id", "user_ref", "created_at")[: SUBJECT_THREADS_SHOWN + 1]
    )
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
        "title": f"Deletion request {request.public_id}",
        "request_obj": request,
        "footprint": footprint,
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
            deletion.deletion_request_approve(request=request, user=user)
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


BAR_SECTIONS = [
    ("system", "system prompt"),
    ("memo", "memo"),
    ("anchor", "task statement"),
    ("recent", "recent turns"),
    ("retrieved", "retrieved"),
    ("reserve", "reserve (answer)"),
    ("free", "free"),
]


@dataclass(frozen=True)
class BarSegment:
    key: str
    label: str
    tokens: int
    percent: float


def budget_bar(tokens: dict[str, int]) -> list[BarSegment]:
    """Segments of the window: each section's tokens as a share of ``window``.

    ``free`` is what the input left unused: ``window - total - reserve`` (never negative).
    """
    window = max(int(tokens.get("window", 0)), 1)
    used = {key: int(tokens.get(key, 0)) for key, _ in BAR_SECTIONS if key != "free"}
    used["free"] = max(window - int(tokens.get("total", 0)) - used["reserve"], 0)
    return [
        BarSegment(
            key=key, label=label, tokens=used[key], percent=round(100 * used[key] / window, 2)
        )
        for key, label in BAR_SECTIONS
        if key != "anchor" or used[key]
    ]


@dataclass
class ItemView:
    position: int
    item: dict[str, Any]
    content: str | None
    tokens: int | None
    message: Message | None = None
    summary: Summary | None = None


def _item_views(assembly: AssemblyRecord) -> list[ItemView]:
    """The record's items in order with what they name now (three queries whatever the size)."""
    items = assembly.items
    message_ids = {i["id"] for i in items if i.get("kind") == "message"}
    summary_ids = {i["id"] for i in items if i.get("kind") == "summary"}
    hashes = {i["hash"] for i in items if i.get("hash")}
    messages = Message.objects.filter(thread_id=assembly.thread_id).in_bulk(
        message_ids, field_name="public_id"
    )
    summaries = (
        Summary.objects.filter(thread_id=assembly.thread_id)
        .select_related("first", "last")
        .in_bulk(summary_ids, field_name="public_id")
    )
    # Unique per tenant (``blob_tenant_sha256``), so a dict by hash is exact.
    blobs = {
        blob.sha256: blob
        for blob in ContentBlob.objects.filter(tenant_id=assembly.tenant_id, sha256__in=hashes)
    }
    views = []
    for position, item in enumerate(items, start=1):
        view = ItemView(position=position, item=item, content=None, tokens=item.get("tokens"))
        if item.get("kind") == "message" and item["id"] in messages:
            view.message = messages[item["id"]]
            view.content = view.message.content
            view.tokens = view.tokens if view.tokens is not None else view.message.token_count
        elif item.get("kind") == "summary" and item["id"] in summaries:
            view.summary = summaries[item["id"]]
            view.content = view.summary.text
            view.tokens = view.tokens if view.tokens is not None else view.summary.token_count
        elif item.get("hash") in blobs:
            view.content = blobs[item["hash"]].text
        views.append(view)
    return views


DROPPED_SHOWN = 50


@dataclass(frozen=True)
class PlanView:
    """What the curator decided besides the items shown, readable: the memo's range, the
    messages dropped and elided (the first ``DROPPED_SHOWN`` of each, with their roles), the
    memo it asked for and how that memo stands now."""

    memo_status: str
    covered: dict[str, Any] | None
    dropped: list[Message]
    dropped_count: int
    elided: list[Message]
    requested: dict[str, Any] | None
    requested_now: Summary | None

    @property
    def more_dropped(self) -> int:
        return self.dropped_count - len(self.dropped)


def _plan_view(assembly: AssemblyRecord) -> PlanView | None:
    """Two queries whatever the plan's size; None for records from before plans were kept."""
    plan = assembly.plan or {}
    if not plan:
        return None
    dropped_ids = plan.get("dropped", [])
    shown_ids = [*dropped_ids[:DROPPED_SHOWN], *plan.get("elided", [])[:DROPPED_SHOWN]]
    messages = Message.objects.filter(thread_id=assembly.thread_id).in_bulk(
        shown_ids, field_name="public_id"
    )
    requested = plan.get("memo_requested")
    return PlanView(
        memo_status=plan.get("memo_status", ""),
        covered=plan.get("covered"),
        dropped=[messages[i] for i in dropped_ids[:DROPPED_SHOWN] if i in messages],
        dropped_count=len(dropped_ids),
        elided=[messages[i] for i in plan.get("elided", [])[:DROPPED_SHOWN] if i in messages],
        requested=requested,
        requested_now=(
            Summary.objects.filter(public_id=requested["summary_id"]).first() if requested else None
        ),
    )


def assembly_view(
    model_admin: ModelAdmin, request: HttpRequest, assembly: AssemblyRecord
) -> HttpResponse:
    """The recorded model input: items in order, the budget bar, and (``?replay=1``) a replay
    of the record checked against its hash."""
    replay = assembly_replay(assembly=assembly) if request.GET.get("replay") else None
    thread_view_record(
        user=request.user, thread=assembly.thread, what=f"assembly {assembly.public_id}"
    )
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.model._meta,
        "title": f"Model input {assembly.public_id}",
        "assembly": assembly,
        "items": _item_views(assembly),
        "plan": _plan_view(assembly),
        "bar": budget_bar(assembly.tokens or {}),
        "tokens": assembly.tokens or {},
        "budget": assembly.budget or {},
        "replay": replay,
        "has_view_permission": True,
    }
    return TemplateResponse(request, "admin/audit/assemblyrecord/assembly.html", context)


class AssemblyAdminMixin:
    """For ``AssemblyRecordAdmin``: the change page shows the model input and its budget."""

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        lookup = {"pk": object_id} if object_id.isdigit() else {"public_id": object_id}
        assembly = (
            AssemblyRecord.objects.select_related("thread", "leaf", "tenant")
            .filter(**lookup)
            .first()
        )
        if assembly is None:
            raise Http404("No such assembly record.")
        return assembly_view(self, request, assembly)
