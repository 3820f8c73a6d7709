"""The OpenAI-compatible backend against a real local chat-completions server (no mocks)."""

import json
import logging
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from pytest_django.fixtures import Settings as SettingsFixture

from compaction.backends import get_backend
from compaction.backends.base import (
    MAX_FRAMING_TOKENS,
    MAX_INSTRUCTION_TOKENS,
    BackendError,
    MemoSource,
)
from compaction.backends.openai_compat import (
    JSON_ANSWER,
    MEMO_SCHEMA,
    MESSAGES_HEADER,
    PREVIOUS_MEMO_HEADER,
    PROMPT_VERSION,
    SYSTEM_PROMPT,
    TEXT_ANSWER,
    OpenAICompatBackend,
    frame,
)
from convmem.tokens import count_tokens
from memo_eval.project.generator import generate
from memo_eval.project.report import evaluate_split
from memo_eval.project.simulate import LoopSettings
from tests.support.chat_server import ChatServer, fake_summary, json_memo, prompt_words

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
    # Generous: a loaded CI machine must not turn an answer into a timeout (the timeout test
    # sets its own).
    settings.CONVMEM_OPENAI_TIMEOUT = 10.0
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
    assert system == {
        "role": "system",
        "content": SYSTEM_PROMPT.format(max_tokens=120, answer_form=JSON_ANSWER),
    }
    assert "Stay within 120 tokens" in system["content"]
    assert request.body["response_format"] == {"type": "json_schema", "json_schema": MEMO_SCHEMA}
    for message in MESSAGES:
        assert f"{message.role}: {message.content}" in user["content"]
    assert "msg_a1" not in user["content"]  # ids would cost ~20 tokens a message
    assert "Previous memo" not in user["content"]
    # The test server answers with the fact-bearing lines of the prompt, as JSON lines.
    assert draft.text.startswith("- ")
    assert "ORD-48213" in draft.text
    assert "dana@example.com" in draft.text
    assert "ORD-48213" in draft.values
    assert (draft.backend, draft.model, draft.prompt_version) == (
        "openai",
        MODEL,
        PROMPT_VERSION + "+json",
    )
    assert draft.prompt_tokens == prompt_words(request.body)
    assert draft.completion_tokens == len(json_memo(fake_summary(request.body)).split())


def test_a_server_without_json_schema_output_is_asked_for_plain_text(
    backend: OpenAICompatBackend, server: ChatServer
) -> None:
    server.configure(json_schema=False)

    first = backend.summarize(previous_memo=None, messages=MESSAGES, max_tokens=120)
    backend.summarize(previous_memo=None, messages=MESSAGES, max_tokens=120)

    refused, plain, later = server.requests
    assert "response_format" in refused.body
    assert "response_format" not in plain.body
    assert "response_format" not in later.body
    assert TEXT_ANSWER in plain.body["messages"][0]["content"]
    assert first.prompt_version == PROMPT_VERSION
    assert "ORD-48213" in first.text
    assert first.values == ()


def test_a_reply_that_breaks_the_schema_is_retryable(
    backend: OpenAICompatBackend, server: ChatServer
) -> None:
    server.configure(reply='{"memo": "ORD-48213"}')

    with pytest.raises(BackendError, match="memo schema") as caught:
        _summarize(backend)

    assert caught.value.retryable


def test_the_prompt_asks_for_the_same_kind_of_memo_as_the_embedded_writer() -> None:
    assert "verbatim or lightly" in SYSTEM_PROMPT
    assert "Carry every still-open item of the previous memo forward" in SYSTEM_PROMPT
    assert "keep only the newest" in SYSTEM_PROMPT
    assert "Copy every value exactly as written" in SYSTEM_PROMPT
    assert '"- assistant: <statement>"' in TEXT_ANSWER


@pytest.mark.parametrize("answer_form", [JSON_ANSWER, TEXT_ANSWER])
def test_the_prompt_overhead_fits_the_writers_accounting(answer_form: str) -> None:
    fixed = (
        SYSTEM_PROMPT.format(max_tokens=99999, answer_form=answer_form)
        + PREVIOUS_MEMO_HEADER
        + MESSAGES_HEADER
    )

    assert count_tokens(fixed) < MAX_INSTRUCTION_TOKENS
    for role in ("user", "assistant", "system", "tool"):
        assert count_tokens(frame(MemoSource(id="msg_x", role=role, content=""))) <= (
            MAX_FRAMING_TOKENS
        )


def test_it_sends_the_previous_memo(backend: OpenAICompatBackend, server: ChatServer) -> None:
    _summarize(backend, previous_memo="- order ORD-1 (shipped): paid USD 12.00")

    user = server.requests[0].body["messages"][1]["content"]
    assert user.startswith("Previous memo:\n- order ORD-1 (shipped): paid USD 12.00")
    assert user.index("ORD-1 (shipped)") < user.index("user: My order ORD-48213")


def test_a_prompt_over_the_context_is_a_clear_permanent_error(
    backend: OpenAICompatBackend, server: ChatServer
) -> None:
    server.configure(context_limit=100)

    with pytest.raises(BackendError, match="does not fit the model's context") as caught:
        _summarize(backend)

    assert not caught.value.retryable
    assert "CONVMEM_OPENAI_CONTEXT_TOKENS" in str(caught.value)
    assert "maximum context length is 100" in str(caught.value)


def test_other_bad_requests_are_permanent_but_not_called_context_errors(
    backend: OpenAICompatBackend,
) -> None:
    backend.client.base_url = str(backend.client.base_url).removesuffix("/v1/") + "/v1/nope/"

    with pytest.raises(BackendError, match="HTTP 404") as caught:
        _summarize(backend)

    assert not caught.value.retryable
    assert "context" not in str(caught.value)


def test_context_tokens_come_from_the_setting(
    settings: SettingsFixture, server: ChatServer
) -> None:
    settings.CONVMEM_OPENAI_BASE_URL = server.base_url
    assert OpenAICompatBackend().context_tokens == 8192
    settings.CONVMEM_OPENAI_CONTEXT_TOKENS = 32768

    assert OpenAICompatBackend().context_tokens == 32768


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


def test_a_timeout_is_retryable(
    backend: OpenAICompatBackend, server: ChatServer, settings: SettingsFixture
) -> None:
    settings.CONVMEM_OPENAI_TIMEOUT = 0.5
    server.configure(mode="timeout", delay=2.0)  # it answers, but after the timeout

    with pytest.raises(BackendError, match="timed out") as caught:
        _summarize(OpenAICompatBackend())

    assert caught.value.retryable


@pytest.mark.parametrize("mode", ["malformed", "no_choices", "empty"])
def test_a_malformed_reply_is_retryable(
    backend: OpenAICompatBackend, server: ChatServer, mode: str
) -> None:
    server.configure(mode=mode)

    with pytest.raises(BackendError) as caught:
        _summarize(backend)

    assert caught.value.retryable


def test_the_sdk_logs_no_request_line_with_the_url(
    backend: OpenAICompatBackend, server: ChatServer, caplog: pytest.LogCaptureFixture
) -> None:
    # The SDK's httpx2 logs every request at INFO with its URL; settings quiet it, as httpx.
    with caplog.at_level(logging.INFO):
        _summarize(backend)

    assert server.requests
    assert not [record for record in caplog.records if server.base_url in record.getMessage()]


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


def test_the_memo_evaluation_runs_against_the_server(
    backend: OpenAICompatBackend, server: ChatServer
) -> None:
    conversations = [generate(seed=1, phrasing="dev", turns=60)]
    loop = LoopSettings(checkpoints=(60,))

    report = evaluate_split(backend, conversations, loop)

    (run,) = report.runs
    assert run.calls == len(server.requests) >= 2
    assert run.prompt_tokens == sum(prompt_words(request.body) for request in server.requests)
    assert report.prompt_version == PROMPT_VERSION + "+json"
    # Each chained call gets the previous memo back.
    later = server.requests[1].body["messages"][1]["content"]
    assert later.startswith(PREVIOUS_MEMO_HEADER)

    server.configure(context_limit=50)
    failed = evaluate_split(backend, conversations, loop)

    assert failed.runs == []
    assert "does not fit the model's context" in failed.failures[0][1]
