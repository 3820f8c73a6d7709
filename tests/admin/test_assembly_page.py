"""The assembly page: the recorded items in order, the budget bar, and replay with the hash."""

from django.test import Client
from django.urls import reverse

from auditlog.models import AuditEvent
from compaction.admin_assembly import budget_bar
from tests.admin.conftest import MemoThread
from tests.compaction.helpers import grow, post_context
from tests.conftest import make_thread


def assembly_url(memo_thread: MemoThread) -> str:
    return reverse("admin:compaction_assemblyrecord_change", args=[memo_thread.assembly.public_id])


def test_it_lists_the_items_in_order(support: Client, memo_thread: MemoThread):
    response = support.get(assembly_url(memo_thread))

    assert response.status_code == 200
    # Recalled messages (compaction.recall) come between the memo and the retrieved items.
    items = [v for v in response.context["items"] if v.item["kind"] != "recalled"]
    kinds = [v.item["kind"] for v in items]
    # The stable prefix first (system, memo, history), then what changes every turn (retrieved),
    # then the current turn.
    assert kinds[:2] == ["system", "summary"]
    assert kinds[-2:] == ["retrieved", "message"]
    assert items[1].summary.public_id == memo_thread.summary.public_id
    assert items[0].content == "You are the support agent of a furniture shop."
    assert items[-2].content == "Lost parcels: refund or resend."
    html = response.content.decode()
    memo = memo_thread.summary
    assert f"stands for {len(memo.covered_ids)} messages" in html
    assert "kb:lost-parcels" in html
    assert AuditEvent.objects.filter(action="thread.viewed", actor_id="sam-support").exists()


def test_the_budget_bar_adds_up_to_the_window(support: Client, memo_thread: MemoThread):
    tokens = memo_thread.assembly.tokens_shown()

    bar = {
        segment.key: segment for segment in support.get(assembly_url(memo_thread)).context["bar"]
    }

    assert {"system", "memo", "recent", "retrieved", "reserve", "free"} <= bar.keys()
    assert sum(s.tokens for s in bar.values()) == tokens["window"]
    assert bar["memo"].tokens == tokens["memo"] > 0
    assert abs(sum(s.percent for s in bar.values()) - 100) < 0.1


def test_budget_bar_shows_an_anchor_only_when_there_is_one():
    tokens = {"window": 100, "reserve": 10, "system": 5, "memo": 0, "anchor": 0, "recent": 50}
    keys = [s.key for s in budget_bar({**tokens, "retrieved": 0, "total": 55})]

    assert keys == ["system", "memo", "recent", "retrieved", "reserve", "free"]
    assert budget_bar({**tokens, "anchor": 7, "retrieved": 0, "total": 62})[2].key == "anchor"


def test_replay_checks_the_hash(support: Client, memo_thread: MemoThread):
    response = support.get(assembly_url(memo_thread), {"replay": "1"})

    replay = response.context["replay"]
    assert replay.matches, replay.reason
    assert "Replay matches the recorded hash" in response.content.decode()


def test_it_shows_what_the_curator_decided(support: Client, memo_thread: MemoThread):
    response = support.get(assembly_url(memo_thread))

    plan = response.context["plan"]
    assert plan.memo_status == "ready"
    assert plan.covered["count"] > 0
    assert plan.dropped_count == 0
    html = response.content.decode()
    assert 'id="decisions"' in html
    # One sentence that agrees with the memo's own range: how many messages it stands for, how
    # many of them this input leaves out, and how many it also shows verbatim.
    memo = plan.memo
    assert memo is not None
    shown = {v.item["id"] for v in response.context["items"] if v.item["kind"] == "message"}
    also = len(shown.intersection(memo.covered_ids))
    assert plan.memo_also_verbatim == also
    decided = " ".join(html.split('id="memo-status"')[1].split("</dd>")[0].split())
    assert f"The memo stands for {len(memo.covered_ids)} messages" in decided
    if also:
        assert f"in place of the {len(memo.covered_ids) - also} of them" in decided
        assert f"the other {also} are also among the recent turns" in decided
    else:
        assert "in place of all of them" in decided


def test_it_lists_dropped_messages_and_the_memo_asked_for(support: Client, acme):
    thread = make_thread(acme.tenant)
    grow(thread, 40)
    r = post_context(acme.client, thread, window_tokens=600, reserve_tokens=100)
    url = reverse("admin:compaction_assemblyrecord_change", args=[r.data["assembly_id"]])

    response = support.get(url)

    plan = response.context["plan"]
    assert plan.dropped_count == len(r.data["sections"]["dropped"]) > 0
    assert [m.public_id for m in plan.dropped] == r.data["sections"]["dropped"][:50]
    assert plan.requested["summary_id"] == r.data["pending_memo"]["summary_id"]
    assert plan.requested_now.status == "pending"
    html = response.content.decode()
    assert r.data["sections"]["dropped"][0] in html
    assert r.data["pending_memo"]["summary_id"] in html
    assert "being written; not shown yet" in html
    assert plan.memo_lag["turns"] == len(r.data["sections"]["dropped"])  # no memo yet: all lost
    assert "newer than the memo shown were left out" in html


def test_the_list_counts_recent_inputs_that_lost_the_middle(support: Client, acme):
    thread = make_thread(acme.tenant)
    grow(thread, 40)
    post_context(acme.client, thread, window_tokens=6000, reserve_tokens=100)  # it all fits
    post_context(acme.client, thread, window_tokens=600, reserve_tokens=100)  # no memo yet

    response = support.get(reverse("admin:compaction_assemblyrecord_changelist"))

    lost = response.context["lost_middle"]
    assert (lost.lost, lost.inputs) == (1, 2)
    assert "1 of the newest 2" in response.content.decode()


def test_a_memo_shown_without_its_corrected_lines_says_which(support: Client, memo_thread):
    record = memo_thread.assembly
    lines = memo_thread.summary.text.split("\n")
    left_out = lines[1]
    items = [
        {**item, "superseded_lines": [1]} if item["kind"] == "summary" else item
        for item in record.items
    ]
    type(record).objects.filter(pk=record.pk).update(items=items)

    response = support.get(assembly_url(memo_thread))

    (memo,) = [v for v in response.context["items"] if v.item["kind"] == "summary"]
    assert memo.left_out == [left_out]
    assert left_out not in memo.content
    assert "1 line of the memo left out: a turn shown after the memo corrects it" in (
        response.content.decode()
    )
