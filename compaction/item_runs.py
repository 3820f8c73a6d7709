"""The stored form of a record's items: the path's messages and the memo by primary key.

An input shows the recent turns verbatim: one contiguous stretch of the path, which the path
itself already names, and a memo, whose row already names its range. Storing an item per
message (public id, role, token count) made the assembly record the largest row of a turn —
larger than the turn's messages. So the stored items (``AssemblyRecord.items``) replace each
run of one or more plain message items that follow one another on the path (each the parent of
the next) by one range item, by primary key (the record pins the thread)::

    {"kind": "messages", "first": 1201, "last": 1209, "count": 9}

the memo item by its primary key with what the row does not hold::

    {"kind": "summary", "pk": 57, "tokens": 512, "header": 1}

and a recalled message by its primary key with its token count (the quoted excerpt's, which is
not the row's; its public id and role are the row's)::

    {"kind": "recalled", "pk": 733, "tokens": 253}

The readers (replay, the admin page, exports) expand them again: a range from the path (the
``count`` messages ending at ``last``, whose roles and token counts are the ones the record
showed — a message's token count is fixed at write and erasure keeps the row), the memo from
its row (public id and range, fixed at creation), a recalled message from its row. Items with
anything of their own (an anchor, an elided or uncalled tool result) stay as they are, as do
the items of records that keep their rendered input (erasure matches those by id).

Records written before this form hold ranges by public id (``first_id``/``last_id``, two or
more messages), whole memo items and whole recalled items; they expand the same way. Pure
functions; the rows come from ``compaction.selectors.items_expanded``.
"""

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

RUN = "messages"
RECALLED = "recalled"
_PLAIN = frozenset({"kind", "id", "role", "tokens"})
_SUMMARY_FROM_ROW = ("id", "first_id", "last_id")


class PathRow(NamedTuple):
    parent_id: int | None
    public_id: str
    role: str
    token_count: int


class MemoRow(NamedTuple):
    public_id: str
    first_public_id: str
    last_public_id: str


class Shown(NamedTuple):
    """A shown message's primary key and depth (consecutive depths on one path mean parent
    and child)."""

    pk: int
    depth: int


def _plain(item: Mapping[str, Any], kind: str = "message") -> bool:
    return item["kind"] == kind and item.keys() == _PLAIN


def items_compact(
    items: Sequence[dict[str, Any]],
    shown: Callable[[str], Shown],
    memo_pk: Mapping[str, int],
    recalled_pk: Mapping[str, int] | None = None,
) -> list[dict[str, Any]]:
    """``items`` with each path-consecutive run of plain messages as one range item, the
    memo and the recalled messages by primary key. ``shown`` gives a shown message's key and
    depth (all shown messages are on one path); ``memo_pk`` the memo's primary key by public
    id, ``recalled_pk`` the recalled messages'."""
    recalled_pk = recalled_pk or {}
    stored: list[dict[str, Any]] = []
    run: list[Shown] = []

    def close() -> None:
        if run:
            stored.append({"kind": RUN, "first": run[0].pk, "last": run[-1].pk, "count": len(run)})
        run.clear()

    for item in items:
        if not _plain(item):
            close()
            stored.append(_recalled_stored(item, recalled_pk) or _memo_stored(item, memo_pk))
            continue
        row = shown(item["id"])
        if run and row.depth != run[-1].depth + 1:
            close()
        run.append(row)
    close()
    return stored


def _memo_stored(item: dict[str, Any], memo_pk: Mapping[str, int]) -> dict[str, Any]:
    if item["kind"] != "summary" or item["id"] not in memo_pk:
        return item
    rest = {key: value for key, value in item.items() if key not in ("kind", *_SUMMARY_FROM_ROW)}
    return {"kind": "summary", "pk": memo_pk[item["id"]], **rest}


def _recalled_stored(item: dict[str, Any], recalled_pk: Mapping[str, int]) -> dict[str, Any] | None:
    if not _plain(item, RECALLED) or item["id"] not in recalled_pk:
        return None
    return {"kind": RECALLED, "pk": recalled_pk[item["id"]], "tokens": item["tokens"]}


def run_ends(items: Sequence[Mapping[str, Any]]) -> set[str]:
    """The public ids that bound the range items of ``items`` in the older form."""
    return {
        item[key]
        for item in items
        if item["kind"] == RUN and "last_id" in item
        for key in ("first_id", "last_id")
    }


def run_end_pks(items: Sequence[Mapping[str, Any]]) -> set[int]:
    """The primary keys that bound the range items of ``items``."""
    return {
        item[key]
        for item in items
        if item["kind"] == RUN and "last" in item
        for key in ("first", "last")
    }


def memo_pks(items: Sequence[Mapping[str, Any]]) -> set[int]:
    """The primary keys of the memos ``items`` names by key."""
    return {item["pk"] for item in items if item["kind"] == "summary" and "pk" in item}


def recalled_pks(items: Sequence[Mapping[str, Any]]) -> set[int]:
    """The primary keys of the messages ``items`` recalls by key."""
    return {item["pk"] for item in items if item["kind"] == RECALLED and "pk" in item}


def items_expand(
    items: Sequence[dict[str, Any]],
    pk_of: Mapping[str, int],
    rows: Mapping[int, PathRow],
    memos: Mapping[int, MemoRow] | None = None,
) -> list[dict[str, Any]]:
    """``items`` with each range item replaced by its messages, read from ``rows`` (the
    thread's messages by primary key, at least those the ranges span and those recalled by
    key; ``pk_of`` maps the older form's public ids to keys), and each memo named by key
    filled from ``memos``. A range whose messages are no longer all there expands to the ones
    found; a memo or a recalled message no longer there keeps its key (replay then reports it
    gone)."""
    memos = memos or {}
    expanded: list[dict[str, Any]] = []
    for item in items:
        if item["kind"] == "summary" and "pk" in item:
            expanded.append(_memo_shown(item, memos.get(item["pk"])))
        elif item["kind"] == RECALLED and "pk" in item:
            expanded.append(_recalled_shown(item, rows.get(item["pk"])))
        elif item["kind"] != RUN:
            expanded.append(item)
        else:
            last = item["last"] if "last" in item else pk_of.get(item["last_id"])
            expanded.extend(_run(last, item["count"], rows))
    return expanded


def _memo_shown(item: dict[str, Any], memo: MemoRow | None) -> dict[str, Any]:
    rest = {key: value for key, value in item.items() if key not in ("kind", "pk")}
    if memo is None:
        # Memos go only with their thread; a record cannot outlive it. Shown as gone.
        return {
            "kind": "summary",
            "id": f"sum_pk{item['pk']}",
            "first_id": "",
            "last_id": "",
            **rest,
        }
    return {
        "kind": "summary",
        "id": memo.public_id,
        "first_id": memo.first_public_id,
        "last_id": memo.last_public_id,
        **rest,
    }


def _recalled_shown(item: dict[str, Any], row: PathRow | None) -> dict[str, Any]:
    # Messages go only with their thread; shown as gone, as a memo is.
    public_id, role = (row.public_id, row.role) if row else (f"msg_pk{item['pk']}", "")
    return {"kind": RECALLED, "id": public_id, "role": role, "tokens": item["tokens"]}


def _run(last: int | None, count: int, rows: Mapping[int, PathRow]) -> list[dict[str, Any]]:
    run: list[dict[str, Any]] = []
    pk = last
    while pk in rows and len(run) < count:
        row = rows[pk]
        run.append(
            {"kind": "message", "id": row.public_id, "role": row.role, "tokens": row.token_count}
        )
        pk = row.parent_id
    return list(reversed(run))
