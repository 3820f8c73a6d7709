"""Reads of threads and message trees.

Hot-path reads walk the tree **leaf-up** with a recursive CTE that starts at one node and stops
after the rows it needs. django-tree-queries' CTE starts at every root and walks down, so even
with ``tree_filter`` its cost grows with the depth of the thread (measured: 34 s at depth
10,000); the leaf-up walk costs what the page costs (well under a millisecond at any depth).
The SQL below is plain enough to run unchanged on PostgreSQL and SQLite.
"""

import json
from dataclasses import dataclass
from datetime import datetime
from functools import cache

from django.db import connection
from django.db.models import Case, F, QuerySet, When
from django.http import Http404
from django.shortcuts import get_object_or_404

from convmem.db import by_key, model_columns, model_from_row, walk_sql
from convmem.models import ModelProfile, Tenant
from convmem.sealed_fields import stored_open
from threads.models import Message, Role, SystemPrompt, Thread

MESSAGE_TABLE = Message._meta.db_table


def thread_get(*, tenant: Tenant, public_id: str, with_leaf: bool = True) -> Thread:
    """The tenant's thread with this id; another tenant's thread is a 404 like a missing one.
    The thread comes with ``tenant`` (the one in hand: not read again), its profile and system
    prompt, and its active leaf unless ``with_leaf`` is False (a caller that appends under the
    thread's lock reads the leaf there: joining it in cost a third of this read). Read with
    written SQL (``convmem.db.model_from_row``): this read starts nearly every API request,
    and compiling the ORM's query cost more than running it."""
    related = _THREAD_RELATED if with_leaf else _THREAD_RELATED[1:]
    with connection.cursor() as cursor:
        cursor.execute(_thread_get_sql(related), [tenant.pk, public_id])
        row = cursor.fetchone()
    if row is None:
        raise Http404("No Thread matches the given query.")
    width = len(Thread._meta.concrete_fields)
    thread = model_from_row(Thread, row[:width])
    for name, model in related:
        values = row[width : width + len(model._meta.concrete_fields)]
        width += len(values)
        # A left join's NULLs: the thread has none (the ORM caches that as None too).
        setattr(thread, name, model_from_row(model, values) if values[0] is not None else None)
    thread.tenant = tenant
    return thread


# What ``thread_get`` joins in, by field; each model's primary key is its first column.
_THREAD_RELATED = (
    ("active_leaf", Message),
    ("profile", ModelProfile),
    ("system_prompt", SystemPrompt),
)


@cache
def _thread_get_sql(related: tuple[tuple[str, type], ...]) -> str:
    select = [model_columns(Thread, "t")]
    joins = []
    for index, (name, model) in enumerate(related):
        alias = f"r{index}"
        select.append(model_columns(model, alias))
        column = Thread._meta.get_field(name).column
        joins.append(f"LEFT JOIN {model._meta.db_table} {alias} ON {alias}.id = t.{column}")
    return (
        f"SELECT {', '.join(select)} FROM {Thread._meta.db_table} t {' '.join(joins)} "
        "WHERE t.tenant_id = %s AND t.public_id = %s AND t.deleted_at IS NULL"
    )


def thread_system_text(thread: Thread) -> str | None:
    """The thread's current system prompt; None if it has none (never set, or cleared)."""
    prompt = thread.system_prompt
    return prompt.text if prompt is not None and prompt.text else None


def messages_since(*, thread_id: int, since: datetime, most: int) -> int:
    """How many of the thread's messages (any branch) were created after ``since``, counting
    at most ``most``: reads the newest ``most`` rows by the ``(thread, id)`` index, so the cost
    does not grow with the thread (messages are created in id order)."""
    newest = Message.objects.filter(thread_id=thread_id).order_by("-id")[:most]
    return sum(created > since for created in newest.values_list("created_at", flat=True))


def thread_get_for_deletion(*, tenant: Tenant, public_id: str) -> Thread:
    """Like ``thread_get``, deleted threads included (a DELETE retried under its key)."""
    return get_object_or_404(
        Thread.objects.select_related("tenant"), tenant=tenant, public_id=public_id
    )


def thread_list(*, tenant: Tenant, user_ref: str | None = None) -> QuerySet[Thread]:
    threads = Thread.objects.filter(tenant=tenant, deleted_at__isnull=True).select_related(
        "active_leaf", "profile", "system_prompt"
    )
    if user_ref is not None:
        threads = threads.filter(user_ref=user_ref)
    return threads


def messages_with_refs() -> QuerySet[Message]:
    """Messages annotated with the public ids the API shows of their parent and edited node.

    A first message's parent is the hidden root, reported as ``None``.
    """
    return Message.objects.annotate(
        parent_public_id=Case(
            When(parent__role=Role.ROOT, then=None), default=F("parent__public_id")
        ),
        edits_public_id=F("edits__public_id"),
    )


def visible_message(
    thread: Thread, public_id: str, *, queryset: QuerySet[Message] | None = None
) -> Message | None:
    """The message of ``thread`` a caller names by public id — never the hidden root — or None.

    The one lookup of a named message (API, admin, context requests, services); each caller
    says what a miss means there (404, ``unknown_message``, a bad cursor).
    """
    rows = Message.objects.all() if queryset is None else queryset
    return rows.filter(thread=thread, public_id=public_id).exclude(role=Role.ROOT).first()


def message_get(*, thread: Thread, public_id: str) -> Message:
    """A visible message of ``thread`` with the public ids the API shows, else 404."""
    message = visible_message(thread, public_id, queryset=messages_with_refs())
    if message is None:
        raise Http404("No such message in this thread.")
    return message


_PATH_SQL = f"""
WITH RECURSIVE path(id, parent_id, n) AS (
    SELECT id, parent_id, 1 FROM {MESSAGE_TABLE} WHERE id = %s AND thread_id + 0 = %s
    UNION ALL
    SELECT m.id, m.parent_id, path.n + 1
    FROM path {{step}}
    WHERE path.n < %s
)
SELECT m.*, path.n AS path_n,
       CASE WHEN p.role = 'root' THEN NULL ELSE p.public_id END AS parent_public_id,
       e.public_id AS edits_public_id
FROM path {{row}} {{parent}} {{edited}}
ORDER BY path.n DESC
"""


def _path_sql() -> str:
    """``_PATH_SQL`` for this connection's database, every message looked up by key
    (``convmem.db.by_key``)."""
    vendor = connection.vendor
    return walk_sql(
        _PATH_SQL,
        table=MESSAGE_TABLE,
        walk="path",
        parent=by_key(vendor, MESSAGE_TABLE, "p", "m.parent_id", left=True),
        edited=by_key(vendor, MESSAGE_TABLE, "e", "m.edits_id", left=True),
    )


@dataclass(frozen=True)
class ToolGroup:
    """An assistant turn's tool calls and which of them the tool messages after it answer."""

    opener_id: int
    call_ids: tuple[str, ...]
    answered: frozenset[str]

    @property
    def missing(self) -> list[str]:
        return [call_id for call_id in self.call_ids if call_id not in self.answered]


# Leaf-up from a node while the rows are tool messages: the tool results of one group and,
# above them, the turn they answer. Bounded by the number of calls one turn may make.
_TOOL_GROUP_SQL = f"""
WITH RECURSIVE up(id, parent_id, role, n) AS (
    SELECT id, parent_id, role, 1 FROM {MESSAGE_TABLE} WHERE id = %s
    UNION ALL
    SELECT m.id, m.parent_id, m.role, up.n + 1
    FROM up {{step}}
    WHERE up.role = 'tool' AND up.n < %s
)
SELECT m.id, m.role, m.tool_calls, m.tool_call_id FROM up {{row}}
ORDER BY up.n
"""


def tool_group_ending_at(*, message: Message, max_calls: int) -> ToolGroup | None:
    """The tool group ``message`` ends, if it ends one: it is an assistant turn with tool calls,
    or a tool message answering one (the group is then read leaf-up, one query). None for any
    other message, and for tool messages recorded without a call to answer.
    """
    if message.role == Role.ASSISTANT and message.tool_calls:
        return ToolGroup(
            opener_id=message.pk,
            call_ids=tuple(call["id"] for call in message.tool_calls),
            answered=frozenset(),
        )
    if message.role != Role.TOOL:
        return None
    with connection.cursor() as cursor:
        sql = walk_sql(_TOOL_GROUP_SQL, table=MESSAGE_TABLE, walk="up")
        cursor.execute(sql, [message.pk, max_calls + 2])
        rows = cursor.fetchall()
    opener_id, role, tool_calls, _ = rows[-1]
    if role != Role.ASSISTANT or not tool_calls:
        return None
    calls = json.loads(tool_calls) if isinstance(tool_calls, str) else tool_calls
    return ToolGroup(
        opener_id=opener_id,
        call_ids=tuple(call["id"] for call in calls),
        answered=frozenset(call_id for _, row_role, _, call_id in rows[:-1] if call_id),
    )


@dataclass(frozen=True)
class PathPage:
    """A stretch of a path in root → leaf order, and where the next (older) page starts."""

    messages: list[Message]
    older_start: Message | None


def path_page(*, thread: Thread, leaf: Message, limit: int) -> PathPage:
    """Up to ``limit`` messages of the path ending at ``leaf``, walking leaf-up.

    One query whatever the depth: the CTE stops after ``limit + 1`` rows (one extra row tells
    whether an older page exists and where it starts).
    """
    rows = list(Message.objects.raw(_path_sql(), [leaf.pk, thread.pk, limit + 1]))
    visible = [m for m in rows if m.role != Role.ROOT]
    older_start = visible[0] if len(visible) > limit else None
    return PathPage(messages=visible[-limit:] if limit else [], older_start=older_start)


@dataclass(frozen=True)
class TreeNodeView:
    message: Message
    sibling_index: int
    sibling_count: int


def tree_page(*, thread: Thread, after_id: int | None, limit: int) -> list[TreeNodeView]:
    """Nodes of the thread in creation order (parents before children), with sibling positions.

    Two queries per page: the page itself, then the ids of every sibling group it touches
    (a group is the children of one parent, usually one node, a few at a fork).
    """
    nodes = messages_with_refs().filter(thread=thread).exclude(role=Role.ROOT).order_by("id")
    if after_id is not None:
        nodes = nodes.filter(id__gt=after_id)
    page = list(nodes[:limit])
    groups: dict[int, list[int]] = {}
    parent_ids = {m.parent_id for m in page}
    siblings = Message.objects.filter(parent_id__in=parent_ids).order_by("id")
    for parent_id, message_id in siblings.values_list("parent_id", "id"):
        groups.setdefault(parent_id, []).append(message_id)
    return [
        TreeNodeView(
            message=m,
            sibling_index=groups[m.parent_id].index(m.id) + 1,
            sibling_count=len(groups[m.parent_id]),
        )
        for m in page
    ]


# --- Branch reads for the staff admin ------------------------------------------------------------
# The admin shows one path at a time (read leaf-up with ``path_page``) plus the sibling groups
# along it; a side branch is read on demand by walking *down* from its first node, following the
# newest child at each fork. Both stay bounded by what the page shows, never by the thread.

PREVIEW_CHARS = 160


@dataclass(frozen=True)
class SiblingNode:
    """One child of a parent, with a short preview of its content (never the whole content)."""

    id: int
    public_id: str
    parent_id: int
    role: str
    edits_id: int | None
    token_count: int
    erased: bool
    preview: str


def sibling_groups(*, thread: Thread, parent_ids: set[int]) -> dict[int, list[SiblingNode]]:
    """The children of each of ``parent_ids`` (oldest first), in one query.

    Sibling groups are small (a fork holds the edits and regenerations of one turn), so this is
    bounded by the number of parents asked about, not by the size of the thread.
    """
    rows = (
        Message.objects.filter(thread=thread, parent_id__in=parent_ids)
        .order_by("id")
        .values_list(
            "id",
            "public_id",
            "parent_id",
            "role",
            "edits_id",
            "token_count",
            "erased_at",
            # The whole content: a sealed one opens only whole (cut below).
            "content",
        )
    )
    groups: dict[int, list[SiblingNode]] = {parent_id: [] for parent_id in parent_ids}
    for id_, public_id, parent_id, role, edits_id, tokens, erased_at, content in rows:
        groups[parent_id].append(
            SiblingNode(
                id=id_,
                public_id=public_id,
                parent_id=parent_id,
                role=role,
                edits_id=edits_id,
                token_count=tokens,
                erased=erased_at is not None,
                preview=stored_open(Message, "content", public_id, content)[:PREVIEW_CHARS],
            )
        )
    return groups


# Each step picks the newest child through the index on ``parent_id``. (Written as MAX(id),
# PostgreSQL would walk the primary key backwards looking for a child, which costs the size of
# the table per step instead of the size of the sibling group.)
_DESCENT_SQL = f"""
WITH RECURSIVE walk(id, n) AS (
    SELECT id, 1 FROM {MESSAGE_TABLE} WHERE id = %s AND thread_id + 0 = %s
    UNION ALL
    SELECT (
        SELECT c.id FROM {MESSAGE_TABLE} c WHERE c.parent_id = walk.id
        ORDER BY c.created_at DESC, c.id DESC LIMIT 1
    ), walk.n + 1
    FROM walk
    WHERE walk.id IS NOT NULL AND walk.n < %s
)
SELECT id, n FROM walk WHERE id IS NOT NULL
"""


def branch_descent(*, thread: Thread, start: Message, limit: int) -> list[int]:
    """Ids of the branch from ``start`` down, following the newest child, at most ``limit``.

    One query; each step is an index lookup on ``parent_id``. Returns ``[start.id, …]`` in
    root → leaf order; the last id is the branch's tip when fewer than ``limit`` came back.
    """
    with connection.cursor() as cursor:
        cursor.execute(_DESCENT_SQL + " ORDER BY n", [start.pk, thread.pk, limit])
        return [row[0] for row in cursor.fetchall()]


@dataclass(frozen=True)
class BranchEnds:
    """Where a branch through ``start`` ends (``tip``) and the node ``window`` steps below
    ``start`` (or the tip when the branch is shorter): the end of a page showing the fork."""

    tip_id: int
    window_end_id: int


def branch_ends(*, thread: Thread, start: Message, window: int, max_depth: int) -> BranchEnds:
    """The tip of the newest-child branch through ``start`` and the end of its first window.

    One query that returns two rows; the walk stops after ``max_depth`` steps.
    """
    sql = _DESCENT_SQL + (
        " AND (n = %s OR n = (SELECT MAX(n) FROM walk WHERE id IS NOT NULL)) ORDER BY n"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [start.pk, thread.pk, max_depth, max(window, 1)])
        rows = cursor.fetchall()
    return BranchEnds(tip_id=rows[-1][0], window_end_id=rows[0][0])
