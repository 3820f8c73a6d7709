"""GET /api/v1/search and GET /api/v1/threads/{id}/search: what is found, by whom, page by page."""

from audit.erasure import message_content_erase
from convmem.api import encode_cursor
from tests.conftest import SYSTEM, make_thread
from threads import services
from threads.models import Message


def append(thread, role: str, content: str) -> Message:
    return services.message_append(thread=thread, actor=SYSTEM, role=role, content=content)


def search(kit, q: str, url: str = "/api/v1/search", **params):
    return kit.client.get(url, {"q": q, **params})


def ids(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [hit["message_id"] for hit in response.json()["results"]]


def test_it_finds_messages_newest_first_with_marked_snippets(acme):
    thread = make_thread(acme.tenant, user_ref="ana")
    first = append(thread, "user", "My locker code is 4471-QZ, please note it.")
    second = append(thread, "assistant", "Noted: locker 4471-QZ <b>safe</b>.")

    response = search(acme, "locker 4471-qz")

    assert ids(response) == [second.public_id, first.public_id]
    hit = response.json()["results"][0]
    assert hit["thread_id"] == thread.public_id
    assert hit["user_ref"] == "ana"
    assert hit["role"] == "assistant"
    assert "<mark>" in hit["snippet"]
    assert "locker" in hit["snippet"].lower()
    # Only the marks are HTML: the text's own tags are escaped (SQLite) or left out (PostgreSQL).
    assert "<b>" not in hit["snippet"]
    assert "safe" in hit["snippet"]
    assert response.json()["next"] is None


def test_another_tenants_words_are_never_found(acme, globex):
    theirs = make_thread(globex.tenant)
    append(theirs, "user", "globex secret zanzibar")
    ours = make_thread(acme.tenant)
    mine = append(ours, "user", "acme zanzibar")

    assert ids(search(acme, "zanzibar")) == [mine.public_id]
    assert ids(search(acme, "secret")) == []
    response = search(acme, "zanzibar", url=f"/api/v1/threads/{theirs.public_id}/search")
    assert response.status_code == 404
    filtered = search(acme, "zanzibar", thread=theirs.public_id)  # a filter, not the resource
    assert (filtered.status_code, filtered.data["code"]) == (400, "unknown_thread")


def test_filters_by_user_ref_and_thread(acme):
    ana = make_thread(acme.tenant, user_ref="ana")
    bo = make_thread(acme.tenant, user_ref="bo")
    ana_hit = append(ana, "user", "refund please")
    bo_hit = append(bo, "user", "refund now")

    assert ids(search(acme, "refund", user_ref="ana")) == [ana_hit.public_id]
    assert ids(search(acme, "refund", thread=bo.public_id)) == [bo_hit.public_id]
    assert ids(search(acme, "refund", url=f"/api/v1/threads/{ana.public_id}/search")) == [
        ana_hit.public_id
    ]


def test_a_thread_search_covers_every_branch(acme):
    thread = make_thread(acme.tenant)
    original = append(thread, "user", "ship to Lund")
    edit = services.message_edit(
        thread=thread, actor=SYSTEM, message_public_id=original.public_id, content="ship to Umeå"
    )

    found = ids(search(acme, "ship", url=f"/api/v1/threads/{thread.public_id}/search"))

    assert found == [edit.public_id, original.public_id]


def test_erased_and_deleted_content_is_never_found(acme):
    thread = make_thread(acme.tenant)
    secret = append(thread, "user", "card 4111 expires soon")
    append(thread, "assistant", "expires noted")
    message_content_erase(message=secret, actor=SYSTEM)
    gone = make_thread(acme.tenant)
    append(gone, "user", "expires in the deleted thread")
    response = acme.client.delete(f"/api/v1/threads/{gone.public_id}", HTTP_IDEMPOTENCY_KEY="d1")
    assert response.status_code in (200, 202, 204), response.content

    assert ids(search(acme, "4111")) == []
    assert len(ids(search(acme, "expires"))) == 1


def test_pages_follow_the_cursor_without_gaps_or_repeats(acme):
    thread = make_thread(acme.tenant)
    made = [append(thread, "user", f"needle number {i}").public_id for i in range(7)]

    seen: list[str] = []
    response = search(acme, "needle", limit=3)
    pages = 0
    while True:
        seen += ids(response)
        pages += 1
        next_url = response.json()["next"]
        if next_url is None:
            break
        response = acme.client.get(next_url)

    assert seen == made[::-1]
    assert pages == 3


def test_bad_queries_and_cursors_are_400(acme, globex):
    thread = make_thread(acme.tenant)
    append(thread, "user", "hello")
    theirs = make_thread(globex.tenant)
    their_message = append(theirs, "user", "hello")

    assert search(acme, "").status_code == 400
    assert search(acme, " ?! ").json()["code"] == "invalid_query"
    assert acme.client.get("/api/v1/search").status_code == 400
    assert search(acme, "hello", cursor="!!!").json()["code"] == "invalid_cursor"
    foreign = encode_cursor(their_message.public_id)
    assert search(acme, "hello", cursor=foreign).json()["code"] == "invalid_cursor"


def test_search_needs_a_key(acme, client):
    assert client.get("/api/v1/search", {"q": "x"}).status_code in (401, 403)


def test_the_schema_documents_both_endpoints(acme):
    schema = acme.client.get("/api/v1/schema/", HTTP_ACCEPT="application/json").json()

    assert "/api/v1/search" in schema["paths"]
    assert "/api/v1/threads/{thread_id}/search" in schema["paths"]
    params = {p["name"] for p in schema["paths"]["/api/v1/search"]["get"]["parameters"]}
    assert {"q", "user_ref", "thread", "limit", "cursor"} <= params
