"""Staff admin page for one summary: the memo beside the original messages it covers.

The checkable facts (``compaction.evals``) are highlighted in both: in the originals, facts the
memo kept and facts it lost; in the memo, facts it kept and facts no original supports. The
classification is the summary's stored scores (computed when the memo was written; the lists
in them are capped, so on a long range only some facts are classified); the originals are shown
a page at a time. Recall is shown as gauges, red with a warning when one is below
``CONVMEM_MEMO_LOW_RECALL`` (and only then), and facts are named in words ("Amount: EUR
615.09"). A stale memo links to its replacement. Regenerating queues the memo writer (never
runs it inline); marking stale goes through compaction's invalidation service.
"""

from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.admin import ModelAdmin
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from auditlog.events import Actor, thread_view_record
from compaction import services
from compaction.fact_labels import fact_label
from compaction.fact_spans import fact_spans
from compaction.models import Summary
from compaction.services import CARRIED_SCORER
from convmem.admin_permissions import permission_needed
from threads.models import Message

ORIGINALS_PAGE = 20
ACT_PERMISSION = "compaction.change_summary"
DEFAULT_LOW_RECALL = 0.2
_CLASS_WORDS = {
    "found": "kept by the memo",
    "missing": "missing from the memo",
    "unsupported": "in the memo, in no original",
}


def highlighted(text: str, classes: dict[str, str]) -> SafeString:
    """``text`` escaped, with each checkable fact wrapped in ``<mark>`` of its class.

    ``classes`` maps a fact ("kind:value") to "found", "missing" or "unsupported"; facts it
    does not name stay plain. Every piece of ``text`` goes through ``format_html``.
    """
    parts: list[str | SafeString] = []
    position = 0
    for span in fact_spans(text):
        kind = classes.get(str(span.fact))
        if kind is None:
            continue
        parts.append(text[position : span.start])
        parts.append(
            format_html(
                '<mark class="cm-fact cm-fact-{}" data-fact="{}" title="{} \u2014 {}">{}</mark>',
                kind,
                span.fact,
                fact_label(str(span.fact)),
                _CLASS_WORDS.get(kind, kind),
                text[span.start : span.end],
            )
        )
        position = span.end
    parts.append(text[position:])
    return format_html_join("", "{}", ((part,) for part in parts))


@dataclass(frozen=True)
class FactClasses:
    """The stored classification; the counts are the full sizes (the lists may be capped)."""

    found: list[str]
    missing: list[str]
    unsupported: list[str]
    found_count: int
    missing_count: int
    unsupported_count: int

    @property
    def missing_capped(self) -> bool:
        return self.missing_count > len(self.missing)

    def labelled(self, facts: list[str]) -> list[tuple[str, str]]:
        """(fact, words for it) pairs, for badges."""
        return [(fact, fact_label(fact)) for fact in facts]

    @property
    def missing_labelled(self) -> list[tuple[str, str]]:
        return self.labelled(self.missing)

    @property
    def unsupported_labelled(self) -> list[tuple[str, str]]:
        return self.labelled(self.unsupported)

    def for_originals(self) -> dict[str, str]:
        return {**{f: "found" for f in self.found}, **{f: "missing" for f in self.missing}}

    def for_memo(self, memo: str) -> dict[str, str]:
        memo_facts = {str(span.fact) for span in fact_spans(memo)}
        return {f: "unsupported" if f in self.unsupported else "found" for f in memo_facts}


def _covered_messages(summary: Summary, ids: list[str]) -> list[Message]:
    """The covered messages named by ``ids`` (public ids), in range order. One query."""
    found = Message.objects.filter(thread_id=summary.thread_id).in_bulk(ids, field_name="public_id")
    return [found[i] for i in ids if i in found]


def _fact_classes(summary: Summary) -> FactClasses:
    """The classification the memo writer stored with the scores (computed over everything
    the memo was written from, not just the page of originals on screen)."""
    scores = summary.scores or {}
    found, missing = scores.get("found", []), scores.get("missing", [])
    unsupported = scores.get("unsupported", [])
    return FactClasses(
        found=found,
        missing=missing,
        unsupported=unsupported,
        found_count=scores.get("found_count", len(found)),
        missing_count=scores.get("missing_count", len(missing)),
        unsupported_count=scores.get("unsupported_count", len(unsupported)),
    )


@dataclass(frozen=True)
class RecallGauge:
    """One recall figure of the stored scores, for a ``<meter>``."""

    key: str
    label: str
    value: float
    detail: str

    @property
    def percent(self) -> int:
        return round(self.value * 100)


def recall_gauges(scores: dict[str, Any] | None) -> list[RecallGauge]:
    """The recall gauges of a memo's stored scores, the one warned about first.

    Key-fact scores (``score_memo_over_range``) give two: the key facts mentioned last (open
    matters come up again, so these matter most) and all key facts -- of what the memo carries
    forward (the memo it extends and its segment: ``services.summary_score``), or, for memos
    scored before that, of the whole range (most of which a memo of a long range drops on
    purpose). The writer's own scores give one.
    """
    if not scores or "fact_recall" not in scores:
        return []
    if "recent_fact_recall" not in scores:
        return [RecallGauge("recall", "Key facts", scores["fact_recall"], "")]
    found, missing = scores.get("found_count", 0), scores.get("missing_count", 0)
    messages = scores.get("messages", 0)
    if scores.get("scorer") == CARRIED_SCORER:
        carried = "the memo it extends and " if scores.get("carried_from") else ""
        segment = scores.get("segment_messages", messages)
        return [
            RecallGauge(
                "recent",
                "Facts mentioned last",
                scores["recent_fact_recall"],
                "key facts of the last quarter of what it carries forward",
            ),
            RecallGauge(
                "range",
                "All facts carried forward",
                scores["fact_recall"],
                f"{found} of {found + missing} key facts in {carried}{segment} new messages",
            ),
        ]
    return [
        RecallGauge(
            "recent",
            "Facts mentioned last",
            scores["recent_fact_recall"],
            "key facts of the last quarter of the range",
        ),
        RecallGauge(
            "range",
            "All facts of the range",
            scores["fact_recall"],
            f"{found} of {found + missing} key facts in {messages} messages",
        ),
    ]


def low_recall_threshold() -> float:
    return float(getattr(settings, "CONVMEM_MEMO_LOW_RECALL", DEFAULT_LOW_RECALL))


def replacement(summary: Summary) -> Summary | None:
    """The newest memo written after ``summary`` for the same stretch (same last message):
    what a stale or failed memo's page links to."""
    if summary.status in services.LIVE:
        return None
    return (
        Summary.objects.filter(
            thread_id=summary.thread_id, last_id=summary.last_id, pk__gt=summary.pk
        )
        .only("public_id", "status", "created_at")
        .order_by("-pk")
        .first()
    )


def summary_compare_view(
    model_admin: ModelAdmin, request: HttpRequest, summary: Summary
) -> HttpResponse:
    """The memo beside the page ``?page=`` of its original messages, facts highlighted."""
    classes = _fact_classes(summary)
    paginator = Paginator(list(summary.covered_ids), ORIGINALS_PAGE)
    page = paginator.get_page(request.GET.get("page"))
    original_classes = classes.for_originals()
    originals = [
        (message, highlighted(message.content, original_classes) if not message.erased_at else "")
        for message in _covered_messages(summary, list(page.object_list))
    ]
    thread_view_record(
        user=request.user, thread=summary.thread, what=f"summary {summary.public_id}"
    )
    gauges = recall_gauges(summary.scores)
    threshold = low_recall_threshold()
    newer = replacement(summary)
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.model._meta,
        "title": "Memo",
        "summary": summary,
        "memo_html": highlighted(summary.text, classes.for_memo(summary.text)),
        "originals": originals,
        "page": page,
        "scores": summary.scores,
        "classes": classes,
        "gauges": gauges,
        "low_gauges": [gauge for gauge in gauges if gauge.value < threshold],
        "low_recall_threshold": threshold,
        "replacement": newer,
        # A stale memo whose replacement is pending or ready has nothing left to ask for.
        "can_regenerate": summary.status != Summary.Status.PENDING
        and (newer is None or newer.status not in services.LIVE),
        "can_act": request.user.has_perm(ACT_PERMISSION),
        "thread_url": reverse("admin:threads_thread_change", args=[summary.thread.public_id])
        + f"?leaf={summary.last.public_id}",
        "has_view_permission": True,
    }
    return TemplateResponse(request, "admin/compaction/summary/compare.html", context)


def summary_regenerate_view(request: HttpRequest, summary: Summary) -> HttpResponseRedirect:
    """Queue a new memo of the same range (the memo writer's task runs it, never this request).

    A live memo is invalidated first (with a rebuild); a stale or failed one is requested again.
    """
    actor = Actor.staff(request.user)
    with transaction.atomic():
        if summary.status in services.LIVE:
            services.summaries_invalidate_for_messages(
                message_ids=[summary.last_id], actor=actor, rebuild=True
            )
            queued = True
        else:
            queued = services.summary_regenerate(summary=summary, actor=actor) is not None
    if queued:
        messages.success(
            request,
            "A new memo of this range is queued for the memo writer; this page links to it.",
        )
    else:
        messages.warning(request, "A memo of this range is already pending or ready.")
    return _redirect(summary)


def summary_mark_stale_view(request: HttpRequest, summary: Summary) -> HttpResponseRedirect:
    """Invalidate through compaction's service: assembly stops using the memo at once."""
    with transaction.atomic():
        hit = services.summaries_invalidate_for_messages(
            message_ids=[summary.last_id], actor=Actor.staff(request.user), rebuild=False
        )
    messages.success(request, f"Marked stale: {', '.join(s.public_id for s in hit) or 'nothing'}.")
    return _redirect(summary)


def _redirect(summary: Summary) -> HttpResponseRedirect:
    return HttpResponseRedirect(
        reverse("admin:compaction_summary_change", args=[summary.public_id])
    )


class SummaryAdminMixin:
    """For ``SummaryAdmin``: the change page is the compare view; regenerate and mark stale
    are POSTs to ``<id>/regenerate/`` and ``<id>/mark-stale/``."""

    def get_urls(self) -> list[URLPattern]:
        own = [
            path(
                "<str:object_id>/regenerate/",
                self.admin_site.admin_view(self.regenerate_view),
                name="compaction_summary_regenerate",
            ),
            path(
                "<str:object_id>/mark-stale/",
                self.admin_site.admin_view(self.mark_stale_view),
                name="compaction_summary_mark_stale",
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
        return summary_compare_view(self, request, self._summary(request, object_id))

    def regenerate_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        summary = self._summary(request, object_id)
        _require_act(request)
        return summary_regenerate_view(request, summary)

    def mark_stale_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        summary = self._summary(request, object_id)
        _require_act(request)
        return summary_mark_stale_view(request, summary)

    def _summary(self, request: HttpRequest, object_id: str) -> Summary:
        if not self.has_view_permission(request):
            raise PermissionDenied
        lookup = {"pk": object_id} if object_id.isdigit() else {"public_id": object_id}
        summary = (
            Summary.objects.select_related("thread", "first", "last", "base")
            .filter(**lookup)
            .first()
        )
        if summary is None:
            raise Http404("No such summary.")
        return summary


def _require_act(request: HttpRequest) -> None:
    if request.method != "POST":
        raise PermissionDenied("Regenerate and Mark stale are buttons on the memo's page.")
    if not request.user.has_perm(ACT_PERMISSION):
        raise PermissionDenied(permission_needed(ACT_PERMISSION))
