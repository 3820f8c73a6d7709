"""Production settings (``DEBUG=false``) through a real gunicorn after a real collectstatic:
the admin and the API docs get their CSS and JavaScript from the web process (WhiteNoise, no
CDN), and X-Forwarded-Proto is trusted only when configured."""

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from tests.faults.processes import ROOT, WebServer
from tests.support.processes import DJANGO_SETUP, child_prints
from tests.support.worker import worker_database_url

HTTPS = {"X-Forwarded-Proto": "https"}


def production_env(static_root: Path) -> dict[str, str]:
    return {
        "DEBUG": "false",
        "SECRET_KEY": "production-test-" + "k" * 50,
        "ALLOWED_HOSTS": "127.0.0.1",
        "STATIC_ROOT": str(static_root),
    }


@pytest.fixture(scope="module")
def static_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("static")
    subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput", "-v0"],
        cwd=ROOT,
        env={**os.environ, **production_env(root)},
        check=True,
        timeout=300,
    )
    return root


@pytest.fixture
def server(static_root: Path, transactional_db: None) -> Iterator[WebServer]:
    env = {
        **production_env(static_root),
        "DATABASE_URL": worker_database_url(),
        "CONVMEM_KEYS_DATABASE_URL": worker_database_url("keys"),
        "TRUST_X_FORWARDED_PROTO": "true",
    }
    with WebServer(env, workers=1, probe_headers=HTTPS) as web:
        yield web


def assets_of(html: str) -> list[str]:
    """Every stylesheet and script the page loads."""
    return re.findall(r'(?:href|src)="([^"]+\.(?:css|js))"', html)


def test_the_admin_gets_its_stylesheets_compressed_and_cached(server):
    page = requests.get(f"{server.url}/admin/login/", headers=HTTPS, timeout=10)

    assert page.status_code == 200
    stylesheets = [a for a in assets_of(page.text) if a.endswith(".css")]
    base = next(a for a in stylesheets if "/admin/css/base." in a)
    # Content-hashed by the manifest storage, so it can be cached for good.
    assert re.search(r"/static/admin/css/base\.[0-9a-f]{12}\.css$", base), base
    for asset in stylesheets:
        r = requests.get(
            f"{server.url}{asset}", headers={**HTTPS, "Accept-Encoding": "gzip"}, timeout=10
        )
        assert r.status_code == 200, asset
        assert r.headers["Content-Type"].startswith("text/css")
        assert r.headers["Content-Encoding"] == "gzip"
        assert "immutable" in r.headers["Cache-Control"]


@pytest.mark.parametrize("docs", ["/api/v1/docs/", "/api/v1/redoc/"])
def test_the_api_docs_load_everything_from_this_server(server, docs):
    page = requests.get(f"{server.url}{docs}", headers=HTTPS, timeout=10)

    assert page.status_code == 200
    assert "//cdn" not in page.text
    assets = assets_of(page.text)
    assert any("/static/drf_spectacular_sidecar/" in a for a in assets), assets
    for asset in assets:
        assert asset.startswith("/static/"), asset
        assert requests.get(f"{server.url}{asset}", headers=HTTPS, timeout=10).status_code == 200


def test_x_forwarded_proto_is_trusted_only_when_configured(server, static_root):
    plain = requests.get(f"{server.url}/admin/login/", allow_redirects=False, timeout=10)
    untrusted = child_prints(
        DJANGO_SETUP + "from django.conf import settings; print(settings.SECURE_PROXY_SSL_HEADER)",
        **production_env(static_root),
    )

    # Plain HTTP without the proxy's header is sent to HTTPS (SECURE_SSL_REDIRECT).
    assert plain.status_code == 301
    assert plain.headers["Location"].startswith("https://")
    assert untrusted.strip() == "None"
