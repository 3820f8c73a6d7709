"""Reads for context assembly and memo writing. Every path read walks leaf-up and is bounded.

Like ``threads.selectors``, the recursive CTEs start at one node and follow ``parent_id`` (the
primary key), so they cost what they return, never the size of the thread. The SQL runs
unchanged on PostgreSQL and SQLite.
"""

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from django.db import connection
from django.db.models import IntegerField, Q, QuerySet, Subquery
from django.db.models.fields.json import KT
from django.db.models.functions import Cast
from django.shortcuts import get_object_or_404

from compaction import item_runs, record_form
from compaction.models import AssemblyRecord, ContentBlob, Summary
from compaction.rendering import MessagePayload
from convmem.db import by_key, statements_pipelined, walk_sql
from convmem.models import Tenant
from convmem.sealed_fields import stored_open
from threads.models import Message, Thread

MESSAGE_TABLE = Message._meta.db_table
SUMMARY_TABLE = Summary._meta.db_table
BLOB_TABLE = ContentBlob._meta.db_table
ASSEMBLY_TABLE = AssemblyRecord._meta.db_table


@dataclass(frozen=True)
class StretchRow:
    """One node of a path as the curator needs it: no content.

    ``calls_tools``: an assistant turn with tool calls. ``tool_call_id``: what a tool result
    answers ("" for other messages, and for results stored before tool calls were).
    """

    id: int
    public_id: str
    role: str
    token_count: int
    depth: int
    calls_tools: bool = False
    tool_call_id: str = ""


@dataclass(frozen=True)
class StretchSummary:
    """A ready or pending summary whose last message is on a read stretch."""

    id: int
    public_id: str
    status: str
    first_id: int
    last_id: int
    first_public_id: str
    last_public_id: str
    text: str
    token_count: int
    chain_depth: int


# The path leaf-up, one row per step. A step is taken from row p while fewer than ``min_rows``
# rows are read (the current turn's whole tool group), or while p's running total is under the
# budget (so the first row reaching it is included), or — past the budget — until a row that
# ends a ready memo has been read (``seen``), within the lookahead cap. Each step is a primary
# key lookup (``convmem.db.by_key``; the first row's too: ``thread_id + 0`` keeps the thread's
# indexes out, which a plan made on a small table took, reading the whole thread through
# them) plus, for ``seen``, one probe of the index ``summary_live_last`` (``OFFSET 0`` keeps
# PostgreSQL from turning the EXISTS into a hashed read of every ready memo, which it did on
# tables without statistics).
#
# The same statement returns, as rows of other kinds: the contents of the messages the
# recent turns can show (running total within the budget) and of the first turn (the anchor);
# the ready and pending memos ending on the stretch, each found by one probe of the index on
# ``last_id`` per stretch row; and the root's children (the conversation's first turn, found
# without walking the path when the stretch stops short of it).
_PATH_CTE = f"""
WITH RECURSIVE path(id, parent_id, n, total, seen) AS (
    SELECT id, parent_id, 1, token_count + %s, 0
    FROM {MESSAGE_TABLE} WHERE id = %s AND thread_id + 0 = %s
    UNION ALL
    SELECT m.id, m.parent_id, path.n + 1, path.total + m.token_count + %s,
           CASE WHEN path.seen = 1 OR EXISTS (
               SELECT 1 FROM {SUMMARY_TABLE} s WHERE s.last_id = m.id AND s.status = 'ready'
               LIMIT 1 OFFSET 0
           ) THEN 1 ELSE 0 END
    FROM path {{step}}
    WHERE path.n < %s
      AND (path.n < %s OR path.total < %s OR (path.seen = 0 AND path.total < %s))
)
"""

_SHOWN = "(path.total <= %s OR m.depth = 1)"

# The memos ending on a stretch row. On PostgreSQL a LATERAL subquery behind OFFSET 0, as in
# ``convmem.db.by_key``, keeps the plan a nested loop of probes of ``summary_live_last``; a
# fresh or never-analysed table otherwise got a scan of every live memo of every thread.
_MEMOS_ON_STRETCH = {
    "postgresql": f"""
    CROSS JOIN LATERAL (
        SELECT * FROM {SUMMARY_TABLE} s0
        WHERE s0.last_id = path.id AND s0.status IN ('ready', 'pending') OFFSET 0
    ) s""",
    "sqlite": f"""
    JOIN {SUMMARY_TABLE} s ON s.last_id = path.id AND s.status IN ('ready', 'pending')""",
}

_READ_SQL = (
    _PATH_CTE
    + f"""
SELECT 'message', path.n, m.id, m.public_id, m.role, m.token_count, m.depth,
       CASE WHEN m.tool_calls IS NULL THEN 0 ELSE 1 END, m.tool_call_id,
       CASE WHEN {_SHOWN} THEN 1 ELSE 0 END,
       CASE WHEN {_SHOWN} THEN m.content END,
       CASE WHEN {_SHOWN} THEN m.content_parts END,
       CASE WHEN {_SHOWN} THEN m.tool_calls END,
       CAST(NULL AS BIGINT), CAST(NULL AS BIGINT), NULL, NULL
FROM path {{row}}
UNION ALL
SELECT 'head', 0, m.id, m.public_id, m.role, m.token_count, m.depth,
       CASE WHEN m.tool_calls IS NULL THEN 0 ELSE 1 END, m.tool_call_id,
       1, m.content, m.content_parts, m.tool_calls, NULL, NULL, NULL, NULL
FROM {MESSAGE_TABLE} m WHERE m.parent_id = %s
UNION ALL
SELECT 'memo', path.n, s.id, s.public_id, s.status, s.token_count, s.chain_depth, 0, '',
       0, s.text, NULL, NULL, s.first_id, s.last_id, f.public_id, l.public_id
FROM path {{memos}} {{first}} {{last}}
"""
)


# Which of the request's texts (system prompt, retrieved items) are stored and not erased: the
# write then stores only the others.
_BLOBS_SQL = f"""
UNION ALL
SELECT 'blob', 0, 0, b.sha256, '', 0, 0, 0, '', 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL
FROM {BLOB_TABLE} b
WHERE b.tenant_id = %s AND b.key_id = %s AND b.erased_at IS NULL AND b.sha256 IN ({{digests}})
"""


# The stable prefix recorded with the thread's newest model input (``compaction.context``):
# its memo and first verbatim turn, by key; and the whole budget that input was written
# with (its own, or that of the record it names), for the next record to refer to.
_PREFIX_FIELD = {
    "postgresql": "a.plan -> 'prefix' ->> '{key}'",
    "sqlite": "json_extract(a.plan, '$.prefix.{key}')",
}
_PREFIX_SQL = f"""
UNION ALL
SELECT 'prefix', 0, 0, CAST({{memo}} AS TEXT), CAST({{first}} AS TEXT), 0, 0, 0,
       b.assembler_version, 0, CAST(b.budget AS TEXT), NULL, NULL, b.id, NULL, NULL, NULL
FROM (
    SELECT id, plan, budget_from_id FROM {ASSEMBLY_TABLE}
    WHERE thread_id = %s ORDER BY id DESC LIMIT 1
) a
JOIN {ASSEMBLY_TABLE} b ON b.id = COALESCE(a.budget_from_id, a.id)
"""


def read_sql(vendor: str, *, blobs: int = 0) -> str:
    """The context read's SQL for a database vendor (``connection.vendor``), checking
    ``blobs`` content blobs."""
    sql = walk_sql(
        _READ_SQL,
        table=MESSAGE_TABLE,
        walk="path",
        vendor=vendor,
        memos=_MEMOS_ON_STRETCH[vendor],
        first=by_key(vendor, MESSAGE_TABLE, "f", "s.first_id"),
        last=by_key(vendor, MESSAGE_TABLE, "l", "s.last_id"),
    )
    if blobs:
        sql += _BLOBS_SQL.format(digests=", ".join(["%s"] * blobs))
    field = _PREFIX_FIELD[vendor]
    return sql + _PREFIX_SQL.format(memo=field.format(key="memo"), first=field.format(key="first"))


class PreviousBudget(NamedTuple):
    """The record holding the whole budget of a thread's newest model input."""

    record_id: int
    assembler_version: str
    budget: dict[str, Any]


@dataclass(frozen=True)
class ContextRead:
    """What one context read returns: the stretch root → leaf (the hidden root included if the
    walk got that far), the payloads of the messages it read content for (by row id), the
    ready and pending memos ending on the stretch (oldest first), the root's children, and
    which of the asked-about content blobs are stored (not erased)."""

    rows: list[StretchRow]
    payloads: dict[int, MessagePayload]
    summaries: list[StretchSummary]
    root_children: list[StretchRow]
    stored_blobs: frozenset[str]
    # The previous input's stable prefix: (memo key or None, first verbatim turn's key).
    previous_prefix: tuple[int | None, int] | None = None
    # The previous input's whole budget as stored: (record id, assembler version, budget).
    previous_budget: PreviousBudget | None = None
    # The row of the statement sent ahead of the read (``context_read``'s ``ahead``), if any.
    ahead_row: tuple[Any, ...] | None = None


def context_read(
    *,
    thread: Thread,
    leaf_id: int,
    budget: int,
    lookahead: int,
    per_message_overhead: int,
    max_rows: int,
    min_rows: int = 1,
    blob_digests: Sequence[str] = (),
    blob_key_id: str = "",
    ahead: tuple[str, Sequence[Any]] | None = None,
) -> ContextRead:
    """The end of the path at ``leaf_id`` that a context can use, with what the curator and the
    renderer need of it. One query.

    Reads leaf-up at least ``min_rows`` rows, then until the running cost (``token_count +
    per_message_overhead`` per row) reaches ``budget`` — all the recent turns could use — and
    then on, up to ``lookahead`` tokens in total, only until it has read the last message of
    a ready memo, so the newest memo that ends before the window is on the stretch. Never
    more than ``max_rows`` rows. Contents are read for the rows within ``budget`` and the
    first turn only: a row shown beyond them (possible when bulky tool results are elided)
    is read by the caller. ``blob_digests``: the texts of the request to look up in the
    thread's tenant's content blobs stored under ``blob_key_id`` (``models.blob_key_id``).
    ``ahead``: a statement (SQL, parameters) sent before the read, in the same round trip; its
    first row is ``ContextRead.ahead_row`` (the erasure hold, which the caller checks).
    """
    digests = sorted(set(blob_digests))
    params = [
        per_message_overhead,
        leaf_id,
        thread.pk,
        per_message_overhead,
        max_rows,
        min_rows,
        budget,
        max(budget, lookahead),
        *[budget] * 4,
        thread.root_id,
        *([thread.tenant_id, blob_key_id, *digests] if digests else []),
        thread.pk,
    ]
    rows, payloads, summaries, children, blobs = [], {}, [], [], set()
    previous = previous_budget = None
    read = read_sql(connection.vendor, blobs=len(digests))
    ahead_row = None
    with connection.cursor() as cursor:
        if ahead is None:
            cursor.execute(read, params)
        else:
            with connection.cursor() as first:
                statements_pipelined([(first, *ahead), (cursor, read, params)])
                ahead_row = first.fetchone()
        fetched = cursor.fetchall()
    for kind, n, id_, public_id, role, tokens, depth, calls, call_id, *rest in fetched:
        has_content, content, parts, tool_calls, *memo = rest
        if kind == "blob":
            blobs.add(public_id)
            continue
        if kind == "prefix":
            previous = (int(public_id) if public_id else None, int(role)) if role else None
            previous_budget = PreviousBudget(memo[0], call_id, json.loads(content))
            continue
        if kind == "memo":
            first_id, last_id, first_public_id, last_public_id = memo
            summaries.append(
                StretchSummary(
                    id_,
                    public_id,
                    role,
                    first_id,
                    last_id,
                    first_public_id,
                    last_public_id,
                    stored_open(Summary, "text", public_id, content),
                    tokens,
                    depth,
                )
            )
            continue
        row = StretchRow(id_, public_id, role, tokens, depth, bool(calls), call_id)
        (rows if kind == "message" else children).append((n, row))
        if has_content:
            payloads[id_] = MessagePayload(
                stored_open(Message, "content", public_id, content),
                stored_open(Message, "content_parts", public_id, _json(parts)),
                stored_open(Message, "tool_calls", public_id, _json(tool_calls)),
                call_id,
            )
    return ContextRead(
        rows=[row for _, row in sorted(rows, key=lambda pair: -pair[0])],
        payloads=payloads,
        summaries=sorted(summaries, key=lambda summary: summary.id),
        root_children=[row for _, row in sorted(children, key=lambda pair: pair[1].id)],
        stored_blobs=frozenset(blobs),
        previous_prefix=previous,
        previous_budget=previous_budget,
        ahead_row=ahead_row,
    )


_ANCESTOR_SQL = f"""
WITH RECURSIVE up(id, parent_id, depth) AS (
    SELECT id, parent_id, depth FROM {MESSAGE_TABLE} WHERE id = %s AND thread_id + 0 = %s
    UNION ALL
    SELECT m.id, m.parent_id, m.depth FROM up {{step}}
    WHERE up.depth > %s
)
SELECT id FROM up WHERE depth = %s
"""


def ancestor_at_depth(*, thread: Thread, start_id: int, depth: int) -> int | None:
    """The id of the ancestor of ``start_id`` at ``depth`` (ids only; walks the gap once)."""
    with connection.cursor() as cursor:
        sql = walk_sql(_ANCESTOR_SQL, table=MESSAGE_TABLE, walk="up")
        cursor.execute(sql, [start_id, thread.pk, depth, depth])
        row = cursor.fetchone()
    return row[0] if row else None


@dataclass(frozen=True)
class RangeRow:
    """A message of a memo's range, with its content (memo writing, off the hot path)."""

    id: int
    parent_id: int | None
    public_id: str
    role: str
    content: str
    token_count: int
    erased_at: datetime | None
    content_parts: list[dict[str, Any]] | None = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str = ""


_RANGE_SQL = f"""
WITH RECURSIVE up(id, parent_id, n) AS (
    SELECT id, parent_id, 1 FROM {MESSAGE_TABLE} WHERE id = %s AND thread_id + 0 = %s
    UNION ALL
    SELECT m.id, m.parent_id, up.n + 1 FROM up {{step}}
    WHERE up.n < %s
)
SELECT m.id, m.parent_id, m.public_id, m.role, {{content}}, m.token_count, m.erased_at,
       {{parts}}, m.tool_calls, m.tool_call_id
FROM up {{row}}
ORDER BY up.n DESC
"""


def _json(value: Any) -> Any:
    """A JSON column read by raw SQL: decoded by PostgreSQL's driver, text on SQLite."""
    return json.loads(value) if isinstance(value, str) else value


def range_rows(
    *, thread: Thread, last_id: int, count: int, with_content: bool = True
) -> list[RangeRow]:
    """The ``count`` messages of the path ending at ``last_id``, root → leaf. One query.

    Callers check that the first row is the range's start (else the range is not one path).
    Without content, ``content`` is ``""`` and ``content_parts`` None (coverage checks and
    segment planning need ids, roles, counts and tool calls only).
    """
    sql = walk_sql(
        _RANGE_SQL,
        table=MESSAGE_TABLE,
        walk="up",
        content="m.content" if with_content else "''",
        parts="m.content_parts" if with_content else "NULL",
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [last_id, thread.pk, max(count, 1)])
        rows = cursor.fetchall()
    return [_range_row(row) for row in rows]


def _range_row(row: tuple[Any, ...]) -> RangeRow:
    public_id = row[2]
    return RangeRow(
        *row[:4],
        stored_open(Message, "content", public_id, row[4]),
        *row[5:7],
        content_parts=stored_open(Message, "content_parts", public_id, _json(row[7])),
        tool_calls=stored_open(Message, "tool_calls", public_id, _json(row[8])),
        tool_call_id=row[9],
    )


@dataclass(frozen=True)
class FailedMemo:
    """The thread's latest failed memo: why, and when the curator may ask again."""

    public_id: str
    error: str
    retry_at: datetime | None
    failure_streak: int


def latest_failed_memo(*, thread: Thread) -> FailedMemo | None:
    """The newest failed summary of ``thread``, if it failed after its newest ready one.

    Two probes of the index on (thread, status, id), whatever the thread's size.
    """
    failed = (
        Summary.objects.filter(thread=thread, status=Summary.Status.FAILED)
        .order_by("-id")
        .values_list("id", "public_id", "error", "retry_at", "failure_streak")
        .first()
    )
    if failed is None:
        return None
    written_since = Summary.objects.filter(
        thread=thread, status=Summary.Status.READY, id__gt=failed[0]
    ).exists()
    return None if written_since else FailedMemo(*failed[1:])


def summary_list(*, thread: Thread) -> QuerySet[Summary]:
    """The thread's summaries, newest first, with the public ids the API shows joined in."""
    return (
        Summary.objects.filter(thread=thread)
        .select_related("first", "last", "base")
        .only(
            "public_id",
            "status",
            "covered_ids",
            "text",
            "token_count",
            "scores",
            "chain_depth",
            "backend",
            "model",
            "prompt_version",
            "error",
            "attempts",
            "created_at",
            "updated_at",
            "first__public_id",
            "last__public_id",
            "base__public_id",
        )
        .order_by("-id")
    )


def assembly_get(*, tenant: Tenant, public_id: str) -> AssemblyRecord:
    """The tenant's assembly record; another tenant's is a 404 like a missing one."""
    return get_object_or_404(
        AssemblyRecord.objects.select_related("thread", "leaf"), tenant=tenant, public_id=public_id
    )


def assembly_of_thread_exists(thread: Thread, public_id: str) -> bool:
    """Whether ``public_id`` names an assembly of ``thread`` (threads asks, for an assistant turn
    that says which model input it answers). Raw SQL: asked on every answer, and the ORM's
    ``exists()`` cost more to compile than to run."""
    with connection.cursor() as cursor:
        cursor.execute(ASSEMBLY_EXISTS_SQL, [public_id, thread.pk])
        return cursor.fetchone() is not None


# By the unique index on ``public_id`` alone (``+ 0`` keeps the thread's index out): a plan
# made while the table was small took ``assembly_thread_idx`` and read the thread's records
# through it, more with every turn.
ASSEMBLY_EXISTS_SQL = f"SELECT 1 FROM {ASSEMBLY_TABLE} WHERE public_id = %s AND thread_id + 0 = %s"


@dataclass(frozen=True)
class LostMiddle:
    """Of the ``inputs`` newest model inputs, how many lost the middle of their conversation
    (``memo_lag.turns`` > 0: messages newer than the memo shown were left out)."""

    inputs: int
    lost: int

    @property
    def share(self) -> float:
        return self.lost / self.inputs if self.inputs else 0.0


def inputs_losing_the_middle(*, newest: int) -> LostMiddle:
    """How many of the ``newest`` assembly records lost the middle (two counts over the newest
    ids; records made before ``memo_lag`` was recorded count as not losing it)."""
    window = AssemblyRecord.objects.order_by("-id").values("pk")[:newest]
    recent = AssemblyRecord.objects.filter(pk__in=window)
    return LostMiddle(
        inputs=recent.count(),
        # The key's text as a number: the plan is ``json`` on PostgreSQL, which has no ``>``.
        lost=recent.annotate(lag=Cast(KT("plan__memo_lag__turns"), IntegerField()))
        .filter(lag__gt=0)
        .count(),
    )


def items_expanded(
    *, thread_id: int, stored: list[list[dict[str, Any]]]
) -> list[list[dict[str, Any]]]:
    """The items of records of one thread as they were shown, from their stored form
    (``compaction.item_runs``): at most three queries for any number of records (the older
    form's range ends by public id, the messages between the lowest and the highest end — a
    parent's id is below its children's — with those recalled by key, and the memos named by
    key), none when no record holds a range, a memo or a recalled message by key."""
    ends = {end for items in stored for end in item_runs.run_ends(items)}
    end_pks = {pk for items in stored for pk in item_runs.run_end_pks(items)}
    memo_pks = {pk for items in stored for pk in item_runs.memo_pks(items)}
    recalled = {pk for items in stored for pk in item_runs.recalled_pks(items)}
    if not ends and not end_pks and not memo_pks and not recalled:
        return stored
    messages = Message.objects.filter(thread_id=thread_id)
    pk_of = dict(messages.filter(public_id__in=ends).values_list("public_id", "pk")) if ends else {}
    bounds = end_pks | set(pk_of.values())
    wanted = (Q(pk__range=(min(bounds), max(bounds))) if bounds else Q()) | (
        Q(pk__in=recalled) if recalled else Q()
    )
    rows = (
        {
            pk: item_runs.PathRow(*row)
            for pk, *row in messages.filter(wanted).values_list(
                "pk", "parent_id", "public_id", "role", "token_count"
            )
        }
        if bounds or recalled
        else {}
    )
    memos = (
        {
            pk: item_runs.MemoRow(*row)
            for pk, *row in Summary.objects.filter(
                thread_id=thread_id, pk__in=memo_pks
            ).values_list("pk", "public_id", "first__public_id", "last__public_id")
        }
        if memo_pks
        else {}
    )
    return [item_runs.items_expand(items, pk_of, rows, memos) for items in stored]


def assembly_items(assembly: AssemblyRecord) -> list[dict[str, Any]]:
    """One record's items as they were shown (see ``items_expanded``)."""
    return items_expanded(thread_id=assembly.thread_id, stored=[assembly.items])[0]


def plans_shown(*, thread_id: int, stored: list[dict[str, Any] | None]) -> list[dict[str, Any]]:
    """The plans of records of one thread as they were written (``record_form.plan_shown``),
    with the ids the plan stores by key shown as public ids: the covered range's ends
    (``first``/``last`` → ``first_id``/``last_id``) and the stable prefix's memo and first
    turn (``memo``/``first`` → ``memo_id``/``first_id``). Two queries for any number of
    plans, none when no plan holds a key; plans in the older form are shown as they are."""
    plans = [record_form.plan_shown(plan) for plan in stored]
    message_pks, memo_pks = set(), set()
    for plan in plans:
        covered, prefix = plan.get("covered") or {}, plan.get("prefix") or {}
        message_pks |= {covered[k] for k in ("first", "last") if k in covered}
        message_pks |= {prefix["first"]} if "first" in prefix else set()
        memo_pks |= {prefix["memo"]} if prefix.get("memo") is not None else set()
    if not message_pks and not memo_pks:
        return plans
    messages = Message.objects.filter(thread_id=thread_id)
    public = dict(messages.filter(pk__in=message_pks).values_list("pk", "public_id"))
    memos = Summary.objects.filter(thread_id=thread_id)
    memo_public = dict(memos.filter(pk__in=memo_pks).values_list("pk", "public_id"))
    return [_plan_public(plan, public, memo_public) for plan in plans]


# A plan's keys and the names their public ids are shown under.
_COVERED_SHOWN = {"first": "first_id", "last": "last_id"}
_PREFIX_SHOWN = {"memo": "memo_id", "first": "first_id"}


def _plan_public(
    plan: dict[str, Any], public: dict[int, str], memo_public: dict[int, str]
) -> dict[str, Any]:
    shown = dict(plan)
    if isinstance(plan.get("covered"), dict) and "first" in plan["covered"]:
        shown["covered"] = {
            _COVERED_SHOWN.get(k, k): public.get(v, "") if k in _COVERED_SHOWN else v
            for k, v in plan["covered"].items()
        }
    if isinstance(plan.get("prefix"), dict) and "first" in plan["prefix"]:
        names = {"memo": memo_public, "first": public}
        shown["prefix"] = {
            _PREFIX_SHOWN.get(k, k): (None if v is None else names[k].get(v, ""))
            if k in names
            else v
            for k, v in plan["prefix"].items()
        }
    return shown


def assembly_plan(assembly: AssemblyRecord) -> dict[str, Any]:
    """One record's plan as it was written (see ``plans_shown``)."""
    return plans_shown(thread_id=assembly.thread_id, stored=[assembly.plan])[0]


def assembly_blobs(assembly: AssemblyRecord, hashes: Sequence[str]) -> dict[str, ContentBlob]:
    """The content blobs of ``assembly``'s thread by hash (texts opened): the ones stored under
    its subject's key (encryption on), else the tenant's stored in clear. Blobs under a key
    destroyed since are never read (they were erased, or no key opens them)."""
    if not hashes:
        return {}
    key_id = Thread.objects.filter(pk=assembly.thread_id).values("data_key_id")
    found: dict[str, ContentBlob] = {}
    for blob in (
        ContentBlob.objects.filter(tenant_id=assembly.tenant_id, sha256__in=hashes)
        .filter(Q(key_id="") | Q(key_id=Subquery(key_id)))
        .order_by("key_id")
    ):
        found[blob.sha256] = blob  # "" sorts first: the subject's, read last, wins
    return found
