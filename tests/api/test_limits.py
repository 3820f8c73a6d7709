"""Abusive input on every write endpoint: a 4xx with the error shape, never a 500, nothing written.

Oversized bodies, deep nesting, invalid UTF-8, unpaired surrogates, NUL characters, huge
Idempotency-Keys and huge query parameters. (Timings are not asserted; the cheap rejections
happen before any parsing or database work, which the code paths below exercise.)
"""

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from django.test import Client

from tests.conftest import TenantKit, make_thread, path_ids
from tests.threads.helpers import Rows

Sender = Callable[..., Any]


@dataclass(frozen=True)
class Endpoint:
    name: str
    method: str
    url: Callable[[Any], str]
    body: dict[str, Any]
    idempotent: bool = False


ENDPOINTS = [
    Endpoint("thread-create", "POST", lambda t: "/api/v1/threads", {"user_ref": "u-1"}),
    Endpoint("thread-patch", "PATCH", lambda t: f"/api/v1/threads/{t.public_id}", {"title": "x"}),
    Endpoint(
        "append",
        "POST",
        lambda t: f"/api/v1/threads/{t.public_id}/messages",
        {"role": "user", "content": "hello"},
        idempotent=True,
    ),
    Endpoint(
        "edit",
        "POST",
        lambda t: f"/api/v1/threads/{t.public_id}/messages/{path_ids(t)[-1]}/edit",
        {"content": "hello again"},
        idempotent=True,
    ),
    Endpoint(
        "context",
        "POST",
        lambda t: f"/api/v1/threads/{t.public_id}/context",
        {"window_tokens": 4096, "reserve_tokens": 512},
    ),
    Endpoint(
        "deletion-request", "POST", lambda t: "/api/v1/deletion-requests", {"user_ref": "u-1"}
    ),
]
ENDPOINT_IDS = [e.name for e in ENDPOINTS]


@pytest.fixture
def thread(acme: TenantKit) -> Any:
    return make_thread(acme.tenant, turns=4)


@pytest.fixture
def send(acme: TenantKit) -> Sender:
    """Send raw bytes as acme, with a valid Idempotency-Key unless told otherwise."""
    client = Client()

    def send(endpoint: Endpoint, thread: Any, body: bytes, *, key: str = "limits-1") -> Any:
        return client.generic(
            endpoint.method,
            endpoint.url(thread),
            body,
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {acme.key}",
            HTTP_IDEMPOTENCY_KEY=key,
        )

    return send


def assert_rejected(response: Any, *statuses: int) -> dict[str, Any]:
    assert response.status_code in statuses, (response.status_code, response.content[:300])
    body = response.json()
    assert isinstance(body["code"], str), body
    assert isinstance(body["detail"], str), body
    return body


def _json(value: Any) -> bytes:
    return json.dumps(value).encode()


def _with_every_field(body: dict[str, Any], value: Any) -> list[dict[str, Any]]:
    return [{**body, name: value} for name in body]


@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=ENDPOINT_IDS)
def test_body_over_the_request_limit_is_413(endpoint, thread, send, settings):
    settings.CONVMEM_MAX_REQUEST_BYTES = 10_000
    before = Rows.now()

    r = send(endpoint, thread, _json({**endpoint.body, "padding": "x" * 20_000}))

    assert assert_rejected(r, 413)["code"] == "payload_too_large"
    assert Rows.now() == before


@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=ENDPOINT_IDS)
def test_body_over_the_default_limit_is_refused_before_parsing(endpoint, thread, send, settings):
    before = Rows.now()

    body = b'{"a": "' + b"x" * settings.CONVMEM_MAX_REQUEST_BYTES + b'"}'
    r = send(endpoint, thread, body)

    assert assert_rejected(r, 413)["code"] == "payload_too_large"
    assert Rows.now() == before


@pytest.mark.parametrize("depth", [100_000, 5_000, 990, 944, 925, 65])
@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=ENDPOINT_IDS)
def test_deeply_nested_json_is_400(endpoint, depth, thread, send):
    before = Rows.now()
    nested = b"[" * depth + b"]" * depth

    whole = send(endpoint, thread, nested)
    inside = [
        send(endpoint, thread, _json(body).replace(b'"@@"', nested), key=f"k-{i}")
        for i, body in enumerate(_with_every_field(endpoint.body, "@@"))
    ]

    assert assert_rejected(whole, 400)["code"] == "nesting_too_deep"
    for r in inside:
        assert assert_rejected(r, 400)["code"] == "nesting_too_deep"
    assert Rows.now() == before


def _nested_object(levels: int) -> bytes:
    return b'{"a":' * (levels - 1) + b"{}" + b"}" * (levels - 1)


@pytest.mark.parametrize("levels", [900, 925, 944])
def test_metadata_nested_just_under_the_parsers_recursion_limit_is_400(acme, thread, levels):
    """Shallow enough for json.loads, deep enough to fail later in the request (a
    RecursionError, a 500): where exactly depends on the stack (900 levels through the test
    client, 925-944 under gunicorn)."""
    before = Rows.now()
    metadata = _nested_object(levels)

    created = acme.client.post(
        "/api/v1/threads",
        b'{"user_ref": "u-1", "metadata": ' + metadata + b"}",
        content_type="application/json",
    )
    patched = acme.client.patch(
        f"/api/v1/threads/{thread.public_id}",
        b'{"metadata": ' + metadata + b"}",
        content_type="application/json",
    )

    assert assert_rejected(created, 400)["code"] == "nesting_too_deep"
    assert assert_rejected(patched, 400)["code"] == "nesting_too_deep"
    assert Rows.now() == before


def test_nesting_up_to_the_limit_is_accepted(acme, thread, settings):
    """The body is level 1, so metadata may nest CONVMEM_MAX_JSON_DEPTH - 1 levels."""
    limit = settings.CONVMEM_MAX_JSON_DEPTH
    body = b'{"user_ref": "u-1", "metadata": ' + _nested_object(limit - 1) + b"}"
    over = b'{"user_ref": "u-1", "metadata": ' + _nested_object(limit) + b"}"

    accepted = acme.client.post("/api/v1/threads", body, content_type="application/json")
    refused = acme.client.post("/api/v1/threads", over, content_type="application/json")

    assert accepted.status_code == 201, accepted.content[:300]
    assert accepted.json()["metadata"] == json.loads(_nested_object(limit - 1))
    body = assert_rejected(refused, 400)
    assert body["code"] == "nesting_too_deep"
    assert f"at most {limit} levels" in body["detail"]


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(b"\xff\xfe\x00", id="invalid-utf8"),
        pytest.param(b"\xc3\x28", id="bad-continuation"),
        pytest.param(b"\xed\xa0\x80", id="utf8-encoded-surrogate"),
    ],
)
@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=ENDPOINT_IDS)
def test_invalid_utf8_is_400(endpoint, raw, thread, send):
    before = Rows.now()
    bodies = [
        _json(body).replace(b'"@@"', b'"' + raw + b'"')
        for body in _with_every_field(endpoint.body, "@@")
    ]

    responses = [send(endpoint, thread, body, key=f"k-{i}") for i, body in enumerate(bodies)]

    for r in responses:
        assert assert_rejected(r, 400)["code"] == "parse_error"
    assert Rows.now() == before


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("\\ud800", id="lone-high-surrogate"),
        pytest.param("\\udfff tail", id="lone-low-surrogate"),
        pytest.param("a\\u0000b", id="nul"),
    ],
)
@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=ENDPOINT_IDS)
def test_unstorable_characters_are_400(endpoint, text, thread, send):
    """JSON allows escapes that are not valid text (a lone surrogate, NUL); the DB refuses them."""
    before = Rows.now()
    escaped = b'"' + text.encode() + b'"'
    bodies = [
        _json(body).replace(b'"@@"', escaped) for body in _with_every_field(endpoint.body, "@@")
    ]
    bodies.append(_json({**endpoint.body, "metadata": {"k": "@@"}}).replace(b'"@@"', escaped))
    bodies.append(_json({**endpoint.body, "metadata": {"@@": 1}}).replace(b'"@@"', escaped))

    responses = [send(endpoint, thread, body, key=f"k-{i}") for i, body in enumerate(bodies)]

    for r in responses:
        assert_rejected(r, 400)
    assert Rows.now() == before


@pytest.mark.parametrize("number", [b"1e999", b"-1e999", b"1E400"])
@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=ENDPOINT_IDS)
def test_a_number_no_float_holds_is_400(endpoint, number, thread, send):
    """``1e999`` parses as infinity, which neither jsonb nor JSON can store: a 400, not the
    503 "database unavailable" a client would retry forever."""
    before = Rows.now()
    bodies = [
        _json(body).replace(b'"@@"', number) for body in _with_every_field(endpoint.body, "@@")
    ]
    bodies.append(_json({**endpoint.body, "metadata": {"k": "@@"}}).replace(b'"@@"', number))

    responses = [send(endpoint, thread, body, key=f"k-{i}") for i, body in enumerate(bodies)]

    for r in responses:
        assert assert_rejected(r, 400)["code"] == "parse_error"
    assert Rows.now() == before


@pytest.mark.parametrize("charset", ["utf-16", "latin-1", "UTF-32"])
@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=ENDPOINT_IDS)
def test_a_charset_other_than_utf8_is_415(endpoint, charset, thread, acme):
    before = Rows.now()
    response = Client().generic(
        endpoint.method,
        endpoint.url(thread),
        json.dumps(endpoint.body).encode(charset.lower()),
        content_type=f"application/json; charset={charset}",
        HTTP_AUTHORIZATION=f"Bearer {acme.key}",
        HTTP_IDEMPOTENCY_KEY="limits-1",
    )
    assert assert_rejected(response, 415)["code"] == "unsupported_media_type"
    assert Rows.now() == before


@pytest.mark.parametrize("charset", ["utf-8", "UTF-8", "utf8"])
def test_utf8_declared_is_read(charset, acme):
    response = Client().post(
        "/api/v1/threads",
        json.dumps({"user_ref": "u-ü"}).encode(),
        content_type=f"application/json; charset={charset}",
        HTTP_AUTHORIZATION=f"Bearer {acme.key}",
    )
    assert response.status_code == 201
    assert response.json()["user_ref"] == "u-ü"


@pytest.mark.parametrize("length", [256, 100_000])
@pytest.mark.parametrize("endpoint", [e for e in ENDPOINTS if e.idempotent], ids=lambda e: e.name)
def test_huge_idempotency_key_is_400(endpoint, length, thread, send):
    before = Rows.now()

    r = send(endpoint, thread, _json(endpoint.body), key="k" * length)

    assert assert_rejected(r, 400)["code"] == "idempotency_key_invalid"
    assert Rows.now() == before


@pytest.mark.parametrize("key", ["ключ", "a b", "tab\tkey", "\x00"])
def test_non_ascii_idempotency_key_is_400(key, thread, send):
    append = ENDPOINTS[ENDPOINT_IDS.index("append")]
    before = Rows.now()

    r = send(append, thread, _json(append.body), key=key)

    assert assert_rejected(r, 400)["code"] == "idempotency_key_invalid"
    assert Rows.now() == before


@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/threads?user_ref=a%00b",
        "/api/v1/threads?limit={huge_number}",
        "/api/v1/threads?limit=-1",
        "/api/v1/threads?cursor={huge}",
        "/api/v1/threads/{huge}",
        "/api/v1/threads/thr_%00",
        "/api/v1/threads/{thread}/messages?leaf={huge}",
        "/api/v1/threads/{thread}/messages?leaf=msg_%00",
        "/api/v1/threads/{thread}/messages?cursor={huge}",
        "/api/v1/threads/{thread}/messages?limit={huge_number}",
        "/api/v1/threads/{thread}/tree?cursor={huge}",
        "/api/v1/threads/{thread}/tree?cursor=%ED%A0%80",
        "/api/v1/assemblies/{huge}/replay",
        "/api/v1/deletion-requests/{huge}",
    ],
)
def test_huge_or_odd_query_parameters_are_4xx(url, acme, thread):
    url = url.format(huge="x" * 100_000, huge_number="9" * 5_000, thread=thread.public_id)

    r = acme.client.get(url)

    assert 400 <= r.status_code < 500, (r.status_code, r.content[:300])
    assert isinstance(r.json()["code"], str)


def test_a_huge_filter_value_just_matches_nothing(acme, thread):
    r = acme.client.get("/api/v1/threads", {"user_ref": "x" * 100_000})

    assert r.status_code == 200
    assert r.json()["results"] == []


def test_thousands_of_retrieved_items_are_refused(acme, thread, settings):
    retrieved = [{"ref": f"doc-{i}", "content": f"passage {i}"} for i in range(5_000)]
    before = Rows.now()

    r = acme.client.post(
        f"/api/v1/threads/{thread.public_id}/context",
        {"window_tokens": 4096, "reserve_tokens": 512, "retrieved": retrieved},
        format="json",
    )

    assert_rejected(r, 400, 413)
    assert Rows.now() == before
    at_limit = [
        {"ref": f"doc-{i}", "content": "x"} for i in range(settings.CONVMEM_MAX_RETRIEVED_ITEMS)
    ]
    ok = acme.client.post(
        f"/api/v1/threads/{thread.public_id}/context",
        {"window_tokens": 4096, "reserve_tokens": 512, "retrieved": at_limit},
        format="json",
    )
    assert ok.status_code == 200, ok.content[:300]


def test_huge_retrieved_content_is_refused(acme, thread, settings):
    item = {"ref": "doc", "content": "x" * (settings.CONVMEM_MAX_CONTENT_CHARS + 1)}

    r = acme.client.post(
        f"/api/v1/threads/{thread.public_id}/context",
        {"window_tokens": 4096, "reserve_tokens": 512, "retrieved": [item]},
        format="json",
    )

    assert_rejected(r, 400, 413)
