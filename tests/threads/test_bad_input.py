"""Bad input to the write endpoints (mostly append): a clear error, and nothing left behind."""

import json

import pytest

from tests.conftest import make_thread, path_ids
from tests.threads.helpers import Rows, edit_url, error_of, messages_url, post


@pytest.fixture
def thread(acme):
    return make_thread(acme.tenant, turns=2)


def raw(client, url: str, body: bytes, key: str = "k", method: str = "POST"):
    return client.generic(
        method, url, body, content_type="application/json", HTTP_IDEMPOTENCY_KEY=key
    )


def write_endpoints(thread) -> dict[str, tuple[str, str]]:
    """(method, url) of every endpoint that takes a JSON body."""
    return {
        "create": ("POST", "/api/v1/threads"),
        "patch": ("PATCH", f"/api/v1/threads/{thread.public_id}"),
        "append": ("POST", messages_url(thread.public_id)),
        "edit": ("POST", edit_url(thread.public_id, path_ids(thread)[-1])),
    }


@pytest.mark.parametrize("endpoint", ["create", "patch", "append", "edit"])
@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param(b'{"role": "user", "content": ', (400, "parse_error"), id="truncated"),
        pytest.param(b"{'role': 'user'}", (400, "parse_error"), id="not-json"),
        pytest.param(b'{"role": "user", "content": NaN}', (400, "parse_error"), id="nan"),
        pytest.param(
            b'{"role": "user", "content": "caf\xe9"}', (400, "parse_error"), id="invalid-utf8"
        ),
        pytest.param(b"[" * 100_000 + b"]" * 100_000, (400, "nesting_too_deep"), id="deep-nesting"),
        pytest.param(b"null", (400, "invalid"), id="null"),
        pytest.param(b"[1, 2]", (400, "invalid"), id="array"),
        pytest.param(b'"text"', (400, "invalid"), id="string"),
    ],
)
def test_malformed_bodies(acme, thread, endpoint, body, expected):
    method, url = write_endpoints(thread)[endpoint]
    before = Rows.now()

    r = raw(acme.client, url, body, method=method)

    assert error_of(r) == expected
    assert Rows.now() == before


@pytest.mark.parametrize("endpoint", ["create", "append", "edit"])
def test_empty_body(acme, thread, endpoint):
    method, url = write_endpoints(thread)[endpoint]
    before = Rows.now()

    r = raw(acme.client, url, b"", method=method)

    assert error_of(r) == (400, "invalid")
    assert Rows.now() == before


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param({"content": "x"}, (400, "invalid"), id="no-role"),
        pytest.param({"role": "wizard", "content": "x"}, (400, "invalid"), id="unknown-role"),
        pytest.param({"role": "root", "content": "x"}, (400, "invalid"), id="root-role"),
        pytest.param({"role": "User", "content": "x"}, (400, "invalid"), id="role-case"),
        pytest.param({"role": None, "content": "x"}, (400, "invalid"), id="null-role"),
        pytest.param({"role": "user"}, (400, "invalid"), id="no-content"),
        pytest.param({"role": "user", "content": None}, (400, "invalid"), id="null-content"),
        pytest.param({"role": "user", "content": {"a": 1}}, (400, "invalid"), id="obj-content"),
        pytest.param({"role": "user", "content": ""}, (400, "empty_content"), id="empty"),
        pytest.param({"role": "user", "content": " \n\t"}, (400, "empty_content"), id="blank"),
        pytest.param(
            {"role": "user", "content": "x", "parent_id": "msg_nope"},
            (400, "unknown_message"),
            id="unknown-parent",
        ),
        pytest.param(
            {"role": "user", "content": "x", "parent_id": ["msg_x"]},
            (400, "invalid"),
            id="parent-not-a-string",
        ),
        pytest.param(
            {"role": "assistant", "content": "x", "assembly_id": "asm_nope"},
            (400, "unknown_assembly"),
            id="unknown-assembly",
        ),
    ],
)
def test_invalid_fields(acme, thread, body, expected):
    before = Rows.now()

    r = post(acme.client, messages_url(thread.public_id), body, "k")

    assert error_of(r) == expected
    assert r.json()["detail"]
    assert Rows.now() == before


def test_validation_errors_name_the_field(acme, thread):
    r = post(acme.client, messages_url(thread.public_id), {"role": "wizard", "content": "x"}, "k")

    assert r.data["detail"].startswith("role:")
    assert "role" in r.data["errors"]


def test_parent_from_another_thread(acme, thread):
    other = make_thread(acme.tenant, turns=2)
    before = Rows.now()

    r = post(
        acme.client,
        messages_url(thread.public_id),
        {"role": "user", "content": "x", "parent_id": path_ids(other)[-1]},
        "k",
    )

    assert error_of(r) == (400, "unknown_message")
    assert Rows.now() == before


def test_parent_from_another_tenant(acme, globex, thread):
    theirs = make_thread(globex.tenant, turns=2)
    before = Rows.now()

    r = post(
        acme.client,
        messages_url(thread.public_id),
        {"role": "user", "content": "x", "parent_id": path_ids(theirs)[-1]},
        "k",
    )

    assert error_of(r) == (400, "unknown_message")
    assert Rows.now() == before


def test_the_hidden_root_is_not_a_valid_parent(acme, thread):
    before = Rows.now()

    r = post(
        acme.client,
        messages_url(thread.public_id),
        {"role": "user", "content": "x", "parent_id": thread.root.public_id},
        "k",
    )

    assert error_of(r) == (400, "unknown_message")
    assert Rows.now() == before


def test_content_over_the_limit_is_413(acme, thread, settings):
    settings.CONVMEM_MAX_CONTENT_CHARS = 100
    before = Rows.now()
    url = messages_url(thread.public_id)

    over = post(acme.client, url, {"role": "user", "content": "é" * 101}, "k1")
    at_limit = post(acme.client, url, {"role": "user", "content": "é" * 100}, "k2")

    assert error_of(over) == (413, "content_too_large")
    assert "100" in over.data["detail"]
    assert at_limit.status_code == 201
    assert Rows.now().messages == before.messages + 1


def test_body_over_the_request_limit_is_413(acme, thread, settings):
    settings.CONVMEM_MAX_REQUEST_BYTES = 1_000
    before = Rows.now()
    body = json.dumps({"role": "user", "content": "x" * 2_000}).encode()

    r = raw(acme.client, messages_url(thread.public_id), body)

    assert error_of(r) == (413, "payload_too_large")
    assert Rows.now() == before


def test_unknown_thread_is_404(acme):
    before = Rows.now()

    r = post(acme.client, messages_url("thr_nope"), {"role": "user", "content": "x"}, "k")

    assert error_of(r) == (404, "not_found")
    assert Rows.now() == before


def test_missing_idempotency_key_is_400(acme, thread):
    before = Rows.now()

    missing = post(acme.client, messages_url(thread.public_id), {"role": "user", "content": "x"})
    empty = post(acme.client, messages_url(thread.public_id), {"role": "user", "content": "x"}, "")

    assert error_of(missing) == (400, "idempotency_key_required")
    assert error_of(empty) == (400, "idempotency_key_required")
    assert Rows.now() == before


@pytest.mark.parametrize(
    "key",
    [
        pytest.param("k" * 256, id="too-long"),
        pytest.param("has space", id="space"),
        pytest.param("tab\there", id="tab"),
        pytest.param("clé", id="non-ascii"),
        pytest.param("ключ", id="cyrillic"),
    ],
)
def test_malformed_idempotency_key_is_400(acme, thread, key):
    before = Rows.now()

    r = post(acme.client, messages_url(thread.public_id), {"role": "user", "content": "x"}, key)

    assert error_of(r) == (400, "idempotency_key_invalid")
    assert Rows.now() == before


def test_longest_valid_key_is_accepted(acme, thread):
    r = post(
        acme.client, messages_url(thread.public_id), {"role": "user", "content": "x"}, "k" * 255
    )

    assert r.status_code == 201


def test_form_bodies_are_415(acme, thread):
    before = Rows.now()

    r = acme.client.post(
        messages_url(thread.public_id),
        {"role": "user", "content": "x"},
        HTTP_IDEMPOTENCY_KEY="k",
    )

    assert error_of(r) == (415, "unsupported_media_type")
    assert Rows.now() == before


@pytest.mark.parametrize(
    "body",
    [
        pytest.param({"role": "user", "content": "a\u0000b"}, id="content"),
        pytest.param({"role": "user", "content": "x", "parent_id": "msg_\u0000"}, id="parent"),
    ],
)
def test_nul_characters_are_400(acme, thread, body):
    """PostgreSQL text cannot hold NUL; it must be refused up front, not fail in the database."""
    before = Rows.now()

    r = post(acme.client, messages_url(thread.public_id), body, "k")

    assert error_of(r) == (400, "invalid")
    assert Rows.now() == before


def test_nul_characters_in_the_url_are_400_everywhere(acme, thread):
    """Not a database error (PostgreSQL cannot hold NUL) and the same answer on every backend."""
    base = f"/api/v1/threads/{thread.public_id}"
    leaf = path_ids(thread)[-1]
    before = Rows.now()

    responses = [
        acme.client.get("/api/v1/threads/thr_%00"),
        acme.client.get("/api/v1/threads?user_ref=u%00"),
        acme.client.get(f"{base}/messages?leaf=msg_%00"),
        acme.client.get(f"{base}/tree?cursor=%00"),
        acme.client.patch("/api/v1/threads/thr_%00", {"title": "x"}, format="json"),
        post(acme.client, f"{base}/messages/msg_%00/edit", {"content": "x"}, "k1"),
        post(
            acme.client, "/api/v1/threads/thr_%00/messages", {"role": "user", "content": "x"}, "k2"
        ),
        post(acme.client, f"{base}/messages/{leaf}/edit?x=%00", {"content": "x"}, "k3"),
    ]

    assert [error_of(r) for r in responses] == [(400, "invalid")] * len(responses)
    assert Rows.now() == before
