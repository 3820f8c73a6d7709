"""The TypeScript client (clients/typescript): its node tests against a live server, its types
generated from the current OpenAPI schema, and a type check.

node_modules is installed from the committed package-lock.json (``npm ci``) when missing; after
that everything runs offline."""

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from drf_spectacular.generators import SchemaGenerator

from tests.respond.conftest import CHAT_MODEL, REPLY, chat  # noqa: F401  (the chat server fixture)
from tests.support.chat_server import CONTROL_PATH, ChatServer
from tests.support.worker import CeleryWorker, start_worker

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "clients" / "typescript"
BIN = PACKAGE / "node_modules" / ".bin"
CHATGPT_EXPORT = ROOT / "tests" / "fixtures" / "imports" / "chatgpt_conversations.json"


@pytest.fixture(scope="module")
def node_modules() -> Path:
    assert shutil.which("node"), "node (v20 or later) is needed for the TypeScript client"
    if not (BIN / "openapi-typescript").exists() or not (BIN / "tsc").exists():
        subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund"], cwd=PACKAGE, check=True, capture_output=True
        )
    return BIN


def run(command: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        command,
        cwd=PACKAGE,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
    )


def node_tests(
    test_file: str, server_url: str, key: str, chat_base_url: str, **extra_env: str
) -> None:
    """Run one node test file against the live server (``extra_env``: more variables for it);
    fail with its TAP output."""
    result = run(
        ["node", "--test", "--test-reporter=tap", test_file],
        env={
            "CONVMEM_BASE_URL": server_url,
            "CONVMEM_API_KEY": key,
            "CONVMEM_TEST_CHAT_CONTROL": chat_base_url.removesuffix("/v1") + CONTROL_PATH,
            "CONVMEM_TEST_REPLY": REPLY,
            "CONVMEM_TEST_IMPORT_FILE": str(CHATGPT_EXPORT),
            **extra_env,
        },
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "# fail 0" in result.stdout, result.stdout
    assert "# pass 0\n" not in result.stdout, result.stdout
    assert "# skipped 0" in result.stdout, result.stdout


@pytest.mark.django_db(transaction=True)
def test_the_node_tests_pass_against_a_live_server(node_modules, live_server, acme_exporter, chat):  # noqa: F811
    node_tests("test/client.test.js", live_server.url, acme_exporter.key, chat.base_url)


@pytest.fixture(scope="module")
def worker_chat() -> Iterator[ChatServer]:
    with ChatServer() as server:
        server.configure(reply=REPLY)
        yield server


@pytest.fixture(scope="module")
def answering_worker(worker_chat: ChatServer, django_db_setup: None) -> Iterator[CeleryWorker]:
    """A worker that generates answers (calling ``worker_chat``) and delivers webhooks to the
    node tests' local receiver."""
    env = {
        "CONVMEM_CHAT_BASE_URL": worker_chat.base_url,
        "CONVMEM_CHAT_MODEL": CHAT_MODEL,
        "CONVMEM_RESPOND_IN_WORKER": "1",
        "CONVMEM_WEBHOOKS_ALLOW_PRIVATE": "1",
    }
    with start_worker(env) as worker:
        yield worker


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(not django_settings.REDIS_URL, reason="runs need REDIS_URL")
def test_the_run_webhook_and_import_node_tests_pass_with_a_worker(
    node_modules, live_server, acme, worker_chat, answering_worker, settings: Any
):
    settings.CONVMEM_RESPOND_IN_WORKER = True
    settings.CONVMEM_CHAT_BASE_URL = worker_chat.base_url
    settings.CONVMEM_WEBHOOKS_ALLOW_PRIVATE = True
    node_tests("test/runs.test.js", live_server.url, acme.key, worker_chat.base_url)


def test_the_generated_types_match_the_current_schema(node_modules, tmp_path):
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(SchemaGenerator().get_schema(request=None, public=True)))
    generated = tmp_path / "schema.d.ts"
    result = run(
        [
            str(node_modules / "openapi-typescript"),
            str(schema),
            "--default-non-nullable",
            "false",
            "-o",
            str(generated),
        ]
    )
    assert result.returncode == 0, result.stderr
    committed = (PACKAGE / "src" / "schema.d.ts").read_text()
    assert generated.read_text() == committed, (
        "clients/typescript/src/schema.d.ts is out of date: regenerate it (see its README)"
    )


def test_the_declared_types_check(node_modules):
    result = run([str(node_modules / "tsc"), "-p", "."])
    assert result.returncode == 0, result.stdout + result.stderr
