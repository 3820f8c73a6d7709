"""Staff admin page for one assembly record: what the model was given. Its items in order with
what they name now, the budget bar, what the curator decided besides (dropped, elided, the memo
it asked for), and (``?replay=1``) a replay of the record checked against its hash.
"""

from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.contrib.admin import ModelAdmin
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from auditlog.events import thread_view_record
from compaction.models import AssemblyRecord, Summary
from compaction.rendering import memo_text_shown
from compaction.replay import assembly_replay
from compaction.selectors import (
    assembly_blobs,
    assembly_items,
    assembly_plan,
    inputs_losing_the_middle,
)
from threads import admin_display
from threads.models import Message

BAR_SECTIONS = [
    ("system", "system prompt"),
    ("memo", "memo"),
    ("anchor", "task statement"),
    ("recalled", "recalled"),
    ("recent", "recent turns"),
    ("retrieved", "retrieved"),
    ("reserve", "reserve (answer)"),
    ("free", "free"),
]


# Items that name a message: shown in place, or recalled (quoted as an excerpt).
MESSAGE_KINDS = ("message", "recalled")


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
        if key not in ("anchor", "recalled") or used[key]
    ]


@dataclass
class ItemView:
    position: int
    item: dict[str, Any]
    content: str | None
    tokens: int | None
    message: Message | None = None
    summary: Summary | None = None
    turn: admin_display.Turn | None = None
    # A memo's lines the input left out (a turn shown after the memo corrects them).
    left_out: list[str] = field(default_factory=list)


def _item_views(assembly: AssemblyRecord) -> list[ItemView]:
    """The record's items in order with what they name now (three queries whatever the size)."""
    items = assembly_items(assembly)
    message_ids = {i["id"] for i in items if i.get("kind") in MESSAGE_KINDS}
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
    blobs = assembly_blobs(assembly, hashes)
    views = []
    for position, item in enumerate(items, start=1):
        view = ItemView(position=position, item=item, content=None, tokens=item.get("tokens"))
        if item.get("kind") in MESSAGE_KINDS and item["id"] in messages:
            view.message = messages[item["id"]]
            view.content = view.message.content
            view.tokens = view.tokens if view.tokens is not None else view.message.token_count
        elif item.get("kind") == "summary" and item["id"] in summaries:
            view.summary = summaries[item["id"]]
            superseded = item.get("superseded_lines", [])
            view.content = memo_text_shown(view.summary.text, superseded)
            lines = view.summary.text.split("\n")
            view.left_out = [lines[index] for index in superseded if index < len(lines)]
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
    memo_lag: dict[str, Any] | None
    # The memo shown, and how many of the messages it stands for the input also shows verbatim.
    memo: Summary | None = None
    memo_also_verbatim: int = 0

    @property
    def more_dropped(self) -> int:
        return self.dropped_count - len(self.dropped)

    @property
    def memo_only(self) -> int:
        """The memo's messages this input does not also show verbatim: the memo stands in for
        these (some may lie before what the curator read for this input)."""
        return len(self.memo.covered_ids) - self.memo_also_verbatim if self.memo else 0


def _shown_memo(items: list[ItemView]) -> tuple[Summary | None, int]:
    """The memo among the items, and how many of its messages are items too (verbatim)."""
    memo = next((v.summary for v in items if v.summary is not None), None)
    if memo is None:
        return None, 0
    verbatim = {v.item["id"] for v in items if v.item.get("kind") == "message"}
    return memo, len(verbatim.intersection(memo.covered_ids))


def _plan_view(assembly: AssemblyRecord, items: list[ItemView]) -> PlanView | None:
    """Two queries whatever the plan's size; None for records from before plans were kept."""
    plan = assembly_plan(assembly)
    if not plan:
        return None
    memo, also_verbatim = _shown_memo(items)
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
        memo_lag=plan.get("memo_lag"),
        memo=memo,
        memo_also_verbatim=also_verbatim,
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
    items = _item_views(assembly)
    turns = admin_display.turns([v.message for v in items if v.message is not None])
    for view in items:
        if view.message is not None:
            view.turn = turns[view.message.pk]
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.model._meta,
        "title": f"Model input for {assembly.thread.user_ref}",
        "assembly": assembly,
        "items": items,
        "plan": _plan_view(assembly, items),
        "thumbnails": settings.CONVMEM_ADMIN_IMAGE_THUMBNAILS,
        "bar": budget_bar(assembly.tokens_shown()),
        "tokens": assembly.tokens_shown(),
        "budget": assembly.budget_shown(),
        "replay": replay,
        "has_view_permission": True,
    }
    return TemplateResponse(request, "admin/compaction/assemblyrecord/assembly.html", context)


# The changelist's gauge looks at this many of the newest model inputs.
LOST_MIDDLE_INPUTS = 1000


class AssemblyAdminMixin:
    """For ``AssemblyRecordAdmin``: the change page shows the model input and its budget; the
    list, how many recent inputs lost the middle (memos falling behind: see README, queues)."""

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        lost = inputs_losing_the_middle(newest=LOST_MIDDLE_INPUTS)
        return super().changelist_view(  # type: ignore[misc]
            request, {**(extra_context or {}), "lost_middle": lost}
        )

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
            AssemblyRecord.objects.select_related("thread", "leaf", "tenant", "budget_from")
            .filter(**lookup)
            .first()
        )
        if assembly is None:
            raise Http404("No such assembly record.")
        return assembly_view(self, request, assembly)
