"""The API docs page (ReDoc) renders the schema in a real browser without any outside request."""

from urllib.parse import urlsplit

import pytest

pytestmark = pytest.mark.browser


def test_redoc_renders_from_this_server_alone(live_server, open_page):
    """ReDoc's footer asks for Redocly's logo from their CDN: the page's Content-Security-Policy
    makes the browser refuse it before it reaches the network."""
    page = open_page()
    requested: list[str] = []
    refused: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    page.on(
        "requestfailed",
        lambda request: request.failure == "csp" and refused.append(request.url),
    )

    page.goto(f"{live_server.url}/api/v1/redoc/")
    page.get_by_text("convmem API", exact=False).first.wait_for()
    page.get_by_text("messages_append_batch", exact=False).first.wait_for(state="attached")

    here = urlsplit(live_server.url).netloc
    web = [url for url in requested if urlsplit(url).scheme in ("http", "https")]
    outside = [url for url in web if urlsplit(url).netloc != here]
    assert [url for url in outside if url not in refused] == []
