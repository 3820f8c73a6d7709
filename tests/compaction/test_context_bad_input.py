"""Bad context requests: a clear 400 (or 404 for another tenant), and nothing recorded."""

import pytest

from convmem.models import ModelProfile
from tests.compaction.helpers import Recorded, grow, post_context
from tests.conftest import make_thread, path_ids


@pytest.fixture
def thread(acme):
    thread = make_thread(acme.tenant)
    grow(thread, 6)
    return thread


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"window_tokens": 1000, "reserve_tokens": 1000}, "reserve_exceeds_window"),
        ({"window_tokens": 1000, "reserve_tokens": 5000}, "reserve_exceeds_window"),
        ({"reserve_tokens": 8192}, "reserve_exceeds_window"),
        ({"window_tokens": -5}, "invalid"),
        ({"window_tokens": 0}, "invalid"),
        ({"window_tokens": 10**12}, "invalid"),
        ({"window_tokens": 2_000_001}, "invalid"),
        ({"reserve_tokens": -1}, "invalid"),
        ({"window_tokens": "many"}, "invalid"),
        ({"window_tokens": True}, "invalid"),
        ({"system": "a\u0000b"}, "invalid"),
        ({"retrieved": [{"ref": "x"}]}, "invalid"),
        ({"retrieved": [{"ref": "", "content": "y"}]}, "invalid"),
        ({"retrieved": "not a list"}, "invalid"),
        ({"leaf_id": "msg_doesnotexist"}, "unknown_message"),
    ],
)
def test_bad_budget_or_body_is_400_and_records_nothing(acme, thread, body, code):
    before = Recorded.now()

    r = post_context(acme.client, thread, **body)

    assert r.status_code == 400, r.data
    assert r.data["code"] == code, r.data
    assert isinstance(r.data["detail"], str)
    assert Recorded.now() == before


def test_the_current_turn_not_fitting_is_400_with_the_arithmetic(acme, thread):
    before = Recorded.now()

    r = post_context(acme.client, thread, window_tokens=40, reserve_tokens=10)

    assert r.status_code == 400
    assert r.data["code"] == "budget_too_small"
    arithmetic = r.data["arithmetic"]
    assert arithmetic["window"] == 40
    assert arithmetic["reserve"] == 10
    assert arithmetic["needed"] == (
        arithmetic["system"] + arithmetic["current_turn"] + arithmetic["reserve"]
    )
    assert arithmetic["needed"] > 40
    assert "> window 40" in r.data["detail"]
    assert Recorded.now() == before


def test_retrieved_items_over_budget_are_400(acme, thread):
    before = Recorded.now()
    item = {"ref": "big", "content": "lorem ipsum dolor " * 300}

    r = post_context(acme.client, thread, window_tokens=1000, reserve_tokens=100, retrieved=[item])

    assert r.status_code == 400
    assert r.data["code"] == "retrieved_over_budget"
    assert r.data["arithmetic"]["retrieved"] > 900
    assert Recorded.now() == before


def test_too_many_retrieved_items_are_400(acme, thread, settings):
    settings.CONVMEM_MAX_RETRIEVED_ITEMS = 2
    before = Recorded.now()
    items = [{"ref": f"r{i}", "content": "text"} for i in range(3)]

    r = post_context(acme.client, thread, retrieved=items)

    assert r.status_code == 400
    assert r.data["code"] == "too_many_retrieved"
    assert Recorded.now() == before


def test_a_profile_with_an_unknown_encoding_is_400(acme, thread):
    profile = ModelProfile.objects.create(tenant=acme.tenant, name="broken")
    ModelProfile.objects.filter(pk=profile.pk).update(encoding="no_such_encoding")
    thread.profile = profile
    thread.save(update_fields=["profile"])
    before = Recorded.now()

    r = post_context(acme.client, thread)

    assert r.status_code == 400
    assert r.data["code"] == "unknown_encoding"
    assert Recorded.now() == before


def test_a_leaf_of_another_thread_is_400(acme, thread):
    other = make_thread(acme.tenant)
    grow(other, 2)
    before = Recorded.now()

    r = post_context(acme.client, thread, leaf_id=path_ids(other)[-1])

    assert r.status_code == 400
    assert r.data["code"] == "unknown_message"
    assert Recorded.now() == before


def test_an_empty_thread_is_400(acme):
    empty = make_thread(acme.tenant)
    before = Recorded.now()

    r = post_context(acme.client, empty)

    assert r.status_code == 400
    assert r.data["code"] == "empty_thread"
    assert Recorded.now() == before


def test_another_tenants_thread_is_404(acme, globex, thread):
    before = Recorded.now()

    context = post_context(globex.client, thread)
    summaries = globex.client.get(f"/api/v1/threads/{thread.public_id}/summaries")

    assert context.status_code == 404
    assert context.data["code"] == "not_found"
    assert summaries.status_code == 404
    assert Recorded.now() == before


def test_a_profile_window_is_overridden_by_the_request(acme, thread):
    profile = ModelProfile.objects.create(
        tenant=acme.tenant, name="tiny", window_tokens=200, reserve_tokens=50
    )
    thread.profile = profile
    thread.save(update_fields=["profile"])

    default = post_context(acme.client, thread)
    wider = post_context(acme.client, thread, window_tokens=4000, reserve_tokens=500)

    assert (default.data["tokens"]["window"], default.data["tokens"]["reserve"]) == (200, 50)
    assert len(default.data["sections"]["recent"]) < 6
    assert (wider.data["tokens"]["window"], wider.data["tokens"]["reserve"]) == (4000, 500)
    # Everything fits: the task statement (kept as the anchor) and all the turns after it.
    sections = wider.data["sections"]
    assert sections["anchor"] + sections["recent"] == path_ids(thread)
    assert sections["dropped"] == []
