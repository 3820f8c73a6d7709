"""Cursors the server did not issue: always a 400 ``invalid_cursor``, never page 1, a 5xx, or
another list's page. Each list is also paged through with its own ``next`` links."""

import base64
from typing import Any

import pytest

from convmem.api import encode_cursor
from tests.conftest import TenantKit, make_thread
from tests.threads.helpers import error_of
from threads.models import Thread


def drf(querystring: bytes) -> str:
    """A cursor in the format of the newest-first lists (base64 of a query string)."""
    return base64.b64encode(querystring).decode()


CRAFTED = {
    "offset-not-a-number": drf(b"o=abc&p=x"),
    "offset-huge": drf(b"o=99999999999999999999"),
    "offset-over-the-cutoff": drf(b"o=1001"),
    "offset-negative": drf(b"o=-1"),
    "reverse-not-a-flag": drf(b"r=x"),
    "position-nul": drf(b"p=\x00"),
    "position-not-a-timestamp": drf(b"p=x"),
    "position-naive": drf(b"p=2026-01-01+00%3A00%3A00"),
    "position-overflows-utc": drf(b"p=0001-01-01+00%3A00%3A00%2B05%3A00"),
    "position-twice": drf(b"p=2026-01-01+00%3A00%3A00%2B00%3A00&p=x"),
    "unknown-field": drf(b"x=1"),
    "no-field": drf(b"garbage"),
    "nul-bytes": "AAE",
    "not-base64": "!!!!",
    "garbage": "garbage",
    "utf8": "%ED%A0%80",
    "id-with-nul": encode_cursor("msg_\x00"),
    "id-of-nothing": encode_cursor("msg_doesnotexist"),
    "not-an-id": encode_cursor("o=1&p=x"),
}


@pytest.fixture
def thread(acme: TenantKit) -> Thread:
    return make_thread(acme.tenant, turns=3)


def lists(thread: Thread) -> dict[str, str]:
    base = f"/api/v1/threads/{thread.public_id}"
    return {
        "threads": "/api/v1/threads",
        "summaries": f"{base}/summaries",
        "messages": f"{base}/messages",
        "tree": f"{base}/tree",
    }


@pytest.mark.parametrize("cursor", CRAFTED.values(), ids=CRAFTED.keys())
@pytest.mark.parametrize("name", ["threads", "summaries", "messages", "tree"])
def test_a_cursor_the_server_did_not_issue_is_400(acme, thread, name, cursor):
    r = acme.client.get(f"{lists(thread)[name]}?cursor={cursor}")

    assert error_of(r) == (400, "invalid_cursor"), r.content
    assert r.json()["detail"] == "Invalid cursor."


def test_another_lists_cursor_is_400(acme, thread):
    """A message cursor on the thread list, and the thread list's on the message path."""
    make_thread(acme.tenant)
    thread_cursor = next_cursor(acme.client.get("/api/v1/threads", {"limit": 1}).json())
    message_cursor = next_cursor(acme.client.get(lists(thread)["messages"], {"limit": 1}).json())

    assert error_of(acme.client.get("/api/v1/threads", {"cursor": message_cursor})) == (
        400,
        "invalid_cursor",
    )
    assert error_of(acme.client.get(lists(thread)["messages"], {"cursor": thread_cursor})) == (
        400,
        "invalid_cursor",
    )


def test_another_threads_message_cursor_is_400(acme, thread):
    other = make_thread(acme.tenant, turns=3)
    cursor = next_cursor(acme.client.get(lists(other)["messages"], {"limit": 1}).json())

    for name in ("messages", "tree"):
        assert error_of(acme.client.get(lists(thread)[name], {"cursor": cursor})) == (
            400,
            "invalid_cursor",
        )


@pytest.mark.parametrize("name", ["threads", "messages", "tree"])
def test_issued_cursors_page_through_everything(acme, thread, name):
    for _ in range(2):
        make_thread(acme.tenant)
    everything = acme.client.get(lists(thread)[name], {"limit": 100}).json()["results"]

    seen: list[Any] = []
    url: str | None = f"{lists(thread)[name]}?limit=1"
    while url:
        page = acme.client.get(url).json()
        seen += page["results"]
        url = page["next"]

    # (The message path pages from the leaf back, each page in root → leaf order.)
    assert sorted(item["id"] for item in seen) == sorted(item["id"] for item in everything)
    assert len(seen) == len(everything) == 3


def test_an_empty_cursor_is_a_cursor_the_server_never_issued(acme, thread):
    """``?cursor=`` is not "no cursor": read as page 1, a client looping on ``next`` with a
    broken cursor would start over without noticing."""
    for url in lists(thread).values():
        r = acme.client.get(url, {"cursor": ""})
        assert r.status_code == 400, url
        assert r.json()["code"] == "invalid_cursor"


def next_cursor(page: dict[str, Any]) -> str:
    assert page["next"], page
    return page["next"].split("cursor=", 1)[1].split("&", 1)[0]
