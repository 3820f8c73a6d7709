"""A strict API: a body field or query parameter the schema does not name is a 400 naming it.

Checked over the whole published schema, so a new endpoint is covered as soon as it exists.
"""

import re

import pytest

from audit.deletion import deletion_request_file
from compaction.context import context_assemble
from convmem.strict import api_schema
from tests.conftest import SYSTEM, make_thread
from threads.selectors import thread_get

UNKNOWN = "zz_unknown"


def _operations(with_body: bool = False) -> list[tuple[str, str]]:
    return [
        (path, method)
        for path, operations in api_schema()["paths"].items()
        for method, operation in operations.items()
        if not with_body
        or "application/json" in operation.get("requestBody", {}).get("content", {})
    ]


@pytest.fixture
def ids(acme):
    """Real ids for every path parameter, so requests reach the code behind the 404s."""
    thread = make_thread(acme.tenant, turns=2)
    assembly = context_assemble(
        thread=thread_get(tenant=acme.tenant, public_id=thread.public_id), actor=SYSTEM
    )
    deletion = deletion_request_file(tenant=acme.tenant, actor=SYSTEM, user_ref="someone")
    return {
        "thread_id": thread.public_id,
        "message_id": thread.active_leaf.public_id,
        "assembly_id": assembly.record.public_id,
        "request_id": deletion.public_id,
        # No run exists without a chat model: unknown parameters are refused before the 404.
        "run_id": "run_unknown",
        "endpoint_id": "whk_unknown",
    }


def _url(path: str, ids: dict[str, str]) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: ids[m.group(1)], path)


def test_every_operation_refuses_an_unknown_query_parameter(acme_exporter, ids):
    operations = _operations()
    assert len(operations) >= 19
    for path, method in operations:
        url = _url(path, ids) + f"?{UNKNOWN}=1"
        response = getattr(acme_exporter.client, method)(url, {}, format="json")
        assert response.status_code == 400, (method, path, response.content)
        body = response.json()
        assert body["code"] == "unknown_parameter", (method, path, body)
        assert UNKNOWN in body["detail"]
        assert list(body["errors"]) == [UNKNOWN]


def test_every_request_body_refuses_an_unknown_field(acme_exporter, ids):
    operations = _operations(with_body=True)
    assert {"post", "patch"} <= {method for _, method in operations}
    for path, method in operations:
        response = getattr(acme_exporter.client, method)(
            _url(path, ids), {UNKNOWN: 1}, format="json", HTTP_IDEMPOTENCY_KEY=f"k-{path}"
        )
        assert response.status_code == 400, (method, path, response.content)
        body = response.json()
        assert body["code"] == "unknown_field", (method, path, body)
        assert body["errors"] == {UNKNOWN: ["Unknown field."]}


def test_the_schema_says_request_bodies_take_no_other_fields():
    for path, method in _operations(with_body=True):
        operation = api_schema()["paths"][path][method]
        ref = operation["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        component = api_schema()["components"]["schemas"][ref.rsplit("/", 1)[-1]]
        assert component["additionalProperties"] is False, (method, path)


def test_a_misspelt_title_is_named(acme):
    response = acme.client.post(
        "/api/v1/threads", {"user_ref": "u", "titel": "Trip"}, format="json"
    )

    assert response.status_code == 400
    assert response.json()["detail"] == "Unknown field: titel."


def test_a_misspelt_budget_is_named_and_nothing_is_assembled(acme):
    thread = make_thread(acme.tenant, turns=1)

    response = acme.client.post(
        f"/api/v1/threads/{thread.public_id}/context", {"window_tokns": 300}, format="json"
    )

    assert response.status_code == 400
    assert response.json()["errors"] == {"window_tokns": ["Unknown field."]}
    assert not thread.assemblies.exists()


def test_nested_unknown_fields_are_named_by_their_path(acme):
    thread = make_thread(acme.tenant, turns=1)
    body = {"retrieved": [{"ref": "a", "content": "x"}, {"ref": "b", "content": "y", "score": 1}]}

    response = acme.client.post(f"/api/v1/threads/{thread.public_id}/context", body, format="json")

    assert response.status_code == 400
    assert response.json()["detail"] == "Unknown field: retrieved[1].score."


def test_a_key_sent_as_a_body_field_is_refused(acme):
    thread = make_thread(acme.tenant)

    response = acme.client.post(
        f"/api/v1/threads/{thread.public_id}/respond",
        {"content": "hi", "idempotency_key": "abc"},
        format="json",
        HTTP_IDEMPOTENCY_KEY="abc",
    )

    assert response.status_code == 400
    assert response.json()["code"] == "unknown_field"
    assert not thread.messages.exclude(role="root").exists()


def test_several_unknown_parameters_are_all_named(acme):
    response = acme.client.get("/api/v1/threads?user_ref=u&b=1&a=2")

    assert response.status_code == 400
    assert response.json()["detail"] == "Unknown query parameters: a, b."


def test_declared_parameters_still_work(acme):
    make_thread(acme.tenant, user_ref="u")

    response = acme.client.get("/api/v1/threads?user_ref=u&limit=5")

    assert response.status_code == 200
    assert len(response.json()["results"]) == 1
