"""The tours of clients/python/README.md and clients/typescript/README.md run unchanged against
a running service (gunicorn on the test database, calling the local chat model), each in its own
process, as a reader would run them.

The service is a process of its own (``web``), not pytest-django's in-process ``live_server``:
twice in full runs on Python 3.11 (never in isolation, never on 3.12 or 3.13) CPython crashed
with a segmentation fault in a live-server thread finishing a tour's request
(``django.urls.set_urlconf`` under ``request_finished``), which ended the whole test session. A
server process of its own is also what a reader's tour talks to."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.client.test_typescript import PACKAGE, node_modules  # noqa: F401  (the fixture)
from tests.respond.conftest import REPLY, chat, web  # noqa: F401  (the chat server, gunicorn)
from threads.models import Thread

pytestmark = pytest.mark.django_db(transaction=True)

CLIENTS = Path(__file__).resolve().parents[2] / "clients"


def tour(readme: Path, language: str) -> str:
    """The first code block in ``language`` after the "## A tour" heading."""
    text = readme.read_text()
    section = text[text.index("## A tour") :]
    return re.search(rf"```{language}\n(.*?)```", section, re.DOTALL).group(1)


def run(command: list[str], cwd: Path, web, kit) -> str:  # noqa: F811
    env = {**os.environ, "CONVMEM_BASE_URL": web.url, "CONVMEM_API_KEY": kit.key}
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_the_python_tour_runs(web, acme, tmp_path):  # noqa: F811
    script = tmp_path / "tour.py"
    script.write_text(tour(CLIENTS / "python" / "README.md", "python"))
    output = run([sys.executable, str(script)], tmp_path, web, acme)
    assert output.startswith(REPLY)
    assert Thread.objects.get().deleted_at is not None


def test_the_typescript_tour_runs(node_modules, web, acme, tmp_path):  # noqa: F811
    # Installed as a reader would have it: `import … from "convmem-client"`.
    (tmp_path / "node_modules").mkdir()
    (tmp_path / "node_modules" / "convmem-client").symlink_to(PACKAGE)
    script = tmp_path / "tour.mjs"
    script.write_text(tour(CLIENTS / "typescript" / "README.md", "js"))
    output = run(["node", str(script)], tmp_path, web, acme)
    assert output.startswith(REPLY)
    assert Thread.objects.get().deleted_at is not None
