"""The stored form of a record's items (``compaction.item_runs``): runs of plain messages that
follow one another on the path become one range by primary key, the memo is named by key, and
both expand back to the same items; records in the older form (ranges by public id, whole memo
items) expand the same way."""

from compaction.item_runs import MemoRow, PathRow, Shown, items_compact, items_expand


def _message(public_id: str, role: str = "user", tokens: int = 10, **extra) -> dict:
    return {"kind": "message", "id": public_id, "role": role, "tokens": tokens, **extra}


# A path root (0) → m1 → … → m6, and m9 on another branch under m2 (depth 3 like m3).
ROWS = {
    pk: PathRow(pk - 1 if pk > 1 else None, f"msg_{pk}", "user" if pk % 2 else "assistant", pk)
    for pk in range(1, 7)
} | {9: PathRow(2, "msg_9", "user", 9)}
PK_OF = {row.public_id: pk for pk, row in ROWS.items()}
SHOWN = {f"msg_{pk}": Shown(pk, pk) for pk in range(1, 7)} | {"msg_9": Shown(9, 3)}
MEMO = {
    "kind": "summary",
    "id": "sum_7",
    "first_id": "msg_1",
    "last_id": "msg_2",
    "tokens": 40,
    "header": 2,
}
MEMOS = {7: MemoRow("sum_7", "msg_1", "msg_2")}


def _shown(*pks: int, **extra_by_pk: dict) -> list[dict]:
    return [
        _message(
            ROWS[pk].public_id, ROWS[pk].role, ROWS[pk].token_count, **extra_by_pk.get(f"m{pk}", {})
        )
        for pk in pks
    ]


def _compact(items: list[dict]) -> list[dict]:
    return items_compact(items, SHOWN.__getitem__, {"sum_7": 7})


def test_a_run_on_the_path_is_one_range_by_key_and_the_memo_its_key():
    system = {"kind": "system", "hash": "ab" * 32, "tokens": 5}
    items = [system, MEMO, *_shown(3, 4, 5)]

    stored = _compact(items)

    assert stored == [
        system,
        {"kind": "summary", "pk": 7, "tokens": 40, "header": 2},
        {"kind": "messages", "first": 3, "last": 5, "count": 3},
    ]
    assert items_expand(stored, {}, ROWS, MEMOS) == items


def test_a_single_plain_message_is_a_range_of_one():
    items = _shown(1, m1={"anchor": True}) + _shown(5)

    stored = _compact(items)

    assert stored[1] == {"kind": "messages", "first": 5, "last": 5, "count": 1}
    assert items_expand(stored, {}, ROWS) == items


def test_items_of_their_own_and_gaps_in_depth_break_the_run():
    items = [
        *_shown(1, m1={"anchor": True}),
        *_shown(3, 4, m4={"elided": True, "original_tokens": 400}),
        *_shown(5),
        {"kind": "retrieved", "ref": "kb/1", "hash": "cd" * 32, "tokens": 3},
        *_shown(6),
    ]

    stored = _compact(items)

    assert [item["kind"] for item in stored] == [
        "message",
        "messages",
        "message",
        "messages",
        "retrieved",
        "messages",
    ]
    assert items_expand(stored, {}, ROWS) == items


def test_messages_at_consecutive_depths_form_a_run_only_in_path_order():
    items = _shown(5, 6, 1, 2)

    stored = _compact(items)

    assert stored == [
        {"kind": "messages", "first": 5, "last": 6, "count": 2},
        {"kind": "messages", "first": 1, "last": 2, "count": 2},
    ]
    assert items_expand(stored, {}, ROWS) == items


def test_a_range_expands_along_parents_not_ids():
    """m9 hangs under m2 on another branch: the range m1 … m9 is m1, m2, m9."""
    stored = [{"kind": "messages", "first": 1, "last": 9, "count": 3}]

    assert [item["id"] for item in items_expand(stored, {}, ROWS)] == ["msg_1", "msg_2", "msg_9"]


def test_records_in_the_older_form_expand_the_same():
    """Ranges by public id and whole memo items, as written before integer keys."""
    items = [MEMO, *_shown(3, 4, 5)]
    older = [MEMO, {"kind": "messages", "first_id": "msg_3", "last_id": "msg_5", "count": 3}]

    assert items_expand(older, PK_OF, ROWS, MEMOS) == items


def test_a_memo_no_longer_there_is_shown_gone_not_dropped():
    stored = [{"kind": "summary", "pk": 8, "tokens": 40, "header": 2}]

    [shown] = items_expand(stored, {}, ROWS, MEMOS)

    assert shown == {
        "kind": "summary",
        "id": "sum_pk8",
        "first_id": "",
        "last_id": "",
        "tokens": 40,
        "header": 2,
    }


def test_a_recalled_message_is_its_key_and_the_excerpts_tokens():
    """A recalled item's tokens are the quoted excerpt's, not the row's: they stay."""
    recalled = {"kind": "recalled", "id": "msg_1", "role": "user", "tokens": 77}
    items = [recalled, *_shown(5, 6)]

    stored = items_compact(items, SHOWN.__getitem__, {}, {"msg_1": 1})

    assert stored[0] == {"kind": "recalled", "pk": 1, "tokens": 77}
    assert items_expand(stored, {}, ROWS) == items


def test_a_recalled_message_no_longer_there_is_shown_gone_not_dropped():
    stored = [{"kind": "recalled", "pk": 8, "tokens": 30}]

    assert items_expand(stored, {}, ROWS) == [
        {"kind": "recalled", "id": "msg_pk8", "role": "", "tokens": 30}
    ]
