"""The stored form of a record's items: the verbatim turns as path ranges, not one item each.

An input shows the recent turns verbatim: one contiguous stretch of the path, which the path
itself already names. Storing an item per message (id, role, token count) made the assembly
record the largest row of a turn — larger than the turn's messages. So the stored items
(``AssemblyRecord.items``) replace each run of two or more plain message items that follow one
another on the path (each the parent of the next) by one range item::

    {"kind": "messages", "first_id": "msg_…", "last_id": "msg_…", "count": n}

and the readers (replay, the admin page, exports) expand it again from the path: the ``count``
messages ending at ``last_id``, whose roles and token counts are the ones the record showed
(a message's token count is fixed at write; erasure keeps the row). Items with anything of
their own (an anchor, an elided or uncalled tool result) stay as they are, as do the items of
records that keep their rendered input (erasure matches those by id). Pure functions; the
rows come from ``compaction.selectors.items_expanded``.
"""

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

RUN = "messages"
_PLAIN = frozenset({"kind", "id", "role", "tokens"})


class PathRow(NamedTuple):
    parent_id: int | None
    public_id: str
    role: str
    token_count: int


def _plain(item: Mapping[str, Any]) -> bool:
    return item["kind"] == "message" and item.keys() == _PLAIN


def items_compact(
    items: Sequence[dict[str, Any]], depth_of: Callable[[str], int]
) -> list[dict[str, Any]]:
    """``items`` with each path-consecutive run of plain messages as one range item.
    ``depth_of`` gives a shown message's depth (all shown messages are on one path, so
    consecutive depths mean parent and child)."""
    stored: list[dict[str, Any]] = []
    run: list[dict[str, Any]] = []

    def close() -> None:
        if len(run) > 1:
            stored.append(
                {"kind": RUN, "first_id": run[0]["id"], "last_id": run[-1]["id"], "count": len(run)}
            )
        else:
            stored.extend(run)
        run.clear()

    for item in items:
        if not _plain(item):
            close()
            stored.append(item)
            continue
        if run and depth_of(item["id"]) != depth_of(run[-1]["id"]) + 1:
            close()
        run.append(item)
    close()
    return stored


def run_ends(items: Sequence[Mapping[str, Any]]) -> set[str]:
    """The public ids that bound the range items of ``items``."""
    return {item[key] for item in items if item["kind"] == RUN for key in ("first_id", "last_id")}


def items_expand(
    items: Sequence[dict[str, Any]], pk_of: Mapping[str, int], rows: Mapping[int, PathRow]
) -> list[dict[str, Any]]:
    """``items`` with each range item replaced by its messages, read from ``rows`` (the
    thread's messages by primary key, at least those the ranges span). A range whose messages
    are no longer all there expands to the ones found."""
    expanded: list[dict[str, Any]] = []
    for item in items:
        if item["kind"] != RUN:
            expanded.append(item)
            continue
        run: list[dict[str, Any]] = []
        pk = pk_of.get(item["last_id"])
        while pk in rows and len(run) < item["count"]:
            row = rows[pk]
            run.append(
                {
                    "kind": "message",
                    "id": row.public_id,
                    "role": row.role,
                    "tokens": row.token_count,
                }
            )
            pk = row.parent_id
        expanded.extend(reversed(run))
    return expanded
