"""``/`` and the API docs pages: where a newcomer (and the admin's "View site") lands."""

import re

from django.test import Client


def test_the_root_links_to_the_admin_and_the_api_docs(db):
    response = Client().get("/")

    assert response.status_code == 200
    for href in ("/admin/", "/api/v1/docs/", "/api/v1/redoc/", "/api/v1/"):
        assert f'href="{href}"' in response.content.decode()


def test_redoc_asks_for_nothing_outside_this_server(db):
    response = Client().get("/api/v1/redoc/")

    page = response.content.decode()
    assert response.status_code == 200
    assert "googleapis" not in page
    assert "gstatic" not in page
    assert re.findall(r'(?:src|href)="(https?:)?//', page) == []
    policy = dict(
        part.strip().split(" ", 1) for part in response["Content-Security-Policy"].split(";")
    )
    assert policy["default-src"] == "'self'"
    assert policy["img-src"] == "'self' data:"
