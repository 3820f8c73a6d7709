"""POST /api/v1/threads/{id}/context: shapes, token arithmetic, memos, recording, linking."""

from auditlog.models import AuditEvent
from compaction import services as compaction_services
from compaction.curator import VERSION
from compaction.models import AssemblyRecord, ContentBlob, Summary
from compaction.rendering import MessagePayload, item_payload_key, render, rendered_hash
from compaction.replay import assembly_replay
from compaction.selectors import assembly_items, assembly_plan
from convmem.tokens import MESSAGE_OVERHEAD, REPLY_PRIMING, count_tokens
from tests.compaction.helpers import grow, post_context
from tests.conftest import SYSTEM, make_thread, path_ids
from threads import services
from threads.models import Message

SMALL = {"window_tokens": 900, "reserve_tokens": 100}


def _texts(record: AssemblyRecord, system: str | None = None, **blobs: str) -> dict[str, object]:
    """What a replay would look up for ``record``'s items."""
    texts: dict[str, object] = {}
    for item in assembly_items(record):
        key = item_payload_key(item)
        if item["kind"] == "message":
            m = Message.objects.get(public_id=key)
            texts[key] = MessagePayload(m.content, m.content_parts, m.tool_calls, m.tool_call_id)
        elif item["kind"] == "summary":
            texts[key] = Summary.objects.get(public_id=key).text
        else:
            texts[key] = ContentBlob.objects.get(tenant=record.tenant, sha256=key).text
    return texts


def test_it_shows_a_short_thread_whole(acme):
    thread = make_thread(acme.tenant)
    grow(thread, 4)

    r = post_context(acme.client, thread)

    assert r.status_code == 200, r.data
    ids = path_ids(thread)
    assert r.data["sections"]["recent"] == ids
    assert r.data["sections"]["dropped"] == []
    assert r.data["sections"]["memo"] is None
    assert r.data["sections"]["system"] is None
    assert r.data["memo_status"] == "none"
    contents = [m.content for m in Message.objects.filter(public_id__in=ids).order_by("id")]
    assert [m["content"] for m in r.data["messages"]] == contents
    assert [m["role"] for m in r.data["messages"]] == ["user", "assistant", "user", "assistant"]
    tokens = r.data["tokens"]
    recent = sum(
        m.token_count + MESSAGE_OVERHEAD for m in Message.objects.filter(public_id__in=ids)
    )
    assert tokens["recent"] == recent
    assert tokens["system"] == REPLY_PRIMING
    assert tokens["total"] == REPLY_PRIMING + recent
    assert (tokens["window"], tokens["reserve"]) == (8192, 1024)
    assert tokens["free"] == 8192 - 1024 - tokens["total"]


def test_it_records_the_assembly_as_ids_and_a_hash(acme):
    thread = make_thread(acme.tenant)
    grow(thread, 3)

    r = post_context(
        acme.client,
        thread,
        system="You are a helpful support agent.",
        retrieved=[{"ref": "kb/12", "content": "Refunds take 5 business days."}],
    )

    assert r.status_code == 200, r.data
    record = AssemblyRecord.objects.get(public_id=r.data["assembly_id"])
    assert record.thread == thread
    assert record.leaf_id == thread.active_leaf_id
    assert record.assembler_version == VERSION == r.data["assembler_version"]
    kinds = [item["kind"] for item in assembly_items(record)]
    # What changes every turn (retrieved) goes after the history, before the current turn.
    assert kinds == ["system", "message", "message", "retrieved", "message"]
    assert record.budget["window"] == 8192
    assert record.tokens_shown() == r.data["tokens"]
    assert record.rendered_hash == rendered_hash(r.data["messages"])
    assert record.rendered_pieces is None  # the text is not kept unless a profile asks
    event = AuditEvent.objects.get(action="assembly.recorded")
    assert event.object_ids == [record.public_id]
    assert "Refunds" not in str(event.details)
    # The texts that are not messages are kept (once per tenant) for a replay.
    assert ContentBlob.objects.filter(tenant=acme.tenant).count() == 2
    # A replay: the record's items plus the stored texts render the same input, same hash.
    replayed = render(assembly_items(record), _texts(record))
    assert replayed == r.data["messages"]
    assert rendered_hash(replayed) == record.rendered_hash


def test_the_record_stores_the_verbatim_turns_as_one_path_range(acme):
    """The stored items name the recent turns by their first and last key; the shown items
    (replay, exports, the admin page) are expanded from the path and replay still verifies."""
    thread = make_thread(acme.tenant)
    grow(thread, 9)

    r = post_context(acme.client, thread, system="Be brief.")

    record = AssemblyRecord.objects.get(public_id=r.data["assembly_id"])
    recent = r.data["sections"]["recent"]
    # Nothing changing every turn (recalled, retrieved) sits before the current turn here,
    # so the whole history and the current turn are one range.
    first, last = (Message.objects.get(public_id=recent[i]).pk for i in (0, -1))
    assert record.items[1:] == [{"kind": "messages", "first": first, "last": last, "count": 9}]
    shown = assembly_items(record)
    assert [item["id"] for item in shown if item["kind"] == "message"] == recent
    assert [item["role"] for item in shown[1:]] == ["user", "assistant"] * 4 + ["user"]
    assert shown[1:] == [
        {"kind": "message", "id": m.public_id, "role": m.role, "tokens": m.token_count}
        for m in Message.objects.filter(public_id__in=recent).order_by("id")
    ]
    assert assembly_replay(assembly=record).matches


def test_system_prompt_first_retrieved_before_the_recent_turns(acme):
    thread = make_thread(acme.tenant)
    grow(thread, 3)

    r = post_context(
        acme.client,
        thread,
        system="Be brief.",
        retrieved=[{"ref": "doc-1", "content": "alpha"}, {"ref": "doc-2", "content": "beta"}],
    )

    messages = r.data["messages"]
    assert messages[0] == {"role": "system", "content": "Be brief."}
    retrieved = [m["content"] for m in messages if m["content"].startswith("Retrieved (")]
    assert retrieved == ["Retrieved (doc-1):\nalpha", "Retrieved (doc-2):\nbeta"]
    assert messages[-1]["content"] == Message.objects.get(pk=thread.active_leaf_id).content
    assert r.data["sections"]["retrieved"] == ["doc-1", "doc-2"]
    expected_retrieved = sum(
        count_tokens(f"Retrieved ({ref}):\n{text}") + MESSAGE_OVERHEAD
        for ref, text in [("doc-1", "alpha"), ("doc-2", "beta")]
    )
    assert r.data["tokens"]["retrieved"] == expected_retrieved
    assert r.data["tokens"]["system"] == REPLY_PRIMING + count_tokens("Be brief.") + 4
    assert r.data["sections"]["system"]["tokens"] == count_tokens("Be brief.")


def test_over_budget_keeps_task_and_recent_and_requests_a_memo(acme):
    thread = make_thread(acme.tenant)
    grow(thread, 30)
    ids = path_ids(thread)

    r = post_context(acme.client, thread, **SMALL)

    assert r.status_code == 200, r.data
    sections = r.data["sections"]
    assert sections["recent"][-1] == ids[-1]
    assert sections["recent"] == ids[-len(sections["recent"]) :]
    assert len(sections["recent"]) >= 4
    assert sections["anchor"] == [ids[0]]
    assert sections["dropped"]
    assert set(sections["dropped"]).isdisjoint(sections["recent"])
    assert r.data["tokens"]["total"] + 100 <= 900
    assert r.data["memo_status"] == "pending"
    pending = Summary.objects.get(thread=thread)
    assert pending.status == "pending"
    assert sections["memo"] == {
        "summary_id": pending.public_id,
        "first_id": pending.first.public_id,
        "last_id": pending.last.public_id,
        "status": "pending",
        "chain_depth": 0,
    }
    assert r.data["pending_memo"] == sections["memo"]
    # The memo asked for ends before the last min_recent_turns (4): never the current turn.
    assert ids.index(pending.last.public_id) == len(ids) - 4 - 1
    assert AuditEvent.objects.filter(action="summary.requested").count() == 1

    again = post_context(acme.client, thread, **SMALL)

    assert again.data["memo_status"] == "pending"
    assert Summary.objects.filter(thread=thread).count() == 1


def test_a_ready_memo_not_shown_is_told_apart_from_no_memo(acme):
    thread = make_thread(acme.tenant)
    grow(thread, 30)
    assert post_context(acme.client, thread, window_tokens=8000).data["memo_status"] == "none"
    post_context(acme.client, thread, **SMALL)
    compaction_services.summary_write(summary_id=Summary.objects.get(thread=thread).pk)

    fits = post_context(acme.client, thread, window_tokens=8000)

    assert fits.data["memo_status"] == "not_shown"
    assert fits.data["sections"]["memo"] is None
    assert not fits.data["messages"][0]["content"].startswith("Summary of earlier")
    assert post_context(acme.client, thread, **SMALL).data["memo_status"] == "ready"


def test_an_older_record_replays_with_the_memo_header_it_was_made_with():
    item = {"kind": "summary", "id": "sum_1", "first_id": "msg_a", "last_id": "msg_b", "tokens": 9}

    old = render([item], {"sum_1": "Text."})
    new = render([{**item, "header": 2}], {"sum_1": "Text."})

    assert old[0]["content"] == "Summary of earlier conversation (messages msg_a…msg_b):\nText."
    assert new[0]["content"] == "Summary of earlier conversation:\nText."


def test_an_input_that_loses_the_middle_says_so_in_memo_lag(acme):
    """No memo is written yet (a late worker): the input shows the task statement and the
    recent turns, and what lies between is lost -- counted in the response and the record.
    Once the memo is written, nothing is lost."""
    thread = make_thread(acme.tenant)
    grow(thread, 30)

    late = post_context(acme.client, thread, **SMALL)

    dropped = late.data["sections"]["dropped"]
    assert late.data["memo_status"] == "pending"
    assert dropped
    lag = late.data["memo_lag"]
    assert lag["turns"] == len(dropped)
    assert (lag["first_id"], lag["last_id"]) == (dropped[0], dropped[-1])
    counts = Message.objects.filter(public_id__in=dropped).values_list("token_count", flat=True)
    assert lag["tokens"] == sum(counts)
    record = AssemblyRecord.objects.get(public_id=late.data["assembly_id"])
    assert record.plan["memo_lag"] == lag

    compaction_services.summary_write(summary_id=Summary.objects.get(thread=thread).pk)
    caught_up = post_context(acme.client, thread, **SMALL)

    assert caught_up.data["memo_status"] == "ready"
    assert caught_up.data["memo_lag"] == {
        "turns": 0,
        "tokens": 0,
        "first_id": None,
        "last_id": None,
    }


def test_next_context_uses_the_written_memo(acme):
    thread = make_thread(acme.tenant)
    grow(thread, 30)
    post_context(acme.client, thread, **SMALL)
    pending = Summary.objects.get(thread=thread)

    written = compaction_services.summary_write(summary_id=pending.pk)

    assert written is not None
    assert written.status == "ready"
    r = post_context(acme.client, thread, **SMALL)
    assert r.data["memo_status"] == "ready"
    memo = r.data["sections"]["memo"]
    assert memo["summary_id"] == written.public_id
    assert memo["status"] == "ready"
    header = "Summary of earlier conversation:\n"  # no internal ids (issue 20)
    assert r.data["messages"][0] == {"role": "system", "content": header + written.text}
    assert "ORD-" in written.text
    assert r.data["tokens"]["memo"] == written.token_count + MESSAGE_OVERHEAD
    assert written.token_count == count_tokens(header + written.text)
    assert r.data["tokens"]["total"] + 100 <= 900
    # Nothing the memo covers is dropped; the recent turns may overlap its end (the memo then
    # stands for what precedes them), and nothing between the two is lost.
    covered = set(written.covered_ids)
    recent = r.data["sections"]["recent"]
    assert covered.isdisjoint(r.data["sections"]["dropped"])
    assert r.data["sections"]["dropped"] == []
    assert recent[-1] not in covered
    path = path_ids(thread)
    record_plan = assembly_plan(AssemblyRecord.objects.get(public_id=r.data["assembly_id"]))
    assert path.index(record_plan["covered"]["last_id"]) == path.index(recent[0]) - 1
    record = AssemblyRecord.objects.get(public_id=r.data["assembly_id"])
    assert assembly_items(record)[0]["kind"] == "summary"
    assert render(assembly_items(record), _texts(record)) == r.data["messages"]


def test_writing_twice_writes_once(acme):
    thread = make_thread(acme.tenant)
    grow(thread, 30)
    post_context(acme.client, thread, **SMALL)
    pending = Summary.objects.get(thread=thread)

    first = compaction_services.summary_write(summary_id=pending.pk)
    second = compaction_services.summary_write(summary_id=pending.pk)

    assert first is not None
    assert second is None
    assert Summary.objects.filter(thread=thread).count() == 1
    assert AuditEvent.objects.filter(action="summary.written").count() == 1


def test_a_specific_leaf_assembles_that_branch(acme):
    thread = make_thread(acme.tenant)
    grow(thread, 4)
    ids = path_ids(thread)
    services.message_edit(thread=thread, actor=SYSTEM, message_public_id=ids[2], content="Edit!")

    r = post_context(acme.client, thread, leaf_id=ids[3])

    assert r.data["sections"]["recent"] == ids
    assert AssemblyRecord.objects.get(public_id=r.data["assembly_id"]).leaf.public_id == ids[3]


def test_the_task_statement_is_found_after_an_edit_of_the_first_message(acme):
    thread = make_thread(acme.tenant)
    grow(thread, 2)
    first = path_ids(thread)[0]
    edited = services.message_edit(
        thread=thread, actor=SYSTEM, message_public_id=first, content="The real task: ORD-77."
    )
    grow(thread, 40, start=1)

    r = post_context(acme.client, thread, **SMALL)

    assert r.data["sections"]["anchor"] == [edited.public_id]
    anchor = [m for m in r.data["messages"] if m["content"] == "The real task: ORD-77."]
    assert anchor == [{"role": "user", "content": "The real task: ORD-77."}]


def test_an_answer_appended_with_the_assembly_id_is_linked(acme, idem):
    thread = make_thread(acme.tenant)
    grow(thread, 1)
    assembly_id = post_context(acme.client, thread).data["assembly_id"]

    r = acme.client.post(
        f"/api/v1/threads/{thread.public_id}/messages",
        {"role": "assistant", "content": "Here you go.", "assembly_id": assembly_id},
        format="json",
        **idem(),
    )

    assert r.status_code == 201, r.data
    assert r.data["assembly_id"] == assembly_id
    answer = Message.objects.get(public_id=r.data["id"])
    assert answer.assembly_public_id == assembly_id
    assert list(Message.objects.filter(assembly_public_id=assembly_id)) == [answer]
