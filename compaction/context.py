"""Context assembly: the model input for one turn, within a token budget, recorded as ids.

``context_assemble`` is the service behind ``POST /api/v1/threads/{id}/context``:

1. budget: the thread's profile (or the built-in defaults), with the request's window/reserve;
   the system prompt and retrieved items are tokenised (counts cached per process by hash);
   a leaf whose tool calls still wait for results is refused (the input would be invalid);
2. read, one query (``selectors.context_read``): the path leaf-up, ids/roles/stored counts,
   as far as the budget can use (and at least the current turn's whole tool group) and on to
   the newest ready memo; the contents of the rows within the budget; the ready and pending
   summaries ending on that stretch; the root's children (the conversation's first turn, the
   task statement, found without walking the path in the common case); which of the request's
   texts are stored already;
3. ``curator.curate`` lays out the plan (pure); a shown message the read brought no content
   for (beyond the budget's rows, when bulky tool results are elided) is read then; the memo
   shown leaves out the lines that user turns shown after it correct (``_superseded_lines``);
4. ``rendering.render`` builds OpenAI Chat Completions messages from the record items — the
   same function a replay calls — and, if the plan asks for a memo, none is pending on this
   path and the thread's last memo failure is not still backing off, the pending summary is
   inserted (its task enqueued after commit);
5. write, one statement on PostgreSQL (``convmem.db.rows_insert``): the texts that are not
   messages or summaries and are not stored yet (``ContentBlob``), the rendered pieces if the
   profile keeps inputs (``compaction.snapshots``), the ``AssemblyRecord`` (items, the
   curator's plan, tokens, budget, hash) and its audit event.

Steps 2-5 are one transaction holding the thread row ``FOR KEY SHARE``: an erasure of the
thread (``FOR UPDATE``) waits for it or it for the erasure, so a kept input showing content
that is being erased is either stored before the erasure purges it or never read.

Nothing here waits on a model: a memo that is not ready yet is reported as ``pending``, one
that failed as ``failed`` (with when the curator asks again).
Every refusal (``InvalidRequest``, 400) happens before the first write.
"""

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from auditlog.events import Actor, audit_event_build
from compaction import item_runs, record_form, selectors, snapshots
from compaction.backends.base import MemoSource
from compaction.backends.embedded import lines_superseded
from compaction.backends.salience import gives_correction
from compaction.backends.text_caches import text_cache
from compaction.curator import Budget, BudgetTooSmall, Memo, Plan, Prefix, Turn, curate
from compaction.models import (
    AssemblyRecord,
    ContentBlob,
    Summary,
    blob_key_id,
    budget_shortened,
)
from compaction.profiles import EffectiveProfile, request_budget, thread_profile
from compaction.recall import Recalled, recall_candidates
from compaction.rendering import (
    FORMAT,
    MEMO_HEADER_VERSION,
    UNCALLED_TOOL_HEADER,
    MessagePayload,
    canonical_json,
    elided_tool_result,
    memo_content,
    memo_text_shown,
    render,
    retrieved_content,
    sha256_hex,
)
from compaction.services import summary_request
from convmem.db import Insert, rows_insert
from convmem.errors import InvalidRequest
from convmem.tokens import count_tokens, message_tokens, system_section_tokens
from threads.content import MAX_TOOL_CALLS
from threads.models import Message, Role, Thread
from threads.selectors import thread_system_text, tool_group_ending_at, visible_message
from threads.services import (
    thread_hold_against_erasure,
    thread_hold_checked,
    thread_hold_sql,
)

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
class Ahead:
    """A statement sent ahead of the context read, in its round trip (``selectors.context_read``),
    and the check of its first row, made before anything read is used: ``checked`` raises to
    refuse the input (nothing is written)."""

    sql: str
    params: Sequence[Any]
    checked: Callable[[Sequence[Any] | None], None]


# A statement of the caller's that needs the assembly record, written in the record's round
# trip: given the record (its key not known yet; its public id is), (SQL, parameters).
AfterRecord = Callable[[AssemblyRecord], tuple[str, Sequence[Any]]]


@dataclass(frozen=True)
class Assembly:
    """The assembled input and the response body's parts (see the context endpoint)."""

    record: AssemblyRecord
    messages: list[dict[str, Any]]
    prefix: dict[str, Any]
    sections: dict[str, Any]
    tokens: dict[str, int]
    memo_status: str
    pending_memo: dict[str, Any] | None
    memo_error: dict[str, Any] | None
    memo_lag: dict[str, Any]
    # The record's items with their runs expanded, in render order (ids, no content): what a
    # replay reads the texts of (``compaction.replay``).
    items: list[dict[str, Any]] = field(default_factory=list)
    # The first row of ``context_assemble``'s ``after_record`` statement, if it returned one.
    after_record_row: tuple[Any, ...] | None = None


@dataclass(frozen=True)
class _Piece:
    """A system prompt or retrieved item: its rendered content, hash and count."""

    ref: str | None
    text: str
    digest: str
    tokens: int


@dataclass(frozen=True)
class _Read:
    """What one context read saw: the stretch's rows (and the head, if the read stopped short of
    the first turn), with the curator's view of each."""

    rows: dict[int, selectors.StretchRow]
    turns: list[Turn]
    head: Turn | None
    uncalled: frozenset[int]
    payloads: dict[int, MessagePayload]


def _leaf(thread: Thread, leaf_public_id: str | None) -> Message:
    if leaf_public_id is None:
        return thread.active_leaf
    found = visible_message(
        thread,
        leaf_public_id,
        # The public id too: sealed tool calls open under it (no deferred read).
        queryset=Message.objects.only("id", "public_id", "role", "tool_calls"),
    )
    if found is None:
        raise InvalidRequest(
            f"leaf_id {leaf_public_id!r} is not a message of this thread.", code="unknown_message"
        )
    return found


def _current_group_size(leaf: Message) -> int:
    """How many rows the current turn's unit holds (its tool call and results, else 1);
    refuses a leaf whose tool calls are not all answered yet."""
    group = tool_group_ending_at(message=leaf, max_calls=MAX_TOOL_CALLS)
    if group is None:
        return 1
    if group.missing:
        raise InvalidRequest(
            f"the assistant's tool calls {', '.join(group.missing)} have no result yet; the "
            "model input would be invalid until a tool message answers each.",
            code="tool_results_pending",
        )
    return 1 + len(group.answered)


def _head(
    thread: Thread,
    top: selectors.StretchRow,
    summaries: list[selectors.StretchSummary],
    root_children: list[selectors.StretchRow],
) -> selectors.StretchRow:
    """The conversation's first turn on this path (the root's child that is an ancestor of
    ``top``). Usually the root has one child; with an edited first message, a memo on the
    stretch that starts at depth 1 names it; failing both, one ids-only walk finds it."""
    children = {row.id: row for row in root_children}
    if len(children) == 1:
        return root_children[0]
    named = {s.first_id for s in summaries} & children.keys()
    if len(named) == 1:
        return children[named.pop()]
    head_id = selectors.ancestor_at_depth(thread=thread, start_id=top.id, depth=1)
    return children[head_id]


def _turn(row: selectors.StretchRow, profile: EffectiveProfile, uncalled: set[int]) -> Turn:
    """The curator's view of a row: a tool result stored without a call renders as a system
    message (see ``compaction.rendering``); a bulky tool result may be elided."""
    if row.role == Role.TOOL and not row.tool_call_id:
        uncalled.add(row.id)
        header = count_tokens(UNCALLED_TOOL_HEADER, profile.encoding)
        return Turn(row.id, Role.SYSTEM, row.token_count + header)
    elided = None
    limit = profile.tool_result_elide_tokens
    if row.role == Role.TOOL and limit and row.token_count > limit:
        marker = elided_tool_result(message_id=row.public_id, tokens=row.token_count)
        elided = count_tokens(marker, profile.encoding)
    return Turn(row.id, row.role, row.token_count, elided)


def _read(
    rows: list[selectors.StretchRow],
    head: selectors.StretchRow | None,
    profile: EffectiveProfile,
    payloads: dict[int, MessagePayload],
) -> _Read:
    uncalled: set[int] = set()
    turns = [_turn(row, profile, uncalled) for row in rows]
    head_turn = _turn(head, profile, uncalled) if head else None
    by_id = {row.id: row for row in rows}
    if head is not None:
        by_id[head.id] = head
    return _Read(by_id, turns, head_turn, frozenset(uncalled), payloads)


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


def _previous_prefix(
    recorded: tuple[int | None, int] | None, read: _Read, ready: list[selectors.StretchSummary]
) -> Prefix | None:
    """Where the thread's previous model input's stable prefix ended (its memo and first
    verbatim turn by key, as the context read found them recorded); None if it had none or
    they are not on this path."""
    if recorded is None:
        return None
    memo_id, first = recorded
    if first not in read.rows:
        return None
    if memo_id is not None and all(m.id != memo_id for m in ready):
        return None
    return Prefix(memo_id=memo_id, first_id=first)


def _plan(
    read: _Read,
    ready: list[selectors.StretchSummary],
    budget: Budget,
    profile: EffectiveProfile,
    recalled: list[Recalled],
    previous: Prefix | None,
    lead_messages: int,
) -> Plan:
    try:
        return curate(
            read.turns,
            [Memo(s.id, s.first_id, s.last_id, s.token_count) for s in ready],
            budget,
            profile.policy,
            head=read.head,
            recalled=[candidate.turn for candidate in recalled],
            previous=previous,
            lead_messages=lead_messages,
        )
    except BudgetTooSmall as error:
        if budget.retrieved:
            raise _budget_error(
                error, code="retrieved_over_budget", lead="The retrieved items do not fit"
            ) from None
        raise _budget_error(
            error, code="budget_too_small", lead="The budget cannot fit the current turn"
        ) from None


# A blob already stored stays; one erased since is stored again (it is new data from the caller).
_BLOB_CONFLICT = (
    f"(tenant_id, key_id, sha256) DO UPDATE SET text = EXCLUDED.text, erased_at = NULL "
    f"WHERE {ContentBlob._meta.db_table}.erased_at IS NOT NULL"
)


def _blobs(tenant_id: int, key_id: str, pieces: list[_Piece], stored: frozenset[str]) -> Insert:
    """The texts a replay needs (system prompt, retrieved items) that are not stored yet, once
    per tenant, key (sealed under it; ``blob_key_id``) and hash."""
    texts = {piece.digest: piece.text for piece in pieces if piece.digest not in stored}
    return Insert(
        [
            ContentBlob(tenant_id=tenant_id, key_id=key_id, sha256=d, text=t)
            for d, t in texts.items()
        ],
        on_conflict=_BLOB_CONFLICT,
    )


def _recall(
    thread: Thread,
    rows: list[selectors.StretchRow],
    reached_start: bool,
    budget: Budget,
    profile: EffectiveProfile,
    payloads: dict[int, MessagePayload],
) -> list[Recalled]:
    """Candidates for the recalled section (``compaction.recall``), looked up only when recall
    is on and the history may not fit verbatim (otherwise the curator shows it all)."""
    policy = profile.policy
    if policy.recall_max_tokens == 0:
        return []
    cost = sum(row.token_count + policy.message_overhead for row in rows)
    if reached_start and cost <= budget.available:
        return []
    return recall_candidates(
        thread=thread,
        rows=rows,
        max_tokens=policy.recall_max_tokens,
        encoding=profile.encoding,
        count=_count_cached,
        texts={pk: payload.content for pk, payload in payloads.items() if payload.content},
    )


def _payloads(plan: Plan, known: dict[int, MessagePayload]) -> dict[int, MessagePayload]:
    """The shown messages' payloads, by row id: those the read brought, and the rest (shown
    beyond the budget's rows when bulky tool results are elided) read here. An elided tool
    result's content is not needed: only its call id is."""
    elided = set(plan.elided)
    payloads = {i: known[i] for i in (*plan.anchor, *plan.recent) if i in known}
    missing = [i for i in (*plan.anchor, *plan.recent) if i not in payloads]
    if missing:  # most turns miss nothing (an empty filter still costs its compilation)
        # Model instances, not values: a loaded message opens its sealed columns.
        for message in Message.objects.filter(pk__in=missing).only(
            "pk", "public_id", "content", "content_parts", "tool_calls", "tool_call_id"
        ):
            payloads[message.pk] = MessagePayload(
                message.content, message.content_parts, message.tool_calls, message.tool_call_id
            )
    for pk in elided:
        payloads[pk] = MessagePayload("", tool_call_id=payloads[pk].tool_call_id)
    return payloads


def _items(
    plan: Plan,
    read: _Read,
    prompt: _Piece | None,
    memo: selectors.StretchSummary | None,
    retrieved: list[_Piece],
    recalled: list[Recalled],
    encoding: str,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The record items in render order (see ``compaction.rendering``) and their payloads,
    keyed by ``item_payload_key``. Loads the contents of the messages shown, and only those."""
    payloads_by_pk = _payloads(plan, read.payloads)
    turns = {turn.id: turn for turn in read.turns}
    if read.head is not None:
        turns[read.head.id] = read.head
    elided = set(plan.elided)
    items: list[dict[str, Any]] = []
    payloads: dict[str, Any] = {}

    def message(message_id: int, **extra: Any) -> None:
        row = read.rows[message_id]
        item = {"kind": "message", "id": row.public_id, "role": row.role, "tokens": row.token_count}
        if message_id in elided:
            item |= {"tokens": turns[message_id].elided_tokens, "elided": True}
            item["original_tokens"] = row.token_count
        if message_id in read.uncalled:
            item |= {"tokens": turns[message_id].tokens, "uncalled": True}
        items.append(item | extra)
        payloads[row.public_id] = payloads_by_pk[message_id]

    if prompt:
        items.append({"kind": "system", "hash": prompt.digest, "tokens": prompt.tokens})
        payloads[prompt.digest] = prompt.text
    if memo:
        item = {
            "kind": "summary",
            "id": memo.public_id,
            "first_id": memo.first_public_id,
            "last_id": memo.last_public_id,
            "tokens": memo.token_count,
            "header": MEMO_HEADER_VERSION,
        }
        superseded = _superseded_lines(memo, plan, read, payloads_by_pk)
        if superseded:
            tokens = _shown_memo_tokens(memo.text, superseded, encoding)
            item |= {"tokens": tokens, "superseded_lines": list(superseded)}
        items.append(item)
        payloads[memo.public_id] = memo.text
    for message_id in plan.anchor:
        message(message_id, anchor=True)
    current = set(plan.current)
    for message_id in plan.recent:
        if message_id not in current:
            message(message_id)
    # What changes every turn goes after the stable history, before the current turn: the
    # recalled excerpts, then the retrieved items.
    candidates = {candidate.turn.id: candidate for candidate in recalled}
    for message_id in plan.recalled:
        candidate = candidates[message_id]
        items.append(
            {
                "kind": "recalled",
                "id": candidate.public_id,
                "role": candidate.role,
                "tokens": candidate.turn.tokens,
            }
        )
        payloads[candidate.public_id] = candidate.payload
    for piece in retrieved:
        items.append(
            {"kind": "retrieved", "ref": piece.ref, "hash": piece.digest, "tokens": piece.tokens}
        )
        payloads[piece.digest] = piece.text
    for message_id in plan.current:
        message(message_id)
    return items, payloads


def _superseded_lines(
    memo: selectors.StretchSummary,
    plan: Plan,
    read: _Read,
    payloads: dict[int, MessagePayload],
) -> tuple[int, ...]:
    """The memo's lines that a user turn shown after it corrects ("my number is actually …").

    A memo is written ahead of need and shown for a whole block (the stable prefix), so a
    correction said during the block would stand beside the memo's stale line until the next
    memo: the input would hold both values. The writer's rules
    (``compaction.backends.embedded.lines_superseded``) name the lines that go, and the record
    keeps their indices, so a replay leaves out the same lines. Only turns with a correction's
    words are read (``gives_correction``, remembered per text): most turns have none, and then
    the memo is shown whole, as before. The prefix changes once, at the correcting turn."""
    later = [
        MemoSource(id=read.rows[pk].public_id, role="user", content=payloads[pk].content)
        for pk in plan.recent
        if read.rows[pk].role == Role.USER and gives_correction(payloads[pk].content or "")
    ]
    if not later or not memo.text:
        return ()
    return lines_superseded(memo=memo.text, later=later)


# The memo and the lines it leaves out stay the same turn after turn within a block.
@text_cache(1024)
def _shown_memo_tokens(text: str, superseded: tuple[int, ...], encoding: str) -> int:
    return count_tokens(memo_content(text=memo_text_shown(text, superseded)), encoding)


def _stable_prefix(
    plan: Plan,
    read: _Read,
    memo: selectors.StretchSummary | None,
    items: list[dict[str, Any]],
    messages: list[dict[str, Any]],
    changing: int,
) -> dict[str, Any]:
    """The input's stable prefix: the leading messages before what changes every turn
    (``changing``: the recalled excerpts and retrieved items) and the current turn — system
    prompt, memo or task statement, history.
    Between block boundaries the next input starts with it (``compaction.curator``), so a
    provider's prompt cache can serve it. Its memo and first verbatim turn are recorded for the
    next input's curator."""
    count = len(items) - changing - len(plan.current)
    stable = plan.recent[: len(plan.recent) - len(plan.current)]
    return {
        "messages": count,
        "tokens": sum(message_tokens(item["tokens"]) for item in items[:count]),
        "hash": sha256_hex(canonical_json(messages[:count])),
        # By key (the record pins the thread); readers show them as public ids
        # (``compaction.selectors.plans_shown``).
        "memo": memo.id if memo else None,
        "first": (stable or plan.recent)[0],
    }


def _stored_items(
    items: list[dict[str, Any]],
    read: _Read,
    memo: selectors.StretchSummary | None,
    recalled: list[Recalled],
    *,
    keep: bool,
) -> list[dict[str, Any]]:
    """The items as the record stores them: the verbatim runs as path ranges, the memo and the
    recalled messages by primary key (``compaction.item_runs``), or every item whole when the
    input is kept (erasure matches kept inputs by the ids they show)."""
    if keep:
        return items
    shown = {row.public_id: item_runs.Shown(pk, row.depth) for pk, row in read.rows.items()}
    memo_pk = {memo.public_id: memo.id} if memo else {}
    recalled_pk = {candidate.public_id: candidate.turn.id for candidate in recalled}
    return item_runs.items_compact(items, shown.__getitem__, memo_pk, recalled_pk)


def _budget_fields(
    stored: dict[str, Any], version: str, previous: selectors.PreviousBudget | None
) -> dict[str, Any]:
    """The record's ``budget`` and ``budget_from``: its window and reserve only, naming the
    record that holds the rest, when the rest is that of the thread's previous input (same
    assembler version, profile, encoding and policy); whole otherwise."""
    if previous is not None and previous.assembler_version == version:
        short = budget_shortened(stored, previous.budget)
        if short is not None:
            return {"budget": short, "budget_from_id": previous.record_id}
    return {"budget": stored, "budget_from_id": None}


def _tokens_shown(
    plan: Plan,
    items: list[dict[str, Any]],
    memo: selectors.StretchSummary | None,
    room: int,
) -> dict[str, int]:
    """The plan's token counts, with the memo's as shown (less its superseded lines: the
    curator laid the input out with the whole memo, so it only gets smaller)."""
    tokens = asdict(plan.tokens)
    shown = next((item for item in items if item["kind"] == "summary"), None)
    if memo and shown and "superseded_lines" in shown:
        saved = memo.token_count - shown["tokens"]
        tokens |= {"memo": tokens["memo"] - saved, "total": tokens["total"] - saved}
    return {**tokens, "free": room - tokens["total"]}


def _memo_section(summary: selectors.StretchSummary, status: str) -> dict[str, Any]:
    return {
        "summary_id": summary.public_id,
        "first_id": summary.first_public_id,
        "last_id": summary.last_public_id,
        "status": status,
        "chain_depth": summary.chain_depth,
    }


def _shown_memo_section(
    memo: selectors.StretchSummary, items: list[dict[str, Any]]
) -> dict[str, Any]:
    section = _memo_section(memo, "ready")
    item = next(item for item in items if item["kind"] == "summary")
    if "superseded_lines" in item:
        section["superseded_lines"] = item["superseded_lines"]
    return section


def _backing_off(thread: Thread) -> selectors.FailedMemo | None:
    """The thread's last memo failure, if the curator should not ask again yet."""
    failed = selectors.latest_failed_memo(thread=thread)
    if failed is None or failed.retry_at is None or failed.retry_at <= timezone.now():
        return None
    return failed


def _memo_lag(plan: Plan, read: _Read) -> dict[str, Any]:
    """What the input lost from the middle (``Plan.lost``): messages newer than the memo shown
    that neither it nor the recent turns show, because the memo that would stand for them is
    late or could not fit. Zero turns when nothing was lost."""
    lost = [read.rows[i] for i in plan.lost]
    return {
        "turns": len(lost),
        "tokens": sum(row.token_count for row in lost),
        "first_id": lost[0].public_id if lost else None,
        "last_id": lost[-1].public_id if lost else None,
    }


def _plan_record(
    plan: Plan,
    read: _Read,
    memo_status: str,
    requested: selectors.StretchSummary | None,
) -> dict[str, Any]:
    """The curator's decisions beside the shown items, for the record (ids, no content)."""
    covered = None
    if plan.covered:
        # By key, as the prefix's ids: shown as public ids by ``selectors.plans_shown``.
        covered = {"first": plan.covered[0], "last": plan.covered[-1], "count": len(plan.covered)}
    return {
        "format": FORMAT,
        "dropped": [read.rows[i].public_id for i in plan.dropped],
        "elided": [read.rows[i].public_id for i in plan.elided],
        "covered": covered,
        "memo_status": memo_status,
        "memo_requested": _memo_section(requested, "pending") if requested else None,
        "memo_lag": _memo_lag(plan, read),
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
    appended_leaf: Message | None = None,
    ahead: Ahead | None = None,
    after_record: AfterRecord | None = None,
) -> Assembly:
    """Assemble, record and return the model input ending at ``leaf_public_id`` (default: the
    active leaf); see the module docstring. ``thread`` must come with its ``profile`` and
    ``active_leaf`` selected. ``system`` None: the thread's own system prompt, if it has one.

    ``appended_leaf``: the leaf is a message the caller appended in its still open transaction
    (``/respond``). Neither it nor the erasure hold is read again: the append's thread row lock
    (``FOR NO KEY UPDATE``, held to commit) already keeps an erasure out, as the hold would,
    and no savepoint is taken (a refusal rolls the caller's whole transaction back).

    Raises ``InvalidRequest`` (400) with nothing written for: a bad budget, an unknown encoding
    on the profile, too many retrieved items or items that do not fit, a leaf of another
    thread, an empty thread, a leaf whose tool calls wait for results, and a budget that
    cannot hold the current turn (with the arithmetic in the error's ``arithmetic``).

    With ``appended_leaf``, the caller's own statements can share the round trips: ``ahead``
    goes before the read (and is checked before anything read is used), ``after_record`` after
    the record's insert (its row is ``Assembly.after_record_row``); both in the caller's
    transaction, under its lock.
    """
    retrieved = retrieved or []
    if (ahead or after_record) and appended_leaf is None:
        raise ValueError("ahead and after_record go with appended_leaf")
    if system is None:
        system = thread_system_text(thread)
    profile = thread_profile(thread)
    window, reserve = request_budget(
        profile, window_tokens=window_tokens, reserve_tokens=reserve_tokens
    )
    _check_retrieved(retrieved)
    if appended_leaf is not None:
        if not transaction.get_connection().in_atomic_block:
            raise RuntimeError("appended_leaf needs the append's transaction still open")
        with transaction.atomic(savepoint=False):
            return _assemble(
                thread,
                actor,
                profile,
                window,
                reserve,
                system,
                appended_leaf,
                retrieved,
                ahead,
                after_record,
            )
    with transaction.atomic():
        # Read and record in one transaction that an erasure of the thread cannot cross: a
        # snapshot of content is stored before an erasure purges snapshots, or not at all.
        # The hold goes in the read's round trip unless something is read before the read
        # (a named leaf, a tool result's group): then it must come first.
        hold = Ahead(*thread_hold_sql(thread), checked=thread_hold_checked)
        if leaf_public_id is not None or thread.active_leaf.role == Role.TOOL:
            thread_hold_against_erasure(thread)
            hold = None
        return _assemble(
            thread, actor, profile, window, reserve, system, leaf_public_id, retrieved, hold
        )


def _assemble(
    thread: Thread,
    actor: Actor,
    profile: EffectiveProfile,
    window: int,
    reserve: int,
    system: str | None,
    leaf: str | Message | None,
    retrieved: list[RetrievedItem],
    ahead: Ahead | None = None,
    after_record: AfterRecord | None = None,
) -> Assembly:
    """``ahead``: a statement to send ahead of the context read (the erasure hold, when nothing
    has been read in this transaction before it); ``after_record``: see ``context_assemble``."""
    leaf = leaf if isinstance(leaf, Message) else _leaf(thread, leaf)
    group_size = _current_group_size(leaf)
    prompt, items = _pieces(system, retrieved, profile.encoding)
    texts = ([prompt] if prompt else []) + items
    budget = Budget(
        window=window,
        reserve=reserve,
        system=system_section_tokens(prompt.tokens if prompt else None),
        retrieved=sum(message_tokens(piece.tokens) for piece in items),
    )
    available = max(budget.available, 0)
    blob_key = blob_key_id(thread)
    fetched = selectors.context_read(
        thread=thread,
        leaf_id=leaf.pk,
        budget=available,
        lookahead=available * settings.CONVMEM_CONTEXT_LOOKAHEAD_WINDOWS,
        per_message_overhead=profile.policy.message_overhead,
        max_rows=settings.CONVMEM_CONTEXT_MAX_ROWS,
        min_rows=group_size,
        blob_digests=[piece.digest for piece in texts],
        blob_key_id=blob_key,
        ahead=(ahead.sql, ahead.params) if ahead else None,
    )
    if ahead is not None:
        ahead.checked(fetched.ahead_row)
    rows = [row for row in fetched.rows if row.role != Role.ROOT]
    if not rows:
        raise InvalidRequest(
            "The thread has no messages yet: append the user's turn first.", code="empty_thread"
        )
    summaries = fetched.summaries
    ready = [s for s in summaries if s.status == Summary.Status.READY]
    pending = [s for s in summaries if s.status == Summary.Status.PENDING]
    reached_start = len(rows) < len(fetched.rows) or rows[0].depth == 1
    head = None if reached_start else _head(thread, rows[0], summaries, fetched.root_children)
    read = _read(rows, head, profile, fetched.payloads)
    recalled = _recall(thread, rows, reached_start, budget, profile, fetched.payloads)
    previous = _previous_prefix(fetched.previous_prefix, read, ready)
    plan = _plan(read, ready, budget, profile, recalled, previous, thread.memo_lead_messages)

    memo = next((s for s in ready if plan.memo and s.id == plan.memo.id), None)
    record_items, payloads = _items(plan, read, prompt, memo, items, recalled, profile.encoding)
    messages = render(record_items, payloads)
    prefix = _stable_prefix(
        plan, read, memo, record_items, messages, len(items) + len(plan.recalled)
    )
    tokens = _tokens_shown(plan, record_items, memo, window - reserve)
    pending_memo = pending[-1] if pending else None
    failed = _backing_off(thread) if plan.request and pending_memo is None else None

    if plan.request is not None and pending_memo is None and failed is None:
        pending_memo = _request_memo(thread, actor, plan, ready, read)
    memo_status = _memo_status(pending_memo, failed, memo, ready)
    digests, pieces = (
        snapshots.pieces_of(thread=thread, messages=messages)
        if profile.keep_rendered
        else (None, [])
    )
    record = AssemblyRecord(
        tenant_id=thread.tenant_id,
        thread=thread,
        leaf_id=leaf.pk,
        assembler_version=plan.version,
        items=_stored_items(record_items, read, memo, recalled, keep=profile.keep_rendered),
        plan=record_form.plan_stored(
            {**_plan_record(plan, read, memo_status, pending_memo), "prefix": prefix}
        ),
        tokens=record_form.tokens_stored(tokens),
        **_budget_fields(
            record_form.budget_stored(
                {
                    "window": window,
                    "reserve": reserve,
                    "profile": profile.name,
                    "encoding": profile.encoding,
                    "policy": asdict(profile.policy),
                },
                plan.version,
            ),
            plan.version,
            fetched.previous_budget,
        ),
        rendered_hash=sha256_hex(canonical_json(messages)),
        rendered_pieces=digests,
    )
    event = audit_event_build(
        actor=actor,
        action="assembly.recorded",
        tenant_id=thread.tenant_id,
        thread_public_id=thread.public_id,
        object_ids=[record.public_id],
        # Nothing the record itself does not say: the event names it, and the record (kept
        # as long as the thread) holds the leaf, the memo and the counts.
        details={},
    )
    # One statement on PostgreSQL: the texts a replay needs, the kept pieces, the record and
    # its audit event (see ``convmem.db``).
    after_record_row = rows_insert(
        [
            _blobs(thread.tenant_id, blob_key, texts, fetched.stored_blobs),
            Insert(pieces, on_conflict=snapshots.PIECE_CONFLICT),
            Insert([record], returning=True),
            Insert([event]),
        ],
        then=after_record(record) if after_record else None,
    )

    pending_section = _memo_section(pending_memo, "pending") if pending_memo else None
    candidates_by_id = {candidate.turn.id: candidate.public_id for candidate in recalled}
    sections = {
        "system": {"hash": prompt.digest, "tokens": prompt.tokens} if prompt else None,
        "memo": _shown_memo_section(memo, record_items) if memo else pending_section,
        "anchor": [read.rows[i].public_id for i in plan.anchor],
        "recalled": [candidates_by_id[i] for i in plan.recalled],
        "retrieved": [piece.ref for piece in items],
        "recent": [read.rows[i].public_id for i in plan.recent],
        "elided": [read.rows[i].public_id for i in plan.elided],
        "dropped": [read.rows[i].public_id for i in plan.dropped],
    }
    return Assembly(
        prefix={key: prefix[key] for key in ("messages", "tokens", "hash")},
        record=record,
        messages=messages,
        sections=sections,
        tokens=tokens,
        memo_status=memo_status,
        pending_memo=pending_section,
        memo_error=_memo_error(failed) if failed and not pending_memo else None,
        memo_lag=_memo_lag(plan, read),
        items=record_items,
        after_record_row=after_record_row,
    )


def _memo_status(
    pending: selectors.StretchSummary | None,
    failed: selectors.FailedMemo | None,
    memo: selectors.StretchSummary | None,
    ready: list[selectors.StretchSummary],
) -> str:
    """``pending`` (a memo of this path is being written) before ``failed`` (the one needed
    failed and the curator waits before asking again) before ``ready`` (one is shown) before
    ``not_shown`` (a ready memo of this path exists, but the input did not need it or it did
    not fit) before ``none``."""
    if pending:
        return "pending"
    if failed:
        return "failed"
    if memo:
        return "ready"
    return "not_shown" if ready else "none"


def _memo_error(failed: selectors.FailedMemo) -> dict[str, Any]:
    return {
        "summary_id": failed.public_id,
        "error": failed.error,
        "failures_in_a_row": failed.failure_streak,
        "retry_at": failed.retry_at,
    }


def _request_memo(
    thread: Thread,
    actor: Actor,
    plan: Plan,
    ready: list[selectors.StretchSummary],
    read: _Read,
) -> selectors.StretchSummary | None:
    """Insert the pending summary the plan asks for; None if a live one of that range exists
    (a concurrent request inserted it first, or a ready one of this range could not be
    shown)."""
    request = plan.request
    base = next((s for s in ready if s.id == request.base_memo_id), None)
    first_public_id = base.first_public_id if base else read.rows[request.first_id].public_id
    summary = summary_request(
        thread=thread,
        actor=actor,
        first_id=request.first_id,
        segment_first_id=request.segment_first_id,
        last_id=request.last_id,
        goal_id=request.goal_id,
        base_id=request.base_memo_id,
        chain_depth=base.chain_depth + 1 if base else 0,
        covered_ids=[read.rows[i].public_id for i in request.new_ids],
        max_tokens=request.max_tokens,
    )
    if summary is None:
        summary = Summary.objects.filter(
            thread=thread,
            first_id=request.first_id,
            last_id=request.last_id,
            status=Summary.Status.PENDING,
        ).first()
        if summary is None:
            return None
    return selectors.StretchSummary(
        id=summary.pk,
        public_id=summary.public_id,
        status=summary.status,
        first_id=request.first_id,
        last_id=request.last_id,
        first_public_id=first_public_id,
        last_public_id=read.rows[request.last_id].public_id,
        text="",
        token_count=0,
        chain_depth=summary.chain_depth,
    )
