"""A summarizer backend for any OpenAI-compatible chat-completions server.

OpenAI itself, vLLM, Ollama, llama.cpp's server and a LiteLLM proxy all speak the same
protocol, so one backend covers them; point `CONVMEM_OPENAI_BASE_URL` at the server's `/v1`.
Settings (read when the backend is constructed):

- `CONVMEM_OPENAI_BASE_URL`, e.g. "https://api.openai.com/v1" or "http://127.0.0.1:11434/v1";
- `CONVMEM_OPENAI_MODEL`;
- `CONVMEM_OPENAI_API_KEY` (local servers ignore it, but the SDK wants one);
- `CONVMEM_OPENAI_TIMEOUT`, seconds per request;
- `CONVMEM_OPENAI_CONTEXT_TOKENS`, what the model accepts in one call, input and output
  together (the memo writer keeps the prompt within this minus `max_tokens`).

The prompt asks for the same structured state memo as the embedded backend writes (customer,
one line per case with its facts, closed cases, open items, changes), carried forward from the
previous memo. Its fixed instructions stay under `base.MAX_INSTRUCTION_TOKENS` and each message
is framed by at most `base.MAX_FRAMING_TOKENS` tokens, so the writer's accounting holds.

The SDK never retries (`max_retries=0`): the Celery task owns retries and backoff, and
`BackendError.retryable` tells it whether another attempt can help.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

import openai
from django.conf import settings

from compaction.backends.base import BackendError, MemoDraft, MemoSource
from convmem.upstream import status_is_retryable

PROMPT_VERSION = "memo-prompt/2"
SYSTEM_PROMPT = """You keep a running state memo of a customer-support conversation for a model \
that will not see the messages. You get the previous memo (if any) and the next messages. \
Write the updated memo in exactly this form:

Customer: <name>; customer number <id>; <email>; <phone>
Open cases:
- <kind> <id> (<status>): <fact>; <fact>; ...
Closed cases:
- <kind> <id> (<status>): <fact>; ...
Open items:
- <case id>: <what is pending, and by when>
Changed since previous memo: <new cases; status changes>

Rules:
- One line per case (order, ticket, claim, invoice, subscription, ...). Keep each fact on its \
case's line: ids (order, ticket, tracking, serial, booking, refund and credit note numbers) \
exactly as written, amounts with their currency ("EUR 615.09"), dates ("6 Nov 2024"), and \
what was decided.
- Carry every open case of the previous memo forward, even when the new messages do not \
mention it. Update status and facts when they change; a new date replaces the old one.
- Close a case only when the messages say it is done (delivered, refunded, resolved, paid).
- State nothing the messages and the previous memo do not say. Leave out small talk and \
general policy text.
- Stay within {max_tokens} tokens. When space is short, shorten closed cases to \
"<kind> <id> (<status>)" and drop the oldest closed ones first; never drop an open case's \
ids, amounts, dates or status.
Answer with the memo only."""
PREVIOUS_MEMO_HEADER = "Previous memo:\n"
MESSAGES_HEADER = "New messages:"

DEFAULT_BASE_URL = "http://127.0.0.1:11434/v1"
DEFAULT_MODEL = "llama3.1"
DEFAULT_API_KEY = "not-needed"
DEFAULT_TIMEOUT = 30.0
DEFAULT_CONTEXT_TOKENS = 8192
# How servers say a prompt is larger than the model's context (OpenAI, vLLM, llama.cpp, Ollama).
_CONTEXT_LENGTH = re.compile(
    r"context[_ ]length|maximum context|context size|context window|too many tokens|"
    r"exceeds? the (?:available )?context",
    re.IGNORECASE,
)


class OpenAICompatBackend:
    """Memos from a chat-completions model; see the module docstring for settings."""

    name = "openai"

    def __init__(self) -> None:
        self.model: str = getattr(settings, "CONVMEM_OPENAI_MODEL", DEFAULT_MODEL)
        self.context_tokens = int(
            getattr(settings, "CONVMEM_OPENAI_CONTEXT_TOKENS", DEFAULT_CONTEXT_TOKENS)
        )
        self.client = openai.OpenAI(
            base_url=getattr(settings, "CONVMEM_OPENAI_BASE_URL", DEFAULT_BASE_URL),
            api_key=getattr(settings, "CONVMEM_OPENAI_API_KEY", None) or DEFAULT_API_KEY,
            timeout=float(getattr(settings, "CONVMEM_OPENAI_TIMEOUT", DEFAULT_TIMEOUT)),
            max_retries=0,
        )

    @property
    def _label(self) -> str:
        """Names the model and server in error messages."""
        return f"{self.model} at {self.client.base_url}"

    def summarize(
        self, *, previous_memo: str | None, messages: Sequence[MemoSource], max_tokens: int
    ) -> MemoDraft:
        """One chat-completion call at temperature 0, output capped at `max_tokens`.

        The cap is in the server's tokenizer, which may differ from ours; callers that need a
        hard limit in their encoding must count the result. Raises `BackendError`.
        """
        try:
            completion = self.client.chat.completions.create(
                model=self.model,
                messages=build_prompt(
                    previous_memo=previous_memo, messages=messages, max_tokens=max_tokens
                ),
                max_tokens=max_tokens,
                temperature=0,
            )
        except openai.APIStatusError as error:
            raise self._status_error(error) from error
        except openai.APIError as error:
            # Timeouts, refused connections, replies that fail the SDK's validation.
            raise BackendError(f"{self._label}: {error.message}", retryable=True) from error
        except json.JSONDecodeError as error:
            # The SDK lets a JSON-typed body that is not JSON escape as a bare decode error.
            raise BackendError(
                f"{self._label}: reply is not JSON: {error}",
                retryable=True,
            ) from error
        text = _reply_text(completion)
        if not text:
            raise BackendError(f"{self._label}: reply without memo text", retryable=True)
        prompt_tokens, completion_tokens = _usage(completion)
        return MemoDraft(
            text=text,
            backend=self.name,
            # The server's answer names the exact snapshot that wrote the memo.
            model=getattr(completion, "model", None) or self.model,
            prompt_version=PROMPT_VERSION,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
        )

    def _status_error(self, error: openai.APIStatusError) -> BackendError:
        """A non-2xx reply as a `BackendError`; a prompt over the model's context is named as
        such (retrying cannot help: the range or the context setting must change)."""
        if error.status_code == 400 and _CONTEXT_LENGTH.search(_error_text(error)):
            return BackendError(
                f"{self._label}: the prompt does not fit the model's context (this backend "
                f"assumes {self.context_tokens} tokens, CONVMEM_OPENAI_CONTEXT_TOKENS); the "
                f"server said: {error.message}",
                retryable=False,
            )
        return BackendError(
            f"{self._label}: HTTP {error.status_code}: {error.message}",
            retryable=status_is_retryable(error.status_code),
        )


def build_prompt(
    *, previous_memo: str | None, messages: Sequence[MemoSource], max_tokens: int
) -> list[dict[str, str]]:
    """The chat messages sent for one memo (`PROMPT_VERSION` names this layout).

    Each message is framed as a blank line and "<role>: " (a few tokens: message ids would
    cost ~20 each, and the model needs none).
    """
    parts = []
    if previous_memo:
        parts.append(PREVIOUS_MEMO_HEADER + previous_memo)
    parts.append(MESSAGES_HEADER + "".join(frame(message) for message in messages))
    return [
        {"role": "system", "content": SYSTEM_PROMPT.format(max_tokens=max_tokens)},
        {"role": "user", "content": "\n\n".join(parts)},
    ]


def frame(message: MemoSource) -> str:
    """One message of the transcript as sent: its framing, then its content."""
    return f"\n\n{message.role}: {message.content}"


def _usage(completion: object) -> tuple[int, int]:
    """(prompt_tokens, completion_tokens) from the reply's `usage`; zeros when absent."""
    usage = getattr(completion, "usage", None)
    prompt = getattr(usage, "prompt_tokens", None)
    written = getattr(usage, "completion_tokens", None)
    return (
        prompt if isinstance(prompt, int) else 0,
        written if isinstance(written, int) else 0,
    )


def _error_text(error: openai.APIStatusError) -> str:
    """The error's message and code, wherever the server put them."""
    body = error.body if isinstance(error.body, dict) else {}
    details = body.get("error", body)
    details = details if isinstance(details, dict) else {"message": str(details)}
    return " ".join(
        str(part)
        for part in (
            error.message,
            details.get("message"),
            details.get("code"),
            details.get("type"),
        )
        if part
    )


def _reply_text(completion: object) -> str:
    """The first choice's content, stripped; "" when the reply has none.

    The SDK does not validate replies strictly, so a server's broken answer can arrive as a
    plain string or an object without `choices`.
    """
    choices = getattr(completion, "choices", None)
    if not choices:
        return ""
    message = getattr(choices[0], "message", None)
    content = getattr(message, "content", None)
    return content.strip() if isinstance(content, str) else ""
