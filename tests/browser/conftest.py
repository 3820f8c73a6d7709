"""Real-browser fixtures: Debian's Chromium driven by Playwright against pytest-django's
``live_server`` (a real HTTP server thread over the transactional test database).

Playwright's sync API runs an asyncio loop in the test's thread. While it runs, Django refuses
ORM calls from this thread, and the ORM would not even reach the test's own connection (Django
keeps connections in context-local storage). So a test sets up its data first and only then
opens the browser (``open_page``), and the browser is closed before pytest-django flushes the
database. The one switch, ``DJANGO_ALLOW_ASYNC_UNSAFE``, is on only while a browser is open.
"""

import importlib
import os
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from django.contrib.auth.models import Group, Permission
from playwright.sync_api import Page, sync_playwright

from tests.conftest import REQUIRE_SERVICES

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"


@pytest.fixture
def staff_groups(transactional_db: None) -> None:
    """The Support and Compliance groups, as the audit migrations define them.

    The flush after every transactional test removes what migrations created (and other
    modules' flushes re-create content types and permissions with new ids, so a serialized
    rollback cannot restore them), so each test makes them again from the migration's table.
    """
    groups = importlib.import_module("audit.migrations.0002_permission_groups").GROUPS
    usage = importlib.import_module("audit.migrations.0003_view_usage_for_staff_groups").GRANTS
    for name, wanted in groups.items():
        group, _ = Group.objects.get_or_create(name=name)
        group.permissions.set(
            [
                Permission.objects.get(content_type__app_label=app_label, codename=codename)
                for app_label, codename in [*wanted, *usage.get(name, [])]
            ]
        )


@pytest.fixture
def open_page(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Page]]:
    """``open_page()`` launches Chromium and returns a fresh page (1280 px wide, or ``width``);
    all is closed after the test."""
    if not os.path.exists(CHROMIUM):
        missing = "needs Debian's chromium at /usr/bin/chromium (.ci/run installs it)"
        if REQUIRE_SERVICES:
            pytest.fail(missing)
        pytest.skip(missing)
    with ExitStack() as stack:

        def open_(width: int = 1280) -> Page:
            monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
            playwright = stack.enter_context(sync_playwright())
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            stack.callback(browser.close)
            page = browser.new_context(viewport={"width": width, "height": 900}).new_page()
            page.set_default_timeout(15_000)
            return page

        yield open_


def screenshot(page: Page, name: str) -> Path:
    """Save a full-page screenshot as ``test-artifacts/screenshots/<name>.png``."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
