"""The stored form of a record's items (``compaction.item_runs``): runs of plain messages that
follow one another on the path become one range, and expand back to the same items."""

from compaction.item_runs import PathRow, items_compact, items_expand


def _message(public_id: str, role: str = "user", tokens: int = 10, **extra) -> dict:
    return {"kind": "message", "id": public_id, "role": role, "tokens": tokens, **extra}


# A path root (0) → m1 → … → m6, and m9 on another branch under m2 (depth 3 like m3).
ROWS = {
    pk: PathRow(pk - 1 if pk > 1 else None, f"msg_{pk}", "user" if pk % 2 else "assistant", pk)
    for pk in range(1, 7)
} | {9: PathRow(2, "msg_9", "user", 9)}
PK_OF = {row.public_id: pk for pk, row in ROWS.items()}
DEPTH = {f"msg_{pk}": pk for pk in range(1, 7)} | {"msg_9": 3}


def _shown(*pks: int, **extra_by_pk: dict) -> list[dict]:
    return [
        _message(
            ROWS[pk].public_id, ROWS[pk].role, ROWS[pk].token_count, **extra_by_pk.get(f"m{pk}", {})
        )
        for pk in pks
    ]


def test_a_run_on_the_path_is_stored_as_one_range_and_expands_back():
    system = {"kind": "system", "hash": "ab" * 32, "tokens": 5}
    items = [system, *_shown(2, 3, 4, 5)]

    stored = items_compact(items, DEPTH.__getitem__)

    assert stored == [
        system,
        {"kind": "messages", "first_id": "msg_2", "last_id": "msg_5", "count": 4},
    ]
    assert items_expand(stored, PK_OF, ROWS) == items


def test_items_of_their_own_and_gaps_in_depth_break_the_run():
    items = [
        *_shown(1, m1={"anchor": True}),
        *_shown(3, 4, m4={"elided": True, "original_tokens": 400}),
        *_shown(5),
        {"kind": "retrieved", "ref": "kb/1", "hash": "cd" * 32, "tokens": 3},
        *_shown(6),
    ]

    stored = items_compact(items, DEPTH.__getitem__)

    # Nothing is a run of two: every message stays an item of its own.
    assert stored == items
    assert items_expand(stored, PK_OF, ROWS) == items


def test_messages_at_consecutive_depths_form_a_run_only_in_path_order():
    items = _shown(5, 6, 1, 2)

    stored = items_compact(items, DEPTH.__getitem__)

    assert stored == [
        {"kind": "messages", "first_id": "msg_5", "last_id": "msg_6", "count": 2},
        {"kind": "messages", "first_id": "msg_1", "last_id": "msg_2", "count": 2},
    ]
    assert items_expand(stored, PK_OF, ROWS) == items


def test_a_range_expands_along_parents_not_ids():
    """m9 hangs under m2 on another branch: the range m1 … m9 is m1, m2, m9."""
    stored = [{"kind": "messages", "first_id": "msg_1", "last_id": "msg_9", "count": 3}]

    assert [item["id"] for item in items_expand(stored, PK_OF, ROWS)] == ["msg_1", "msg_2", "msg_9"]
