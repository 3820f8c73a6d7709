"""The TypeScript client (clients/typescript): its node tests against a live server, its types
generated from the current OpenAPI schema, and a type check.

node_modules is installed from the committed package-lock.json (``npm ci``) when missing; after
that everything runs offline."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from drf_spectacular.generators import SchemaGenerator

from tests.respond.conftest import REPLY, chat  # noqa: F401  (the chat server fixture)
from tests.support.chat_server import CONTROL_PATH

PACKAGE = Path(__file__).resolve().parents[2] / "clients" / "typescript"
BIN = PACKAGE / "node_modules" / ".bin"


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


@pytest.mark.django_db(transaction=True)
def test_the_node_tests_pass_against_a_live_server(node_modules, live_server, acme_exporter, chat):  # noqa: F811
    chat_root = chat.base_url.removesuffix("/v1")
    result = run(
        ["node", "--test", "--test-reporter=tap", "test/"],
        env={
            "CONVMEM_BASE_URL": live_server.url,
            "CONVMEM_API_KEY": acme_exporter.key,
            "CONVMEM_TEST_CHAT_CONTROL": chat_root + CONTROL_PATH,
            "CONVMEM_TEST_REPLY": REPLY,
        },
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "# fail 0" in result.stdout, result.stdout


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
