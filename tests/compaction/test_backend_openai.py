"""The OpenAI-compatible backend against a real local chat-completions server (no mocks)."""

import json
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from pytest_django.fixtures import Settings as SettingsFixture

from compaction.backends import get_backend
from compaction.backends.base import BackendError, MemoSource
from compaction.backends.openai_compat import PROMPT_VERSION, SYSTEM_PROMPT, OpenAICompatBackend
from tests.support.chat_server import ChatServer

API_KEY = "sk-test-convmem"
MODEL = "test-memo-model"
REPO_ROOT = Path(__file__).resolve().parents[2]
MESSAGES = [
    MemoSource(id="msg_a1", role="user", content="My order ORD-48213 was charged $40 twice."),
    MemoSource(id="msg_b2", role="assistant", content="Sorry! I opened ticket TCK-5521."),
    MemoSource(id="msg_c3", role="user", content="Thanks.\nPlease email dana@example.com."),
]


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with ChatServer(api_key=API_KEY) as chat_server:
        yield chat_server


@pytest.fixture
def backend(settings: SettingsFixture, server: ChatServer) -> OpenAICompatBackend:
    settings.CONVMEM_OPENAI_BASE_URL = server.base_url
    settings.CONVMEM_OPENAI_MODEL = MODEL
    settings.CONVMEM_OPENAI_API_KEY = API_KEY
    settings.CONVMEM_OPENAI_TIMEOUT = 0.5
    return OpenAICompatBackend()


def _summarize(backend: OpenAICompatBackend, previous_memo: str | None = None) -> str:
    return backend.summarize(previous_memo=previous_memo, messages=MESSAGES, max_tokens=120).text


def test_it_sends_the_versioned_prompt_and_returns_the_memo(
    backend: OpenAICompatBackend, server: ChatServer
) -> None:
    draft = backend.summarize(previous_memo=None, messages=MESSAGES, max_tokens=120)

    (request,) = server.requests
    assert request.headers["authorization"] == f"Bearer {API_KEY}"
    assert request.body["model"] == MODEL
    assert request.body["max_tokens"] == 120
    system, user = request.body["messages"]
    assert system == {"role": "system", "content": SYSTEM_PROMPT.format(max_tokens=120)}
    assert "at most 120 tokens" in system["content"]
    for message in MESSAGES:
        assert f"[{message.id}] {message.role}: {message.content}" in user["content"]
    assert "Previous memo" not in user["content"]
    # The test server answers with the fact-bearing lines of the prompt.
    assert "ORD-48213" in draft.text
    assert "dana@example.com" in draft.text
    assert (draft.backend, draft.model, draft.prompt_version) == ("openai", MODEL, PROMPT_VERSION)


def test_it_sends_the_previous_memo(backend: OpenAICompatBackend, server: ChatServer) -> None:
    _summarize(backend, previous_memo="- user: Paid $12 for ORD-1.")

    user = server.requests[0].body["messages"][1]["content"]
    assert user.index("- user: Paid $12 for ORD-1.") < user.index("[msg_a1]")


def test_get_backend_builds_it_from_settings(settings: SettingsFixture, server: ChatServer) -> None:
    settings.CONVMEM_SUMMARIZER_BACKEND = "openai"
    settings.CONVMEM_OPENAI_BASE_URL = server.base_url
    settings.CONVMEM_OPENAI_API_KEY = API_KEY

    backend = get_backend()

    assert isinstance(backend, OpenAICompatBackend)
    assert _summarize(backend)  # type: ignore[arg-type]


def test_a_server_error_is_retryable(backend: OpenAICompatBackend, server: ChatServer) -> None:
    server.configure(mode="error500")

    with pytest.raises(BackendError, match="HTTP 500") as caught:
        _summarize(backend)

    assert caught.value.retryable


def test_a_timeout_is_retryable(backend: OpenAICompatBackend, server: ChatServer) -> None:
    server.configure(mode="timeout", delay=2.0)
    started = time.monotonic()

    with pytest.raises(BackendError) as caught:
        _summarize(backend)

    assert caught.value.retryable
    assert time.monotonic() - started < 1.5


@pytest.mark.parametrize("mode", ["malformed", "no_choices", "empty"])
def test_a_malformed_reply_is_retryable(
    backend: OpenAICompatBackend, server: ChatServer, mode: str
) -> None:
    server.configure(mode=mode)

    with pytest.raises(BackendError) as caught:
        _summarize(backend)

    assert caught.value.retryable


def test_bad_credentials_are_not_retryable(settings: SettingsFixture, server: ChatServer) -> None:
    settings.CONVMEM_OPENAI_BASE_URL = server.base_url
    settings.CONVMEM_OPENAI_API_KEY = "sk-wrong"

    with pytest.raises(BackendError, match="HTTP 401") as caught:
        _summarize(OpenAICompatBackend())

    assert not caught.value.retryable


def test_a_refused_connection_is_retryable(settings: SettingsFixture) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    settings.CONVMEM_OPENAI_BASE_URL = f"http://127.0.0.1:{closed_port}/v1"

    with pytest.raises(BackendError) as caught:
        _summarize(OpenAICompatBackend())

    assert caught.value.retryable


def test_retries_belong_to_the_caller(backend: OpenAICompatBackend, server: ChatServer) -> None:
    server.configure(mode="fail_n_then_ok", fail_n=1)

    with pytest.raises(BackendError):
        _summarize(backend)
    assert len(server.requests) == 1  # the SDK did not retry on its own

    assert "ORD-48213" in _summarize(backend)
    assert len(server.requests) == 2


def test_the_server_runs_as_a_process_and_takes_control_requests(settings: SettingsFixture) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.support.chat_server", "--port", "0", "--mode", "ok"],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        base_url = process.stdout.readline().split()[-1]
        settings.CONVMEM_OPENAI_BASE_URL = base_url
        assert "ORD-48213" in _summarize(OpenAICompatBackend())

        control = urllib.request.Request(
            base_url.removesuffix("/v1") + "/_control",
            data=json.dumps({"mode": "error500"}).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(control, timeout=5) as response:
            assert json.load(response)["mode"] == "error500"
        with pytest.raises(BackendError, match="HTTP 500"):
            _summarize(OpenAICompatBackend())
    finally:
        process.terminate()
        assert process.wait(timeout=5) == 0
