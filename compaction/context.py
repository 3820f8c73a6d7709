"""Context assembly: the model input for one turn, within a token budget, recorded as ids.

``context_assemble`` is the service behind ``POST /api/v1/threads/{id}/context``:

1. budget: the thread's profile (or the built-in defaults), with the request's window/reserve;
   the system prompt and retrieved items are tokenised (counts cached per process by hash);
2. read: the path leaf-up, ids/roles/stored counts only, as far as the budget can use and on
   to the newest ready memo (``selectors.context_stretch``), the ready and pending summaries
   ending on that stretch (one query), and the conversation's first turn if the read stopped
   short of it (the task statement, found without walking the path in the common case);
3. ``curator.curate`` lays out the plan (pure); only the chosen messages' contents are loaded;
4. ``rendering.render`` builds the messages from the record items — the same function a replay
   calls — and one transaction stores the ``AssemblyRecord`` (items, tokens, budget, hash,
   snapshot), the texts that are not messages or summaries (``ContentBlob``), the audit event,
   and, if the plan asks for a memo and none is pending on this path, the pending summary
   whose task is enqueued after commit.

Nothing here waits on a model: a memo that is not ready yet is reported as ``pending``.
Every refusal (``InvalidRequest``, 400) happens before the first write.
"""

from dataclasses import asdict, dataclass
from typing import Any

from django.conf import settings
from django.db import transaction

from audit.events import Actor, audit_event_record
from audit.models import AssemblyRecord, ContentBlob
from compaction import selectors
from compaction.curator import Budget, BudgetTooSmall, Memo, Plan, Turn, curate
from compaction.models import Summary
from compaction.profiles import EffectiveProfile, request_budget, thread_profile
from compaction.rendering import canonical_json, render, retrieved_content, sha256_hex
from compaction.services import summary_request
from compaction.tokens import count_tokens, message_tokens, system_section_tokens
from convmem.errors import InvalidRequest
from threads.models import Message, Role, Thread

# Token counts of system prompts and retrieved items, by (encoding, sha256): clients resend
# the same system prompt every turn, and it is tokenised once per process. Bounded: cleared
# when full (ints only; the texts are not kept).
_COUNT_CACHE: dict[tuple[str, str], int] = {}
_COUNT_CACHE_SIZE = 4096


def _count_cached(text: str, digest: str, encoding: str) -> int:
    key = (encoding, digest)
    count = _COUNT_CACHE.get(key)
    if count is None:
        if len(_COUNT_CACHE) >= _COUNT_CACHE_SIZE:
            _COUNT_CACHE.clear()
        count = _COUNT_CACHE[key] = count_tokens(text, encoding)
    return count


@dataclass(frozen=True)
class RetrievedItem:
    """Material the caller splices in (a search hit, a document): shown, not stored as history."""

    ref: str
    content: str


@dataclass(frozen=True)
class Assembly:
    """The assembled input and the response body's parts (see the context endpoint)."""

    record: AssemblyRecord
    messages: list[dict[str, str]]
    sections: dict[str, Any]
    tokens: dict[str, int]
    memo_status: str
    pending_memo: dict[str, Any] | None


@dataclass(frozen=True)
class _Piece:
    """A system prompt or retrieved item: its rendered content, hash and count."""

    ref: str | None
    text: str
    digest: str
    tokens: int


def _leaf_id(thread: Thread, leaf_public_id: str | None) -> int:
    if leaf_public_id is None:
        return thread.active_leaf_id
    found = (
        Message.objects.filter(thread=thread, public_id=leaf_public_id)
        .exclude(role=Role.ROOT)
        .values_list("id", flat=True)
        .first()
    )
    if found is None:
        raise InvalidRequest(
            f"leaf_id {leaf_public_id!r} is not a message of this thread.", code="unknown_message"
        )
    return found


def _head(
    thread: Thread, top: selectors.StretchRow, summaries: list[selectors.StretchSummary]
) -> selectors.StretchRow:
    """The conversation's first turn on this path (the root's child that is an ancestor of
    ``top``). Usually the root has one child; with an edited first message, a memo on the
    stretch that starts at depth 1 names it; failing both, one ids-only walk finds it."""
    children = {
        row[0]: selectors.StretchRow(*row, depth=1)
        for row in Message.objects.filter(parent_id=thread.root_id)
        .order_by("id")
        .values_list("id", "public_id", "role", "token_count")
    }
    if len(children) == 1:
        return next(iter(children.values()))
    named = {s.first_id for s in summaries} & children.keys()
    if len(named) == 1:
        return children[named.pop()]
    head_id = selectors.ancestor_at_depth(thread=thread, start_id=top.id, depth=1)
    return children[head_id]


def _pieces(
    system: str | None, retrieved: list[RetrievedItem], encoding: str
) -> tuple[_Piece | None, list[_Piece]]:
    prompt = None
    if system:
        digest = sha256_hex(system)
        prompt = _Piece(None, system, digest, _count_cached(system, digest, encoding))
    items = []
    for item in retrieved:
        digest = sha256_hex(item.content)
        text = retrieved_content(ref=item.ref, content=item.content)
        items.append(
            _Piece(item.ref, item.content, digest, _count_cached(text, sha256_hex(text), encoding))
        )
    return prompt, items


def _check_retrieved(retrieved: list[RetrievedItem]) -> None:
    limit = settings.CONVMEM_MAX_RETRIEVED_ITEMS
    if len(retrieved) > limit:
        raise InvalidRequest(
            f"{len(retrieved)} retrieved items; at most {limit} are accepted.",
            code="too_many_retrieved",
        )
    for item in retrieved:
        if not item.ref or not item.content.strip():
            raise InvalidRequest(
                "every retrieved item needs a non-empty ref and content.", code="invalid"
            )


def _budget_error(error: BudgetTooSmall, *, code: str, lead: str) -> InvalidRequest:
    refusal = InvalidRequest(f"{lead}: {error}.", code=code)
    refusal.extra = {
        "arithmetic": {
            "window": error.window,
            "reserve": error.reserve,
            "system": error.system,
            "retrieved": error.retrieved,
            "current_turn": error.current_turn,
            "needed": error.needed,
            "shortfall": error.shortfall,
        }
    }
    return refusal


def _plan(
    rows: list[selectors.StretchRow],
    head: selectors.StretchRow | None,
    ready: list[selectors.StretchSummary],
    budget: Budget,
    profile: EffectiveProfile,
) -> Plan:
    try:
        return curate(
            [Turn(row.id, row.role, row.token_count) for row in rows],
            [Memo(s.id, s.first_id, s.last_id, s.token_count, s.chain_depth) for s in ready],
            budget,
            profile.policy,
            head=Turn(head.id, head.role, head.token_count) if head else None,
        )
    except BudgetTooSmall as error:
        if budget.retrieved:
            raise _budget_error(
                error, code="retrieved_over_budget", lead="The retrieved items do not fit"
            ) from None
        raise _budget_error(
            error, code="budget_too_small", lead="The budget cannot fit the current turn"
        ) from None


def _store_blobs(tenant_id: int, pieces: list[_Piece]) -> None:
    """Keep the texts a replay needs, once per tenant and hash; an erased blob sent again is
    stored again (it is new data from the caller)."""
    texts = {piece.digest: piece.text for piece in pieces}
    if not texts:
        return
    existing = dict(
        ContentBlob.objects.filter(tenant_id=tenant_id, sha256__in=list(texts)).values_list(
            "sha256", "erased_at"
        )
    )
    missing = [
        ContentBlob(tenant_id=tenant_id, sha256=digest, text=text)
        for digest, text in texts.items()
        if digest not in existing
    ]
    if missing:
        # ignore_conflicts: a concurrent request may store the same text first; either is right.
        ContentBlob.objects.bulk_create(missing, ignore_conflicts=True)
    for digest, erased_at in existing.items():
        if erased_at is not None:
            ContentBlob.objects.filter(tenant_id=tenant_id, sha256=digest).update(
                text=texts[digest], erased_at=None
            )


def _items(
    plan: Plan,
    by_id: dict[int, selectors.StretchRow],
    prompt: _Piece | None,
    memo: selectors.StretchSummary | None,
    retrieved: list[_Piece],
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The record items in render order (see ``compaction.rendering``) and their texts, keyed
    by ``item_text_key``. Loads the contents of the messages shown, and only those."""
    shown = [*plan.anchor, *plan.recent]
    contents = dict(Message.objects.filter(pk__in=shown).values_list("pk", "content"))
    items: list[dict[str, Any]] = []
    texts: dict[str, str] = {}

    def message(message_id: int, **extra: Any) -> None:
        row = by_id[message_id]
        items.append(
            {"kind": "message", "id": row.public_id, "role": row.role, "tokens": row.token_count}
            | extra
        )
        texts[row.public_id] = contents[message_id]

    if prompt:
        items.append({"kind": "system", "hash": prompt.digest, "tokens": prompt.tokens})
        texts[prompt.digest] = prompt.text
    if memo:
        items.append(
            {
                "kind": "summary",
                "id": memo.public_id,
                "first_id": memo.first_public_id,
                "last_id": memo.last_public_id,
                "tokens": memo.token_count,
            }
        )
        texts[memo.public_id] = memo.text
    for message_id in plan.anchor:
        message(message_id, anchor=True)
    for piece in retrieved:
        items.append(
            {"kind": "retrieved", "ref": piece.ref, "hash": piece.digest, "tokens": piece.tokens}
        )
        texts[piece.digest] = piece.text
    for message_id in plan.recent:
        message(message_id)
    return items, texts


def _memo_section(summary: selectors.StretchSummary, status: str) -> dict[str, Any]:
    return {
        "summary_id": summary.public_id,
        "first_id": summary.first_public_id,
        "last_id": summary.last_public_id,
        "status": status,
        "chain_depth": summary.chain_depth,
    }


def context_assemble(
    *,
    thread: Thread,
    actor: Actor,
    window_tokens: int | None = None,
    reserve_tokens: int | None = None,
    system: str | None = None,
    leaf_public_id: str | None = None,
    retrieved: list[RetrievedItem] | None = None,
) -> Assembly:
    """Assemble, record and return the model input ending at ``leaf_public_id`` (default: the
    active leaf); see the module docstring. ``thread`` must come with its ``profile`` selected.

    Raises ``InvalidRequest`` (400) with nothing written for: a bad budget, an unknown encoding
    on the profile, too many retrieved items or items that do not fit, a leaf of another
    thread, an empty thread, and a budget that cannot hold the current turn (with the
    arithmetic in the error's ``arithmetic``).
    """
    retrieved = retrieved or []
    profile = thread_profile(thread)
    window, reserve = request_budget(
        profile, window_tokens=window_tokens, reserve_tokens=reserve_tokens
    )
    _check_retrieved(retrieved)
    leaf_id = _leaf_id(thread, leaf_public_id)
    prompt, items = _pieces(system, retrieved, profile.encoding)
    budget = Budget(
        window=window,
        reserve=reserve,
        system=system_section_tokens(prompt.tokens if prompt else None),
        retrieved=sum(message_tokens(piece.tokens) for piece in items),
    )
    available = max(budget.available, 0)
    stretch = selectors.context_stretch(
        thread=thread,
        leaf_id=leaf_id,
        budget=available,
        lookahead=available * settings.CONVMEM_CONTEXT_LOOKAHEAD_WINDOWS,
        per_message_overhead=profile.policy.message_overhead,
        max_rows=settings.CONVMEM_CONTEXT_MAX_ROWS,
    )
    rows = [row for row in stretch if row.role != Role.ROOT]
    if not rows:
        raise InvalidRequest(
            "The thread has no messages yet: append the user's turn first.", code="empty_thread"
        )
    summaries = selectors.summaries_ending_on(thread=thread, message_ids=[row.id for row in rows])
    ready = [s for s in summaries if s.status == Summary.Status.READY]
    pending = [s for s in summaries if s.status == Summary.Status.PENDING]
    reached_start = len(rows) < len(stretch) or rows[0].depth == 1
    head = None if reached_start else _head(thread, rows[0], summaries)
    plan = _plan(rows, head, ready, budget, profile)

    by_id = {row.id: row for row in rows}
    if head is not None:
        by_id[head.id] = head
    memo = next((s for s in ready if plan.memo and s.id == plan.memo.id), None)
    record_items, texts = _items(plan, by_id, prompt, memo, items)
    messages = render(record_items, texts)
    rendered = canonical_json(messages)
    tokens = {**asdict(plan.tokens), "free": window - reserve - plan.tokens.total}

    with transaction.atomic():
        _store_blobs(thread.tenant_id, ([prompt] if prompt else []) + items)
        record = AssemblyRecord.objects.create(
            tenant_id=thread.tenant_id,
            thread=thread,
            leaf_id=leaf_id,
            assembler_version=plan.version,
            items=record_items,
            tokens=tokens,
            budget={
                "window": window,
                "reserve": reserve,
                "profile": profile.name,
                "encoding": profile.encoding,
                "policy": asdict(profile.policy),
            },
            rendered_hash=sha256_hex(rendered),
            rendered_text=rendered,
        )
        audit_event_record(
            actor=actor,
            action="assembly.recorded",
            tenant_id=thread.tenant_id,
            thread_public_id=thread.public_id,
            object_ids=[record.public_id],
            details={
                "leaf_id": by_id[leaf_id].public_id,
                "assembler_version": plan.version,
                "summary_id": memo.public_id if memo else None,
                "recent": len(plan.recent),
                "dropped": len(plan.dropped),
                "retrieved": len(items),
                "total_tokens": plan.tokens.total,
            },
        )
        pending_memo = pending[-1] if pending else None
        if plan.request is not None and pending_memo is None:
            pending_memo = _request_memo(thread, actor, plan, memo, by_id, profile)

    memo_status = "pending" if pending_memo else ("ready" if memo else "none")
    pending_section = _memo_section(pending_memo, "pending") if pending_memo else None
    sections = {
        "system": {"hash": prompt.digest, "tokens": prompt.tokens} if prompt else None,
        "memo": _memo_section(memo, "ready") if memo else pending_section,
        "anchor": [by_id[i].public_id for i in plan.anchor],
        "retrieved": [piece.ref for piece in items],
        "recent": [by_id[i].public_id for i in plan.recent],
        "dropped": [by_id[i].public_id for i in plan.dropped],
    }
    return Assembly(
        record=record,
        messages=messages,
        sections=sections,
        tokens=tokens,
        memo_status=memo_status,
        pending_memo=pending_section,
    )


def _memo_size(plan: Plan, profile: EffectiveProfile) -> int:
    """The memo's size limit: the profile's, but never more than the part of the budget a memo
    frees — ``(1 - high_water)`` of what memo and turns share — so that it always fits next to
    the turns kept after it (a memo too big to show would be asked for again and again)."""
    tokens = plan.tokens
    shared = tokens.window - tokens.reserve - tokens.system - tokens.retrieved
    share = int((1 - profile.policy.high_water) * shared) - profile.policy.message_overhead
    return max(1, min(profile.policy.memo_max_tokens, share))


def _request_memo(
    thread: Thread,
    actor: Actor,
    plan: Plan,
    memo: selectors.StretchSummary | None,
    by_id: dict[int, selectors.StretchRow],
    profile: EffectiveProfile,
) -> selectors.StretchSummary | None:
    """Insert the pending summary the plan asks for; None if a live one of that range exists.

    A rebuild from the originals (the used memo's chain is at the profile's limit) covers the
    whole range that memo covered, not just the part of it this read saw.
    """
    request = plan.request
    covered: list[str] = []
    if memo is not None:
        # Extending the used memo, or rebuilding its whole range from the originals.
        first_id, first_public_id = memo.first_id, memo.first_public_id
    else:
        first_id, first_public_id = request.first_id, by_id[request.first_id].public_id
        covered = [by_id[i].public_id for i in request.new_ids]
    summary = summary_request(
        thread=thread,
        actor=actor,
        first_id=first_id,
        last_id=request.last_id,
        base_id=request.base_memo_id,
        chain_depth=memo.chain_depth + 1 if memo and request.base_memo_id else 0,
        covered_ids=covered,
        max_tokens=_memo_size(plan, profile),
    )
    if summary is None:
        # A concurrent request inserted the same one first (or a ready one of this range
        # exists but could not be shown): report the pending one, if that is what it is.
        summary = Summary.objects.filter(
            thread=thread, first_id=first_id, last_id=request.last_id, status=Summary.Status.PENDING
        ).first()
        if summary is None:
            return None
    return selectors.StretchSummary(
        id=summary.pk,
        public_id=summary.public_id,
        status=summary.status,
        first_id=first_id,
        last_id=request.last_id,
        first_public_id=first_public_id,
        last_public_id=by_id[request.last_id].public_id,
        text="",
        token_count=0,
        chain_depth=summary.chain_depth,
    )
