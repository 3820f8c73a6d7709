"""Exports: the documented schema, every branch, round trips, scopes, audit, streaming."""

import gc
import io
import json
import tracemalloc
from pathlib import Path

import jsonschema
import pytest
from django.core.exceptions import PermissionDenied
from django.core.management import call_command
from django.core.management.color import no_style
from django.db import connection
from django.test.utils import CaptureQueriesContext

from audit.exports import SCHEMA, SECTIONS, export_begin
from auditlog.events import Actor
from auditlog.models import AuditEvent
from compaction.models import Summary
from tests.audit.conftest import branched_thread, ready_memo, visible
from tests.conftest import make_thread
from threads.models import Message

pytestmark = pytest.mark.django_db

SCHEMA_DOC = json.loads((Path(__file__).parents[2] / "audit" / "export_schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA_DOC)
LINE_VALIDATOR = jsonschema.Draft202012Validator(
    {"$defs": SCHEMA_DOC["$defs"], "$ref": "#/$defs/line"}
)


def body(response) -> str:
    assert response.status_code == 200, response.content
    return b"".join(response.streaming_content).decode()


def summary_of(thread, text: str = "memo") -> Summary:
    nodes = visible(thread)
    return ready_memo(thread, nodes[0:2], text, token_count=3)


def parse_jsonl(text: str) -> dict:
    """Rebuild the ``json`` document from JSON Lines (the two encodings carry the same data)."""
    lines = [json.loads(line) for line in text.splitlines()]
    for line in lines:
        LINE_VALIDATOR.validate(line)
    header, end = lines[0], lines[-1]
    assert header["type"] == "export"
    assert end["type"] == "end"
    doc = {k: v for k, v in header.items() if k != "type"}
    doc.update(threads=[], subject_events=[], deletion_requests=[], counts=end["counts"])
    threads = {}
    for line in lines[1:-1]:
        kind = line.pop("type")
        if kind == "thread":
            threads[line["id"]] = {
                **line,
                "messages": [],
                "summaries": [],
                "assemblies": [],
                "audit_events": [],
            }
            doc["threads"].append(threads[line["id"]])
        elif kind in ("subject_event", "deletion_request"):
            doc[f"{kind}s"].append(line)
        else:
            thread_id = line.pop("thread_id") if kind != "audit_event" else line["thread_id"]
            threads[thread_id][SECTIONS[kind]].append(line)
    return doc


def check_round_trip(doc: dict, threads: list) -> None:
    """Every node of every branch is there, with its parent and edit lineage intact."""
    VALIDATOR.validate(doc)
    assert doc["schema"] == SCHEMA
    assert [t["id"] for t in doc["threads"]] == [t.public_id for t in threads]
    for exported, thread in zip(doc["threads"], threads, strict=True):
        stored = visible(thread)
        by_id = {m["id"]: m for m in exported["messages"]}
        assert list(by_id) == [m.public_id for m in stored]
        for message in stored:
            row = by_id[message.public_id]
            assert row["content"] == message.content
            assert row["role"] == message.role
            parent = Message.objects.get(pk=message.parent_id)
            assert row["parent_id"] == (None if parent.role == "root" else parent.public_id)
            edits = message.edits.public_id if message.edits_id else None
            assert row["edits_id"] == edits
        leaves = set(by_id) - {m["parent_id"] for m in exported["messages"]}
        assert len(leaves) == 2, "both branches are exported"
        thread.refresh_from_db()
        assert exported["active_leaf_id"] == thread.active_leaf.public_id
    counts = doc["counts"]
    assert counts["thread"] == len(threads)
    assert counts["message"] == sum(len(t["messages"]) for t in doc["threads"])


def test_thread_export_has_every_branch_and_round_trips(acme_exporter):
    thread = branched_thread(acme_exporter.tenant)
    summary = summary_of(thread)

    doc = json.loads(body(acme_exporter.client.get(f"/api/v1/threads/{thread.public_id}/export")))

    check_round_trip(doc, [thread])
    [exported] = doc["threads"]
    assert [s["id"] for s in exported["summaries"]] == [summary.public_id]
    assert exported["summaries"][0]["covered_ids"] == summary.covered_ids
    actions = [e["action"] for e in exported["audit_events"]]
    assert actions[0] == "thread.created"
    assert "message.edited" in actions
    assert actions[-1] == "export.made"


def test_jsonl_carries_the_same_records(acme_exporter):
    thread = branched_thread(acme_exporter.tenant)
    summary_of(thread)
    url = f"/api/v1/threads/{thread.public_id}/export"

    as_json = json.loads(body(acme_exporter.client.get(url)))
    response = acme_exporter.client.get(url, {"format": "jsonl"})
    assert response["Content-Type"] == "application/x-ndjson"
    as_lines = parse_jsonl(body(response))

    check_round_trip(as_lines, [thread])
    assert as_lines["threads"][0]["messages"] == as_json["threads"][0]["messages"]
    assert as_lines["threads"][0]["summaries"] == as_json["threads"][0]["summaries"]


def test_user_export_covers_all_their_threads_only(acme_exporter):
    mine = [branched_thread(acme_exporter.tenant, user_ref="u-9") for _ in range(2)]
    branched_thread(acme_exporter.tenant, user_ref="someone-else")

    response = acme_exporter.client.get("/api/v1/exports", {"user_ref": "u-9"})
    doc = json.loads(body(response))

    check_round_trip(doc, mine)
    assert doc["subject"] == {"tenant": "acme", "user_ref": "u-9"}
    event = AuditEvent.objects.filter(action="export.made").latest("pk")
    assert event.details == {"format": "json", "user_ref": "u-9"}
    assert [e["action"] for e in doc["subject_events"]] == ["export.made"]


def test_exports_need_the_export_scope(acme, globex):
    thread = make_thread(acme.tenant, turns=2)
    for response in (
        acme.client.get(f"/api/v1/threads/{thread.public_id}/export"),
        acme.client.get("/api/v1/exports", {"user_ref": "user-1"}),
    ):
        assert response.status_code == 403
        assert response.json()["code"] == "missing_scope"
    assert not AuditEvent.objects.filter(action="export.made").exists()


def test_other_tenants_threads_are_not_found(acme_exporter, globex):
    theirs = make_thread(globex.tenant, turns=2, user_ref="user-1")
    response = acme_exporter.client.get(f"/api/v1/threads/{theirs.public_id}/export")
    assert response.status_code == 404
    doc = json.loads(body(acme_exporter.client.get("/api/v1/exports", {"user_ref": "user-1"})))
    assert doc["threads"] == []


def test_bad_export_parameters(acme_exporter):
    thread = make_thread(acme_exporter.tenant, turns=1)
    assert acme_exporter.client.get("/api/v1/exports").status_code == 400
    response = acme_exporter.client.get(
        f"/api/v1/threads/{thread.public_id}/export", {"format": "xml"}
    )
    assert response.status_code == 400
    assert response.json()["code"] == "invalid_format"


def test_export_history_command_to_stdout_and_file(acme, tmp_path, capsys):
    thread = branched_thread(acme.tenant)

    out = io.StringIO()
    call_command("export_history", "--thread", thread.public_id, stdout=out)
    check_round_trip(json.loads(out.getvalue()), [thread])

    target = tmp_path / "user.jsonl"
    call_command(
        "export_history",
        "--user-ref",
        "user-1",
        "--tenant",
        "acme",
        "--output",
        str(target),
        "--format",
        "jsonl",
    )
    check_round_trip(parse_jsonl(target.read_text()), [thread])
    progress = capsys.readouterr().err
    assert "6/6" in progress  # tqdm's bar counted every message
    events = AuditEvent.objects.filter(action="export.made").order_by("pk")
    assert [e.actor_id for e in events] == ["manage.py export_history"] * 2


def test_staff_export_needs_the_permission(acme, officer, support):
    thread = make_thread(acme.tenant, turns=1)
    with pytest.raises(PermissionDenied):
        export_begin(tenant=acme.tenant, actor=Actor.staff(support), thread=thread, user=support)
    export = export_begin(
        tenant=acme.tenant, actor=Actor.staff(officer), thread=thread, user=officer
    )
    assert json.loads("".join(export.chunks()))["counts"]["message"] == 1


def long_thread(tenant, n: int):
    """A thread of ``n`` messages in one chain, bulk-inserted (the services are not under test):
    explicit primary keys let each row name the previous one as its parent.
    """
    thread = make_thread(tenant)
    start = Message.objects.order_by("-pk").values_list("pk", flat=True).first() + 1
    Message.objects.bulk_create(
        [
            Message(
                pk=start + i,
                thread=thread,
                parent_id=thread.root_id if i == 0 else start + i - 1,
                role="user" if i % 2 == 0 else "assistant",
                content=f"message {i} " * 10,
                token_count=30,
                depth=i + 1,
            )
            for i in range(n)
        ],
        batch_size=1000,
    )
    with connection.cursor() as cursor:
        for sql in connection.ops.sequence_reset_sql(no_style(), [Message]):
            cursor.execute(sql)
    return thread


def export_peak_and_size(tenant, thread) -> tuple[int, int]:
    """The export's peak traced memory and the characters it wrote."""
    export = export_begin(tenant=tenant, actor=Actor.system("test"), thread=thread)
    export.batch = 50
    gc.collect()
    tracemalloc.start()
    size = sum(len(chunk) for chunk in export.chunks())
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak, size


def test_export_memory_does_not_grow_with_history(acme_exporter):
    small = long_thread(acme_exporter.tenant, 500)
    large = long_thread(acme_exporter.tenant, 5_000)

    # Each measured after a warm-up (per-process caches fill once), the least of three.
    peaks, sizes = {}, {}
    for name, thread in (("small", small), ("large", large)):
        export_peak_and_size(acme_exporter.tenant, thread)
        runs = [export_peak_and_size(acme_exporter.tenant, thread) for _ in range(3)]
        peaks[name] = min(peak for peak, _ in runs)
        sizes[name] = runs[0][1]

    # An export that kept its history would grow by at least the text it added (4,500 more
    # messages, about 2 MB); one batch alive at a time grows by a small part of it. (The peak
    # itself varies by a few hundred KB from run to run with what the process did before, so
    # a ratio of two peaks is not what is asserted.)
    growth = peaks["large"] - peaks["small"]
    assert growth < 0.25 * (sizes["large"] - sizes["small"]), (peaks, sizes)


def live_messages() -> int:
    return sum(1 for o in gc.get_objects() if type(o) is Message)


def test_export_holds_one_batch_of_messages_at_a_time(acme_exporter):
    thread = long_thread(acme_exporter.tenant, 1_000)
    export = export_begin(tenant=acme_exporter.tenant, actor=Actor.system("test"), thread=thread)
    export.batch = 50
    gc.collect()
    before = live_messages()  # whatever earlier tests of the process still hold

    alive = [live_messages() - before for _chunk in export.chunks()]

    assert len(alive) > 5
    assert max(alive) <= 50 + 1  # the batch, and the exported thread's active leaf


def test_export_reads_in_batches(acme_exporter):
    thread = long_thread(acme_exporter.tenant, 450)
    export = export_begin(tenant=acme_exporter.tenant, actor=Actor.system("t"), thread=thread)
    export.batch = 100
    with CaptureQueriesContext(connection) as queries:
        lines = "".join(export.chunks())
    assert json.loads(lines)["counts"]["message"] == 450
    message_queries = [
        q for q in queries if 'FROM "threads_message"' in q["sql"] and "LIMIT 100" in q["sql"]
    ]
    assert len(message_queries) == 5  # 4 full pages of 100 and the last 50
