"""POST/GET /api/v1/threads, GET/PATCH /api/v1/threads/{id}.

Branch switching (PATCH active_leaf_id) is in test_switch_branch.py.
"""

import re

from auditlog.models import AuditEvent
from convmem.models import ModelProfile
from tests.conftest import make_thread
from tests.threads.helpers import Rows, error_of, post
from threads.models import Message, Role, Thread


def test_create_answers_201_with_the_thread(acme):
    r = post(
        acme.client, "/api/v1/threads", {"user_ref": "u1", "title": "Trip", "metadata": {"a": 1}}
    )

    assert r.status_code == 201, r.data
    assert r.data["id"].startswith("thr_")
    assert r.data["user_ref"] == "u1"
    assert r.data["title"] == "Trip"
    assert r.data["metadata"] == {"a": 1}
    assert r.data["active_leaf_id"] is None
    assert r.data["created_at"]
    thread = Thread.objects.get(public_id=r.data["id"])
    assert thread.tenant == acme.tenant
    # One hidden root, the first active leaf, and nothing else.
    assert list(thread.messages.values_list("role", flat=True)) == [Role.ROOT]
    assert thread.active_leaf == thread.root
    event = AuditEvent.objects.get(action="thread.created")
    assert event.object_ids == [r.data["id"]]
    assert event.actor_id == acme.api_key.prefix


def test_ids_are_opaque_and_not_sequential(acme):
    ids = [post(acme.client, "/api/v1/threads", {"user_ref": "u1"}).data["id"] for _ in range(3)]

    assert len(set(ids)) == 3
    assert all(re.fullmatch(r"thr_[A-Za-z0-9]{22}", i) for i in ids)


def test_title_and_metadata_default_to_empty(acme):
    r = post(acme.client, "/api/v1/threads", {"user_ref": "u1"})

    assert r.data["title"] == ""
    assert r.data["metadata"] == {}


def test_create_uses_the_tenants_default_profile_or_a_named_one(acme):
    ModelProfile.objects.create(tenant=acme.tenant, name="small", is_default=True)
    ModelProfile.objects.create(tenant=acme.tenant, name="large")

    assert post(acme.client, "/api/v1/threads", {"user_ref": "u"}).data["profile"] == "small"
    r = post(acme.client, "/api/v1/threads", {"user_ref": "u", "profile": "large"})
    assert r.data["profile"] == "large"


def test_create_with_an_unknown_profile_is_400(acme):
    before = Rows.now()

    r = post(acme.client, "/api/v1/threads", {"user_ref": "u", "profile": "nope"})

    assert error_of(r) == (400, "unknown_profile")
    assert Rows.now() == before


def test_create_rejects_bad_bodies(acme):
    before = Rows.now()
    bad = [
        {},
        {"user_ref": ""},
        {"user_ref": "x" * 256},
        {"user_ref": "u", "metadata": [1, 2]},
        {"user_ref": "u", "metadata": "text"},
        {"user_ref": "u", "metadata": {"big": "x" * 20_000}},
        {"user_ref": "u", "title": "t" * 256},
    ]
    for body in bad:
        r = post(acme.client, "/api/v1/threads", body)
        assert error_of(r) == (400, "invalid"), body
        assert r.data["errors"], body
    assert Rows.now() == before


def test_get_one(acme):
    thread = make_thread(acme.tenant, user_ref="u7", turns=2)

    r = acme.client.get(f"/api/v1/threads/{thread.public_id}")

    assert r.status_code == 200
    assert r.data["id"] == thread.public_id
    assert r.data["user_ref"] == "u7"
    assert r.data["active_leaf_id"] == thread.active_leaf.public_id


def test_get_unknown_thread_is_404(acme):
    r = acme.client.get("/api/v1/threads/thr_doesnotexist")

    assert error_of(r) == (404, "not_found")


def test_list_is_newest_first_and_filters_by_user_ref(acme):
    first = make_thread(acme.tenant, user_ref="alice")
    make_thread(acme.tenant, user_ref="bob")
    third = make_thread(acme.tenant, user_ref="alice")

    everyone = acme.client.get("/api/v1/threads")
    alice = acme.client.get("/api/v1/threads", {"user_ref": "alice"})

    assert everyone.status_code == 200
    assert len(everyone.data["results"]) == 3
    assert everyone.data["results"][0]["id"] == third.public_id
    assert [t["id"] for t in alice.data["results"]] == [third.public_id, first.public_id]
    assert acme.client.get("/api/v1/threads", {"user_ref": "carol"}).data["results"] == []


def test_list_pages_with_a_cursor(acme):
    made = [make_thread(acme.tenant).public_id for _ in range(5)]

    seen: list[str] = []
    url: str | None = "/api/v1/threads?limit=2"
    pages = 0
    while url:
        r = acme.client.get(url)
        assert r.status_code == 200
        assert len(r.data["results"]) <= 2
        seen += [t["id"] for t in r.data["results"]]
        url = r.data["next"]
        pages += 1

    assert pages == 3
    assert seen == made[::-1]


def test_list_default_page_size_is_the_setting(acme, settings):
    settings.CONVMEM_PAGE_SIZE = 50
    for _ in range(3):
        make_thread(acme.tenant)

    r = acme.client.get("/api/v1/threads")

    assert len(r.data["results"]) == 3
    assert r.data["next"] is None


def test_patch_title_and_metadata(acme):
    thread = make_thread(acme.tenant, turns=1)
    leaf = thread.active_leaf.public_id

    r = acme.client.patch(
        f"/api/v1/threads/{thread.public_id}",
        {"title": "Renamed", "metadata": {"k": "v"}},
        format="json",
    )

    assert r.status_code == 200, r.data
    assert r.data["title"] == "Renamed"
    assert r.data["metadata"] == {"k": "v"}
    assert r.data["active_leaf_id"] == leaf
    thread.refresh_from_db()
    assert (thread.title, thread.metadata) == ("Renamed", {"k": "v"})
    event = AuditEvent.objects.get(action="thread.updated")
    assert event.details == {"fields": ["title", "metadata"]}


def test_patch_rejects_bad_metadata(acme):
    thread = make_thread(acme.tenant)
    before = Rows.now()

    r = acme.client.patch(f"/api/v1/threads/{thread.public_id}", {"metadata": ["x"]}, format="json")

    assert error_of(r) == (400, "invalid")
    assert Rows.now() == before


def test_patch_unknown_thread_is_404(acme):
    r = acme.client.patch("/api/v1/threads/thr_nope", {"title": "x"}, format="json")

    assert error_of(r) == (404, "not_found")


def test_thread_creation_is_idempotent(acme):
    body = {"user_ref": "u1", "title": "once"}

    first = post(acme.client, "/api/v1/threads", body, key="create-1")
    again = post(acme.client, "/api/v1/threads", body, key="create-1")

    assert first.status_code == again.status_code == 201
    assert again.data == first.data
    assert again["Idempotent-Replayed"] == "true"
    assert "Idempotent-Replayed" not in first
    assert Thread.objects.filter(tenant=acme.tenant).count() == 1
    assert Message.objects.count() == 1
    assert AuditEvent.objects.filter(action="thread.created").count() == 1


def test_thread_creation_key_reused_with_another_body_is_422(acme):
    post(acme.client, "/api/v1/threads", {"user_ref": "u1"}, key="create-2")
    before = Rows.now()

    r = post(acme.client, "/api/v1/threads", {"user_ref": "u2"}, key="create-2")

    assert error_of(r) == (422, "idempotency_key_reused")
    assert Rows.now() == before


def test_thread_creation_without_a_key_is_not_deduplicated(acme):
    post(acme.client, "/api/v1/threads", {"user_ref": "u1"})
    post(acme.client, "/api/v1/threads", {"user_ref": "u1"})

    assert Thread.objects.count() == 2


def test_nul_characters_are_refused_before_the_database(acme):
    before = Rows.now()

    for body in [
        {"user_ref": "u\u0000"},
        {"user_ref": "u", "title": "t\u0000"},
        {"user_ref": "u", "metadata": {"note": "a\u0000b"}},
        {"user_ref": "u", "metadata": {"k\u0000": 1}},
    ]:
        r = post(acme.client, "/api/v1/threads", body)
        assert error_of(r) == (400, "invalid"), body

    assert Rows.now() == before


def test_list_rejects_a_bad_limit_or_cursor(acme):
    make_thread(acme.tenant)

    assert error_of(acme.client.get("/api/v1/threads", {"limit": "abc"})) == (400, "invalid")
    assert error_of(acme.client.get("/api/v1/threads", {"limit": "0"})) == (400, "invalid")
    assert error_of(acme.client.get("/api/v1/threads", {"cursor": "garbage"})) == (
        400,
        "invalid_cursor",
    )
