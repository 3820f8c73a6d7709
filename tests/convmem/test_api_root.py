"""The API root lists the endpoints; every other path under /api/ that leads nowhere answers a
JSON 404, and an unexpected error on an API path a JSON 500 — never Django's HTML pages."""

import pytest
from django.test import Client, RequestFactory

from convmem.error_pages import server_error


def test_the_root_lists_every_endpoint_of_the_schema_without_a_key(acme):
    schema = acme.client.get("/api/v1/schema/", {"format": "json"}).json()
    documented = {
        (method.upper(), path)
        for path, operations in schema["paths"].items()
        for method in operations
    }

    r = Client().get("/api/v1/")

    assert r.status_code == 200
    assert r["Content-Type"] == "application/json"
    body = r.json()
    listed = {(e["method"], e["path"]) for e in body["endpoints"]}
    assert listed == documented
    assert ("POST", "/api/v1/threads/{thread_id}/messages") in listed
    assert body["docs"] == "http://testserver/api/v1/docs/"
    assert body["schema"] == "http://testserver/api/v1/schema/"


@pytest.mark.parametrize("debug", [False, True])
@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/nope",
        "/api/v1/threads/",
        "/api/v1/threads/thr_x/nope",
        "/api/v1",
        "/api/",
        "/api",
        "/api/v2/threads",
    ],
)
def test_unknown_api_paths_are_json_404s(acme, settings, debug, path):
    settings.DEBUG = debug

    answers = [
        acme.client.get(path),
        acme.client.post(path, {"x": 1}, format="json"),
        acme.client.delete(path),
        Client().get(path),
    ]

    for r in answers:
        assert r.status_code == 404, (path, r.status_code)
        assert r["Content-Type"] == "application/json"
        body = r.json()
        assert body["code"] == "not_found"
        assert path in body["detail"]


def test_unknown_admin_paths_still_get_the_html_404(admin_client):
    r = admin_client.get("/admin/nope/")

    assert r.status_code == 404
    assert r["Content-Type"].startswith("text/html")


def test_an_unexpected_error_on_an_api_path_is_a_json_500():
    r = server_error(RequestFactory().post("/api/v1/threads"))

    assert r.status_code == 500
    assert r["Content-Type"] == "application/json"
    assert r.content.startswith(b'{"code": "server_error", "detail": ')


@pytest.mark.parametrize("docs", ["/api/v1/docs/", "/api/v1/redoc/"])
def test_the_docs_pages_load_their_scripts_from_this_server(client, docs):
    r = client.get(docs)

    assert r.status_code == 200
    html = r.content.decode()
    assert "/static/drf_spectacular_sidecar/" in html
    assert "cdn." not in html
