"""Every API error is ``{"code", "detail"}`` with the status a DRF user expects."""

import pytest
from django.db import DatabaseError, OperationalError
from django.http import Http404
from rest_framework import exceptions

from convmem.errors import PayloadTooLarge, api_exception_handler
from tests.conftest import make_thread
from tests.threads.helpers import error_of, messages_url, post


def test_validation_errors_have_code_detail_and_per_field_errors(acme):
    r = post(acme.client, "/api/v1/threads", {"title": 3})

    assert error_of(r) == (400, "invalid")
    assert r.data["detail"] == "user_ref: This field is required."
    assert set(r.data["errors"]) == {"user_ref"}


def test_parse_errors(acme):
    r = acme.client.generic("POST", "/api/v1/threads", b"{", content_type="application/json")

    assert error_of(r) == (400, "parse_error")
    assert r.data["detail"].startswith("Malformed JSON")


def test_not_found(acme):
    assert error_of(acme.client.get("/api/v1/threads/thr_x")) == (404, "not_found")


def test_method_not_allowed(acme):
    thread = make_thread(acme.tenant)

    r = acme.client.put(f"/api/v1/threads/{thread.public_id}", {}, format="json")

    assert error_of(r) == (405, "method_not_allowed")


def test_unsupported_media_type(acme):
    r = acme.client.post("/api/v1/threads", "user_ref=u", content_type="text/plain")

    assert error_of(r) == (415, "unsupported_media_type")


def test_request_too_large_comes_from_the_middleware_as_json(acme, settings):
    settings.CONVMEM_MAX_REQUEST_BYTES = 10

    r = post(acme.client, "/api/v1/threads", {"user_ref": "a-long-user-reference"})

    assert error_of(r) == (413, "payload_too_large")
    assert r["Content-Type"] == "application/json"


def test_conflict_and_unprocessable(acme):
    thread = make_thread(acme.tenant)
    url = messages_url(thread.public_id)
    post(acme.client, url, {"role": "user", "content": "a"}, "k")

    r = post(acme.client, url, {"role": "user", "content": "b"}, "k")

    assert error_of(r) == (422, "idempotency_key_reused")


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        pytest.param(
            OperationalError("connection refused"), (503, "service_unavailable"), id="db-down"
        ),
        pytest.param(DatabaseError("boom"), (503, "service_unavailable"), id="db-error"),
        pytest.param(Http404("gone"), (404, "not_found"), id="http404"),
        pytest.param(PayloadTooLarge(), (413, "payload_too_large"), id="too-large"),
        pytest.param(exceptions.Throttled(wait=3), (429, "throttled"), id="throttled"),
        pytest.param(exceptions.PermissionDenied(), (403, "permission_denied"), id="forbidden"),
    ],
)
def test_exception_handler_maps_errors(exc, expected):
    response = api_exception_handler(exc, {})

    assert (response.status_code, response.data["code"]) == expected
    assert isinstance(response.data["detail"], str)
    assert response.data["detail"]


def test_exception_handler_leaves_unknown_errors_to_django():
    assert api_exception_handler(ValueError("bug"), {}) is None
