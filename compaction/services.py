"""Writes of summaries (memos): requesting one, writing it, invalidating, re-dispatching.

Memos are rolling state over bounded segments (see ``compaction.curator``): a memo extends
its ``base`` memo with the segment ``segment_first`` … ``last`` and stands for ``first`` …
``last``. Lifecycle::

    requested (pending row + task, after commit) → written (ready) | failed (with a backoff)
        written, short of its ``goal`` → the next segment is requested in the same transaction
    ready/pending → stale (a message it derives from changed) → the chain is rebuilt from the
        newest memo still standing, one bounded segment at a time

The pending row is the request **and** the outbox of its task: ``enqueued_at`` says when its
task was last sent, and ``summaries_dispatch_pending`` (a periodic task) sends it again if the
broker lost it or was down. Writing is idempotent and safe concurrently: a writer first claims
the row with a conditional UPDATE (``status = pending`` and no live lease), calls the backend
outside any transaction, and stores the result with another conditional UPDATE that only
succeeds if the row is still pending under its claim — so a duplicate delivery, a second
worker, or an invalidation that happened meanwhile all leave exactly one outcome. The database
backs this up: one live (pending or ready) summary per range, one ready summary per range and
covered content (``Summary.Meta.constraints``).

A writer reads one memo and one segment, fitted to the summarizer's context limit
(``compaction.memo_input``); an empty memo, or one that cannot be brought within its size,
is never stored as ready. A failed memo makes the curator wait before asking again
(``CONVMEM_MEMO_FAILURE_BACKOFF``, doubled with each failure in a row).
"""

import hashlib
import json
import logging
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from functools import partial

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone

from auditlog.events import Actor, audit_event_record
from compaction import selectors
from compaction.backends import BackendError, MemoDraft, SummarizerBackend, get_backend
from compaction.backends.base import ReadsAhead
from compaction.curator import Turn, next_segment
from compaction.evals import (
    score_memo,
    score_memo_over_range,
    scores_stored,
    unsupported_values,
)
from compaction.memo_input import fit_sources, input_budget, memo_sources
from compaction.models import Summary
from compaction.profiles import EffectiveProfile, thread_profile
from compaction.rendering import memo_content
from convmem.celery import app
from convmem.errors import InvalidRequest
from convmem.pricing import exact_cost, profile_prices
from convmem.tokens import count_tokens, get_encoding
from threads import selectors as thread_selectors
from threads import services as thread_services
from threads.models import Message, Thread
from webhooks.services import webhook_event_emit

logger = logging.getLogger(__name__)

WRITE_TASK = "compaction.summary_write"
SCORE_TASK = "compaction.summary_score"
# Scores of a memo against the memo it extends and its own segment (``summary_score``).
CARRIED_SCORER = "carried/1"
MEMO_WRITER = Actor.system("memo-writer")
LIVE = (Summary.Status.PENDING, Summary.Status.READY)
# Messages after a memo's range its writer may read for corrections (``_later_rows``).
MAX_READ_AHEAD = 400
_BATCH = 1000  # ids per IN (...) query: well under SQLite's variable limit


def summary_enqueue(summary_id: int) -> None:
    """Send the write task for a pending summary. Never raises: if the broker is down the row
    stays pending and ``summaries_dispatch_pending`` sends it later."""
    try:
        app.send_task(WRITE_TASK, args=[summary_id])
    except Exception:
        logger.warning(
            "could not enqueue memo task for summary %s; the dispatcher will retry",
            summary_id,
            exc_info=True,
        )


def summary_request(
    *,
    thread: Thread,
    actor: Actor,
    first_id: int,
    last_id: int,
    segment_first_id: int | None = None,
    goal_id: int | None = None,
    base_id: int | None = None,
    chain_depth: int = 0,
    covered_ids: Sequence[str] = (),
    max_tokens: int,
) -> Summary | None:
    """Request the memo standing for ``first_id`` … ``last_id``: insert a pending summary and
    enqueue its write task after commit. Returns None if a live (pending or ready) summary of
    that range already exists (the database refuses a second one, also under concurrency).

    The writer reads ``base_id``'s memo (which stands for ``first_id`` … the message before
    ``segment_first_id``) and the segment ``segment_first_id`` … ``last_id`` (public ids
    ``covered_ids``); without a base, the segment is the whole range. ``goal_id``: where the
    chain should end (the writer requests the next segments up to it).
    """
    now = timezone.now()
    try:
        with transaction.atomic():
            summary = Summary.objects.create(
                thread=thread,
                first_id=first_id,
                segment_first_id=segment_first_id or first_id,
                last_id=last_id,
                goal_id=goal_id if goal_id != last_id else None,
                base_id=base_id,
                chain_depth=chain_depth,
                covered_ids=list(covered_ids),
                max_tokens=max_tokens,
                status=Summary.Status.PENDING,
                enqueued_at=now,
            )
    except IntegrityError:
        return None
    audit_event_record(
        actor=actor,
        action="summary.requested",
        tenant_id=thread.tenant_id,
        thread_public_id=thread.public_id,
        object_ids=[summary.public_id],
        details={"extends_memo": base_id is not None, "chain_depth": chain_depth},
    )
    transaction.on_commit(partial(summary_enqueue, summary.pk))
    return summary


def _lease_seconds() -> int:
    # Longer than the task's hard time limit: a lease only expires once its task is dead.
    return settings.CONVMEM_MEMO_TIME_LIMIT + settings.CONVMEM_MEMO_LEASE_MARGIN_SECONDS


def _claim(summary_id: int) -> int | None:
    """Claim a pending summary for writing; returns the attempt number, or None if it is not
    pending or another writer holds a live lease. A conditional UPDATE picks one winner."""
    now = timezone.now()
    claimed = Summary.objects.filter(
        Q(leased_until__isnull=True) | Q(leased_until__lt=now),
        pk=summary_id,
        status=Summary.Status.PENDING,
    ).update(leased_until=now + timedelta(seconds=_lease_seconds()), attempts=F("attempts") + 1)
    if not claimed:
        return None
    return Summary.objects.values_list("attempts", flat=True).get(pk=summary_id)


@dataclass(frozen=True)
class _Sources:
    """What the backend is given for one memo, and what the memo will cover."""

    previous_memo: str | None
    previous_tokens: int
    base_fingerprint: str
    rows: list[selectors.RangeRow]
    chain_depth: int


class _NotWritable(Exception):
    """The pending summary cannot be written as asked (``str()`` says why, for its error)."""


def _segment(summary: Summary) -> list[selectors.RangeRow]:
    """The rows ``segment_first`` … ``last``, root → leaf; _NotWritable if that is not one
    path of the thread."""
    start = summary.segment_first or summary.first
    count = summary.last.depth - start.depth + 1
    rows = selectors.range_rows(thread=summary.thread, last_id=summary.last_id, count=count)
    if count < 1 or len(rows) != count or rows[0].id != start.pk:
        raise _NotWritable("the range is not one path of the thread")
    return rows


def _later_rows(summary: Summary) -> list[selectors.RangeRow]:
    """The messages of the thread's active path written after the range, root → leaf, erased
    ones left out; none when the active leaf is not below the range (the conversation went on
    on another branch) or more than ``MAX_READ_AHEAD`` messages below it (a chain being
    rebuilt: the newest memo of the chain reads ahead)."""
    leaf = Thread.objects.filter(pk=summary.thread_id).values_list("active_leaf_id", flat=True)
    leaf_id = leaf.first()
    if leaf_id is None or leaf_id == summary.last_id:
        return []
    leaf_depth = Message.objects.filter(pk=leaf_id).values_list("depth", flat=True).first()
    after = (leaf_depth or 0) - summary.last.depth
    if not 1 <= after <= MAX_READ_AHEAD:
        return []
    rows = selectors.range_rows(thread=summary.thread, last_id=leaf_id, count=after)
    if not rows or rows[0].parent_id != summary.last_id:
        return []  # the leaf is on another branch than the range
    return [row for row in rows if row.erased_at is None]


def _read_by_base(summary: Summary, rows: list[selectors.RangeRow]) -> frozenset[str]:
    """The public ids of the segment's messages that the base memo read ahead
    (``Summary.read_ahead_to``): what they correct is let go in it already. Those up to the one
    it read to, when that one is in the segment; all of them when it is below the segment, on
    the same path; none when the base read nothing ahead or the path went another way."""
    base = summary.base
    if base is None or base.read_ahead_to_id is None:
        return frozenset()
    ids = [row.id for row in rows]
    if base.read_ahead_to_id in ids:
        return frozenset(row.public_id for row in rows[: ids.index(base.read_ahead_to_id) + 1])
    depth = Message.objects.filter(pk=base.read_ahead_to_id).values_list("depth", flat=True)
    below = (depth.first() or 0) - summary.last.depth
    if below < 1:
        return frozenset()
    path = selectors.range_rows(
        thread=summary.thread, last_id=base.read_ahead_to_id, count=below + 1, with_content=False
    )
    if not path or path[0].id != summary.last_id:
        return frozenset()
    return frozenset(row.public_id for row in rows)


def _sources(summary: Summary) -> _Sources:
    rows = _segment(summary)
    base = summary.base
    if base is None:
        return _Sources(None, 0, "", rows, 0)
    if base.status != Summary.Status.READY:
        raise _NotWritable(f"the memo it extends ({base.public_id}) is {base.status}")
    if rows[0].parent_id != base.last_id:
        raise _NotWritable(f"the segment does not continue {base.public_id}")
    return _Sources(base.text, base.token_count, base.fingerprint, rows, base.chain_depth + 1)


def _fingerprint(sources: _Sources) -> str:
    """SHA-256 of what the memo was written from: the base memo's fingerprint and the covered
    new messages' ids and contents (erased ones included as erased)."""
    payload = [sources.base_fingerprint, [[row.public_id, row.content] for row in sources.rows]]
    return hashlib.sha256(json.dumps(payload, ensure_ascii=False).encode("utf-8")).hexdigest()


def _fit_lines(text: str, max_tokens: int, encoding: str) -> str:
    """``text`` within ``max_tokens``: whole trailing lines are dropped first (a structured
    memo stays well-formed), then the last line is cut. "" if nothing fits."""
    lines = text.strip().splitlines()
    while lines and count_tokens("\n".join(lines), encoding) > max_tokens:
        if len(lines) > 1:
            lines.pop()
            continue
        codec = get_encoding(encoding)
        lines = [codec.decode(codec.encode(lines[0], disallowed_special=())[:max_tokens])]
        break
    return "\n".join(lines).strip() if max_tokens > 0 else ""


@dataclass(frozen=True)
class _Written:
    """A memo draft made to fit, and what it was written from and with."""

    text: str
    token_count: int
    header_tokens: int
    shown: list[selectors.RangeRow]
    read: list[str]
    draft: MemoDraft
    # The last later message the backend read ahead to (``Summary.read_ahead_to``), if any.
    read_ahead_to: int | None


def summary_write(*, summary_id: int, backend: SummarizerBackend | None = None) -> Summary | None:
    """Write the memo of a pending summary (the memo task's body). Idempotent and concurrency
    safe (see the module docstring); returns the summary if this call wrote it, else None
    (already written, invalidated, claimed by another writer, gone, or failed).

    The base memo and the segment are read (with content) off the hot path and fitted to the
    backend's context limit; erased messages are not shown to the backend. The memo text is
    kept within ``max_tokens`` including its header; ``token_count`` is the rendered memo's
    count. On ``BackendError`` the error is recorded and re-raised: a retryable one leaves
    the row pending and unclaimed for the task's retry, a permanent one fails it. An empty
    memo, a range that is not one path, a base no longer ready or a profile naming an unknown
    encoding fail it. When the memo falls short of its ``goal``, the next segment is
    requested in the same transaction.
    """
    attempt = _claim(summary_id)
    if attempt is None:
        return None
    summary = Summary.objects.select_related(
        "thread__profile", "first", "segment_first", "last", "base", "goal"
    ).get(pk=summary_id)
    try:
        profile = thread_profile(summary.thread)
        sources = _sources(summary)
    except InvalidRequest as error:
        summary_fail(summary_id=summary_id, error=str(error.detail))
        return None
    except _NotWritable as error:
        summary_fail(summary_id=summary_id, error=str(error))
        return None
    backend = backend or get_backend()
    try:
        written = _draft(summary, sources, profile, backend)
    except BackendError as error:
        _record_failure(summary_id, attempt, error)
        raise
    except _NotWritable as error:
        summary_fail(summary_id=summary_id, error=str(error))
        return None
    return _store(summary, attempt, sources, written, profile)


def _draft(
    summary: Summary, sources: _Sources, profile: EffectiveProfile, backend: SummarizerBackend
) -> _Written:
    """Call the backend with the base memo and the fitted segment; the memo made to fit."""
    header = memo_content(text="")
    header_tokens = count_tokens(header, profile.encoding)
    text_budget = summary.max_tokens - header_tokens
    if text_budget < 1:
        raise _NotWritable("the memo's size leaves no room after its header")
    shown = [row for row in sources.rows if row.erased_at is None]
    sources_text = memo_sources(
        shown, elide_over=profile.tool_result_elide_tokens, encoding=profile.encoding
    )
    budget = input_budget(
        context_tokens=backend.context_tokens,
        max_tokens=text_budget,
        previous_memo_tokens=sources.previous_tokens,
    )
    given = fit_sources(sources_text, budget=budget, encoding=profile.encoding)
    reads_ahead = isinstance(backend, ReadsAhead)
    # A backend that reads ahead is told what its base memo's writer read ahead already.
    options = {"read_ahead": _read_by_base(summary, sources.rows)} if reads_ahead else {}
    draft = backend.summarize(
        previous_memo=sources.previous_memo, messages=given, max_tokens=text_budget, **options
    )
    read_ahead_to = None
    if reads_ahead:
        later_rows = _later_rows(summary)
        later = memo_sources(
            later_rows, elide_over=profile.tool_result_elide_tokens, encoding=profile.encoding
        )
        if later:
            draft = replace(draft, text=backend.drop_superseded(memo=draft.text, later=later))
            read_ahead_to = later_rows[-1].id
    text = _fit_lines(draft.text, text_budget, profile.encoding)
    if not text:
        raise _NotWritable(f"the {draft.backend} summarizer wrote an empty memo")
    return _Written(
        read_ahead_to=read_ahead_to,
        text=text,
        token_count=count_tokens(header + text, profile.encoding),
        header_tokens=header_tokens,
        shown=shown,
        read=[
            *([sources.previous_memo] if sources.previous_memo else []),
            *(m.content for m in given),
        ],
        draft=draft,
    )


def _store(
    summary: Summary,
    attempt: int,
    sources: _Sources,
    written: _Written,
    profile: EffectiveProfile,
) -> Summary | None:
    """Store the memo if the row is still pending under this claim, and request the next
    segment toward the goal in the same transaction. The writer's own scores follow once the
    memo is stored (``_writer_scores_store``): contexts can show the memo meanwhile."""
    thread = summary.thread
    draft = written.draft
    checked = _checked_values(written)
    scores = scores_stored(checked)
    fields = {
        "status": Summary.Status.READY,
        "text": summary.stored_for_update("text", written.text),
        "token_count": written.token_count,
        "backend": draft.backend,
        "model": draft.model[:128],
        "prompt_version": draft.prompt_version[:64],
        "prompt_tokens": draft.prompt_tokens,
        "completion_tokens": draft.completion_tokens,
        "cost": exact_cost(
            prices=profile_prices(thread.profile),
            prompt_tokens=draft.prompt_tokens,
            completion_tokens=draft.completion_tokens,
        ),
        "fingerprint": _fingerprint(sources),
        "scores": summary.stored_for_update("scores", scores),
        "covered_ids": [row.public_id for row in sources.rows],
        "read_ahead_to_id": written.read_ahead_to,
        "chain_depth": sources.chain_depth,
        "leased_until": None,
        "scores_due": timezone.now(),
        "error": "",
        "updated_at": timezone.now(),
    }
    with transaction.atomic():
        stored = Summary.objects.filter(
            pk=summary.pk, status=Summary.Status.PENDING, attempts=attempt
        ).update(**fields)
        if not stored:
            return None
        webhook_event_emit(
            tenant_id=thread.tenant_id,
            event_type="memo.ready",
            data={
                "summary_id": summary.public_id,
                "thread_id": thread.public_id,
                "first_id": summary.first.public_id,
                "last_id": summary.last.public_id,
                "status": Summary.Status.READY,
            },
        )
        audit_event_record(
            actor=MEMO_WRITER,
            action="summary.written",
            tenant_id=thread.tenant_id,
            thread_public_id=thread.public_id,
            object_ids=[summary.public_id],
            details={
                "first_id": summary.first.public_id,
                "last_id": summary.last.public_id,
                "covered": len(sources.rows),
                "chain_depth": sources.chain_depth,
                "backend": draft.backend,
                "model": fields["model"],
                "attempt": attempt,
                "prompt_tokens": draft.prompt_tokens,
                "completion_tokens": draft.completion_tokens,
                "unsupported_values_count": scores["unsupported_values_count"],
            },
        )
        summary.refresh_from_db()
        if summary.goal_id is not None:
            _continue_chain(summary, profile)
    _lead_record(summary)
    _writer_scores_store(summary, sources, written, checked)
    return summary


def _writer_scores_store(
    summary: Summary, sources: _Sources, written: _Written, checked: dict[str, object]
) -> None:
    """Score the stored memo against what its writer was given (the base memo, if any, and the
    new messages; the originals' sizes are their stored counts) and keep that with the
    writer's ``checked`` values. After the memo is stored, not before: scoring is a fifth of a
    write, and the memo is what a fast thread is waiting for (docs/memo-pace.md). These are
    the scores of a memo the scoring task skips (a newer memo extends it); the task is sent
    once they are stored, so it never finds the memo without them. A writer that dies in
    between leaves the memo's ``scores_due`` set: the dispatcher sends the task
    (``summaries_dispatch_unscored``)."""
    originals = ([sources.previous_memo] if sources.previous_memo else []) + [
        row.content for row in written.shown
    ]
    scores = score_memo(
        originals=originals,
        memo=written.text,
        original_tokens=sum(row.token_count for row in written.shown) + sources.previous_tokens,
        memo_tokens=max(0, written.token_count - written.header_tokens),
    ).as_dict()
    scores = scores_stored({**scores, **checked})
    stored = Summary.objects.filter(
        pk=summary.pk, status=Summary.Status.READY, fingerprint=summary.fingerprint
    ).update(scores=summary.stored_for_update("scores", scores), scores_due=None)
    if stored:
        summary.scores = scores
        transaction.on_commit(partial(summary_score_enqueue, summary.pk))


def _lead_record(summary: Summary) -> None:
    """Keep on the thread how many messages came while this memo was being written (from its
    request to now), so the curator asks for the next one that much earlier. After the memo's
    transaction, as a statement of its own: it never holds the memo's row lock while it waits
    for the thread's row (an append holds it for a moment, an erasure for longer)."""
    most = settings.CONVMEM_MEMO_LEAD_MAX
    messages = (
        thread_selectors.messages_since(
            thread_id=summary.thread_id, since=summary.created_at, most=most
        )
        if most > 0
        else 0
    )
    thread_services.thread_memo_lead_record(thread_id=summary.thread_id, messages=messages)


def _checked_values(written: _Written) -> dict[str, object]:
    """The memo's values (and those the backend says it kept) that none of what it read holds:
    kept in the stored scores, rescoring included, and shown on the memo page."""
    values = unsupported_values(written.text, written.read, written.draft.values)
    return {"unsupported_values": values, "unsupported_values_count": len(values)}


def summary_score_enqueue(summary_id: int) -> None:
    """Send the scoring task of a written memo. Never raises: a lost score leaves the scores
    the writer stored (against what it read)."""
    try:
        app.send_task(SCORE_TASK, args=[summary_id])
    except Exception:
        logger.warning("could not enqueue scoring of summary %s", summary_id, exc_info=True)


def summary_score(*, summary_id: int) -> Summary | None:
    """Score a ready memo against the facts it carries forward and store it as its ``scores``
    (``compaction.evals.score_memo_over_range``, key facts, with the ones mentioned last
    apart): the memo it extends, which stands for everything before its segment, then its
    segment's messages, in order. Returns the memo if its scores were stored.

    **Incremental and bounded**: one memo and one segment (at most the profile's segment
    tokens), however long the conversation -- each memo answers for what it was handed, and
    its base answered for the rest. (Scoring the whole range each time read up to 2,000
    messages per memo, 1.2-1.5 s from turn 1,000 on, 25-30x the memo write.) ``messages``
    counts the texts scored (the base memo is one), ``range_messages`` the range it stands
    for.

    **Sampled under load**: a memo that a newer ready memo already extends is not scored
    (None). Scoring runs on the ``bulk`` queue, apart from the memo writers, so it never
    delays a memo; when that queue lags, the memos it holds are mostly superseded by the time
    it reaches them, and only the newest memo of each chain is scored: the work drops with
    the backlog, with no clock to tune and no broker to probe. When the queue keeps up, every
    memo is scored. A skipped memo keeps the scores its writer stored. Erased messages are
    left out. Idempotent; a memo rewritten or invalidated meanwhile is left alone.
    """
    summary = (
        Summary.objects.select_related("thread__profile", "first", "segment_first", "last", "base")
        .filter(pk=summary_id, status=Summary.Status.READY)
        .first()
    )
    if summary is None:
        return None
    if Summary.objects.filter(base_id=summary.pk, status=Summary.Status.READY).exists():
        return None
    try:
        rows = _segment(summary)
    except _NotWritable:
        return None
    shown = [row for row in rows if row.erased_at is None]
    base = summary.base if summary.base and summary.base.status == Summary.Status.READY else None
    carried = [base.text] if base else []
    encoding = thread_profile(summary.thread).encoding
    header = memo_content(text="")
    scores = score_memo_over_range(
        summary.text,
        [*carried, *(row.content for row in shown)],
        original_tokens=sum(row.token_count for row in shown) + (base.token_count if base else 0),
        memo_tokens=max(0, summary.token_count - count_tokens(header, encoding)),
    )
    scores |= {
        "scorer": CARRIED_SCORER,
        "carried_from": base.public_id if base else None,
        "segment_messages": len(shown),
        "range_messages": summary.last.depth - summary.first.depth + 1,
    }
    for key in ("unsupported_values", "unsupported_values_count"):  # the writer's own check
        if key in (summary.scores or {}):
            scores[key] = summary.scores[key]
    stored = Summary.objects.filter(
        pk=summary.pk, status=Summary.Status.READY, fingerprint=summary.fingerprint
    ).update(
        scores=summary.stored_for_update("scores", scores_stored(scores)),
        scores_due=None,
        updated_at=timezone.now(),
    )
    return summary if stored else None


def _continue_chain(summary: Summary, profile: EffectiveProfile) -> Summary | None:
    """Request the next segment after ``summary`` toward its goal (sized by the curator's own
    ``next_segment``), or None when the goal is no longer on this path."""
    goal, last = summary.goal, summary.last
    count = goal.depth - last.depth
    rows = selectors.range_rows(
        thread=summary.thread, last_id=goal.pk, count=count, with_content=False
    )
    if count < 1 or len(rows) != count or rows[0].parent_id != last.pk:
        return None
    turns = [Turn(row.id, row.role, row.token_count) for row in rows]
    end = next_segment(turns, profile.policy)
    return summary_request(
        thread=summary.thread,
        actor=MEMO_WRITER,
        first_id=summary.first_id,
        segment_first_id=rows[0].id,
        last_id=rows[end].id,
        goal_id=goal.pk,
        base_id=summary.pk,
        chain_depth=summary.chain_depth + 1,
        covered_ids=[row.public_id for row in rows[: end + 1]],
        max_tokens=summary.max_tokens,
    )


def _record_failure(summary_id: int, attempt: int, error: BackendError) -> None:
    if not error.retryable:
        summary_fail(summary_id=summary_id, error=str(error))
        return
    now = timezone.now()
    # Released for the task's retry; enqueued_at = now keeps the dispatcher from re-sending it
    # before CONVMEM_MEMO_REDISPATCH_SECONDS.
    Summary.objects.filter(pk=summary_id, status=Summary.Status.PENDING, attempts=attempt).update(
        leased_until=None,
        enqueued_at=now,
        error=str(error)[:500],
        updated_at=now,
    )


def _backoff_seconds(streak: int) -> int:
    base = settings.CONVMEM_MEMO_FAILURE_BACKOFF
    return min(settings.CONVMEM_MEMO_FAILURE_BACKOFF_MAX, base * 2 ** max(0, streak - 1))


def summary_fail(*, summary_id: int, error: str) -> bool:
    """Give up on a pending summary (permanent backend error, retries exhausted, empty memo,
    bad range). The curator does not ask for another memo of the thread before ``retry_at``:
    ``CONVMEM_MEMO_FAILURE_BACKOFF`` seconds, doubled for each failure in a row (a written
    memo ends the row), up to ``CONVMEM_MEMO_FAILURE_BACKOFF_MAX``. Returns whether it failed
    it (False if it was no longer pending).
    """
    summary = Summary.objects.select_related("thread").filter(pk=summary_id).first()
    if summary is None:
        return False
    previous = selectors.latest_failed_memo(thread=summary.thread)
    streak = previous.failure_streak + 1 if previous else 1
    now = timezone.now()
    retry_at = now + timedelta(seconds=_backoff_seconds(streak))
    with transaction.atomic():
        failed = Summary.objects.filter(pk=summary_id, status=Summary.Status.PENDING).update(
            status=Summary.Status.FAILED,
            error=error[:500],
            leased_until=None,
            failure_streak=streak,
            retry_at=retry_at,
            updated_at=now,
        )
        if failed:
            audit_event_record(
                actor=MEMO_WRITER,
                action="summary.failed",
                tenant_id=summary.thread.tenant_id,
                thread_public_id=summary.thread.public_id,
                object_ids=[summary.public_id],
                details={
                    "attempts": summary.attempts,
                    "failures_in_a_row": streak,
                    "retry_at": retry_at.isoformat(),
                },
            )
    return bool(failed)


def summaries_dispatch_pending(*, now: datetime | None = None, limit: int = 500) -> int:
    """Send the write task again for pending summaries whose task looks lost: enqueued more
    than ``CONVMEM_MEMO_REDISPATCH_SECONDS`` ago and not held by a live lease (a running
    writer, or a retry not yet due). Returns how many were sent. Safe to run concurrently:
    a conditional UPDATE of ``enqueued_at`` picks who sends each one.
    """
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=settings.CONVMEM_MEMO_REDISPATCH_SECONDS)
    due = list(
        Summary.objects.filter(
            Q(enqueued_at__isnull=True) | Q(enqueued_at__lt=cutoff),
            Q(leased_until__isnull=True) | Q(leased_until__lt=now),
            status=Summary.Status.PENDING,
        )
        .order_by("id")
        .values_list("pk", "enqueued_at")[:limit]
    )
    sent = 0
    for pk, enqueued_at in due:
        if Summary.objects.filter(
            pk=pk, status=Summary.Status.PENDING, enqueued_at=enqueued_at
        ).update(enqueued_at=now):
            summary_enqueue(pk)
            sent += 1
    return sent


def summaries_dispatch_unscored(*, now: datetime | None = None, limit: int = 500) -> int:
    """Send the scoring task for ready memos whose writer stored the memo but never its scores
    (it died while scoring: the task is sent only after them), more than
    ``CONVMEM_MEMO_REDISPATCH_SECONDS`` ago. Returns how many were sent. A conditional UPDATE
    picks who sends each one, and clears the mark: a task that is lost too, or that skips the
    memo (a newer memo extends it), leaves the writer's checked values, as before."""
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=settings.CONVMEM_MEMO_REDISPATCH_SECONDS)
    due = list(
        Summary.objects.filter(scores_due__lt=cutoff, status=Summary.Status.READY)
        .order_by("scores_due")
        .values_list("pk", "scores_due")[:limit]
    )
    sent = 0
    for pk, scores_due in due:
        if Summary.objects.filter(pk=pk, scores_due=scores_due).update(scores_due=None):
            summary_score_enqueue(pk)
            sent += 1
    return sent


def _covers(summary: Summary, messages: dict[str, int]) -> bool:
    """Whether ``summary``'s segment covers one of ``messages`` (public id → depth)."""
    if summary.covered_ids:
        return not set(summary.covered_ids).isdisjoint(messages)
    # A request recorded without its coverage: walk its segment (ids only).
    start = summary.segment_first or summary.first
    rows = selectors.range_rows(
        thread=summary.thread,
        last_id=summary.last_id,
        count=summary.last.depth - start.depth + 1,
        with_content=False,
    )
    return any(row.public_id in messages for row in rows)


def _messages_by_thread(message_ids: Iterable[int]) -> dict[int, dict[str, int]]:
    by_thread: dict[int, dict[str, int]] = defaultdict(dict)
    ids = list(message_ids)
    for start in range(0, len(ids), _BATCH):
        rows = Message.objects.filter(pk__in=ids[start : start + _BATCH]).values_list(
            "thread_id", "public_id", "depth"
        )
        for thread_id, public_id, depth in rows:
            by_thread[thread_id][public_id] = depth
    return by_thread


def _extensions(summaries: list[Summary]) -> list[Summary]:
    """Every memo extending one of ``summaries``, transitively (one query per generation)."""
    seen = {summary.pk for summary in summaries}
    frontier = list(seen)
    found: list[Summary] = []
    while frontier:
        children = list(
            Summary.objects.filter(base_id__in=frontier)
            .exclude(pk__in=seen)
            .select_related("thread", "first", "segment_first", "last")
        )
        found += children
        frontier = [child.pk for child in children]
        seen.update(frontier)
    return found


def summaries_derived_from(*, message_ids: Iterable[int]) -> list[Summary]:
    """Every summary, whatever its status, whose text derives from one of ``message_ids``
    (message primary keys): those whose segment covers one, and every memo extending them.
    Erasure erases their texts; invalidation stops using the live ones."""
    derived: list[Summary] = []
    for thread_id, messages in _messages_by_thread(message_ids).items():
        depths = messages.values()
        candidates = Summary.objects.filter(
            thread_id=thread_id,
            segment_first__depth__lte=max(depths),
            last__depth__gte=min(depths),
        ).select_related("thread", "first", "segment_first", "last")
        hit = [summary for summary in candidates if _covers(summary, messages)]
        derived += hit + _extensions(hit)
    return derived


def summary_regenerate(*, summary: Summary, actor: Actor) -> Summary | None:
    """Request a stale or failed memo's range again (staff, from the admin), bounded by its own
    segment as any rebuild is. None if a live memo of that range exists already."""
    return _rebuild_chain(summary, [summary], actor)


def _rebuild_chain(summary: Summary, invalidated: list[Summary], actor: Actor) -> Summary | None:
    """Request ``summary``'s range again, from its base if that still stands, aiming at the
    end of the farthest memo invalidated with it (the writer continues segment by segment)."""
    base = summary.base if summary.base and summary.base.status == Summary.Status.READY else None
    goal = max(invalidated, key=lambda s: s.last.depth).last_id
    segment_first = summary.segment_first_id or summary.first_id
    return summary_request(
        thread=summary.thread,
        actor=actor,
        first_id=summary.first_id if base else segment_first,
        segment_first_id=segment_first,
        last_id=summary.last_id,
        goal_id=goal,
        base_id=base.pk if base else None,
        chain_depth=base.chain_depth + 1 if base else 0,
        covered_ids=summary.covered_ids,
        max_tokens=summary.max_tokens,
    )


def summaries_invalidate_for_messages(
    *, message_ids: Iterable[int], actor: Actor, rebuild: bool = True
) -> list[Summary]:
    """Mark stale every pending or ready summary derived from any of ``message_ids``
    (``summaries_derived_from``), so context assembly stops using them, and request the
    chain again from the first memo that went stale (from its base when that still
    stands), aiming where the chain reached. Writes ``summary.invalidated`` audit events
    (ids only).

    Call inside the transaction that changed the messages (redaction, erasure): the rebuilds
    are enqueued after it commits and read the changed content. A writer already running on
    an invalidated pending summary finds it stale when it stores its result and drops it.
    Returns the invalidated summaries.
    """
    live = [s for s in summaries_derived_from(message_ids=message_ids) if s.status in LIVE]
    by_thread: dict[int, list[Summary]] = defaultdict(list)
    for summary in live:
        by_thread[summary.thread_id].append(summary)
    for hit in by_thread.values():
        with transaction.atomic():
            Summary.objects.filter(pk__in=[s.pk for s in hit], status__in=LIVE).update(
                status=Summary.Status.STALE, leased_until=None, updated_at=timezone.now()
            )
            thread = hit[0].thread
            audit_event_record(
                actor=actor,
                action="summary.invalidated",
                tenant_id=thread.tenant_id,
                thread_public_id=thread.public_id,
                object_ids=[s.public_id for s in hit],
                details={"rebuild": rebuild},
            )
            if rebuild:
                stale = {s.pk for s in hit}
                for summary in hit:
                    if summary.base_id not in stale:
                        _rebuild_chain(summary, hit, actor)
    return live
