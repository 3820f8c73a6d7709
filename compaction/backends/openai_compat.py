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

- `CONVMEM_OPENAI_JSON_SCHEMA` (default True): ask for the memo as JSON-schema output
  (`MEMO_SCHEMA`); a server that answers such a request with a 400 naming `response_format` is
  asked again, and from then on, for plain text.

The prompt asks for the same kind of memo as the embedded backend writes: statements from the
conversation, verbatim or lightly trimmed, one a line ("- <role>: <statement>"), every open item
of the previous memo carried forward, the newest statement of a corrected matter only, closed
matters let go. In JSON mode each line also lists the exact values it keeps (`MemoDraft.values`);
the memo writer checks those and the memo's own values against the source messages and stores
the ones no source holds as unsupported (`compaction.evals.unsupported_values`). Its fixed
instructions stay under `base.MAX_INSTRUCTION_TOKENS` and each message is framed by at most
`base.MAX_FRAMING_TOKENS` tokens, so the writer's accounting holds.

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
from convmem.telemetry import model_call
from convmem.upstream import status_is_retryable

PROMPT_VERSION = "memo-prompt/3"
SYSTEM_PROMPT = """You keep a running memo of a conversation for a model that will not see the \
older messages. You get the previous memo (if any) and the next messages. Write the updated \
memo as a list of statements, oldest first, each taken from the messages verbatim or lightly \
trimmed, with who said it (user, assistant or tool).

Keep what later turns depend on, in any language and domain: statements carrying specific \
values (codes and ids in any case, numbers, amounts with their currency as written, dates and \
times as written, names in any script, addresses, e-mail, URLs, file paths, commands, error \
messages), decisions, preferences and instructions.
Rules:
- Carry every still-open item of the previous memo forward, even when the new messages do not \
mention it.
- When a later statement corrects or updates an earlier one, keep only the newest.
- Drop what the conversation itself closed (resolved, cancelled, no longer needed), small talk \
and general policy text.
- Copy every value exactly as written in the messages; state nothing they do not say.
- Stay within {max_tokens} tokens; when space is short, drop the oldest and least specific \
statements first.
{answer_form}"""
JSON_ANSWER = (
    'Answer with JSON: {"lines": [{"role": ..., "text": ..., "values": [the exact '
    "values the text keeps]}]}."
)
TEXT_ANSWER = (
    'Answer with the memo only, one statement a line: "- <statement>" for the user\'s words, '
    '"- assistant: <statement>" or "- tool: <statement>" for the others.'
)
# The memo as structured output, for servers that support JSON-schema replies.
MEMO_SCHEMA = {
    "name": "memo",
    "strict": True,
    "schema": {
        "type": "object",
        "additionalProperties": False,
        "required": ["lines"],
        "properties": {
            "lines": {
                "type": "array",
                "items": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["role", "text", "values"],
                    "properties": {
                        "role": {"type": "string", "enum": ["user", "assistant", "tool"]},
                        "text": {"type": "string"},
                        "values": {"type": "array", "items": {"type": "string"}},
                    },
                },
            }
        },
    },
}
# How servers say they do not take a JSON-schema `response_format`.
_NO_SCHEMA = re.compile(r"response_format|json_schema|structured output", re.IGNORECASE)
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
        self.json_schema = bool(getattr(settings, "CONVMEM_OPENAI_JSON_SCHEMA", True))
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
        structured = self.json_schema
        with model_call(
            model=self.model,
            base_url=str(self.client.base_url),
            max_tokens=max_tokens,
            temperature=0,
            purpose="memo",
        ) as span:
            try:
                completion = self._complete(
                    previous_memo, messages, max_tokens, structured=structured
                )
            except openai.BadRequestError as error:
                if not (structured and _NO_SCHEMA.search(_error_text(error))):
                    raise self._status_error(error) from error
                # This server takes no JSON schema: ask for plain text from now on.
                self.json_schema = structured = False
                completion = self._complete(previous_memo, messages, max_tokens, structured=False)
            span.finish(model=getattr(completion, "model", None), usage=_usage_report(completion))
        text = _reply_text(completion)
        if not text:
            raise BackendError(f"{self._label}: reply without memo text", retryable=True)
        values: tuple[str, ...] = ()
        if structured:
            text, values = self._from_json(text)
        prompt_tokens, completion_tokens = _usage(completion)
        return MemoDraft(
            text=text,
            backend=self.name,
            # The server's answer names the exact snapshot that wrote the memo.
            model=getattr(completion, "model", None) or self.model,
            prompt_version=PROMPT_VERSION + ("+json" if structured else ""),
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            values=values,
        )

    def _complete(
        self,
        previous_memo: str | None,
        messages: Sequence[MemoSource],
        max_tokens: int,
        *,
        structured: bool,
    ) -> object:
        """One chat-completion call; errors other than a 400 become `BackendError`."""
        extra = {"response_format": {"type": "json_schema", "json_schema": MEMO_SCHEMA}}
        try:
            return self.client.chat.completions.create(
                model=self.model,
                messages=build_prompt(
                    previous_memo=previous_memo,
                    messages=messages,
                    max_tokens=max_tokens,
                    structured=structured,
                ),
                max_tokens=max_tokens,
                temperature=0,
                **(extra if structured else {}),
            )
        except openai.BadRequestError:
            raise
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

    def _from_json(self, reply: str) -> tuple[str, tuple[str, ...]]:
        """The memo lines of a JSON-schema reply as text, and the values they claim to keep."""
        try:
            lines = json.loads(reply)["lines"]
            rendered = [_line(str(line["role"]), str(line["text"])) for line in lines]
            values = tuple(str(value) for line in lines for value in line.get("values") or ())
        except (ValueError, KeyError, TypeError) as error:
            raise BackendError(
                f"{self._label}: reply does not follow the memo schema: {error}", retryable=True
            ) from error
        return "\n".join(rendered), values

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
    *,
    previous_memo: str | None,
    messages: Sequence[MemoSource],
    max_tokens: int,
    structured: bool = False,
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
        {
            "role": "system",
            "content": SYSTEM_PROMPT.format(
                max_tokens=max_tokens, answer_form=JSON_ANSWER if structured else TEXT_ANSWER
            ),
        },
        {"role": "user", "content": "\n\n".join(parts)},
    ]


def frame(message: MemoSource) -> str:
    """One message of the transcript as sent: its framing, then its content."""
    return f"\n\n{message.role}: {message.content}"


def _line(role: str, text: str) -> str:
    """One memo line as the embedded writer writes it (the user's words unmarked)."""
    text = " ".join(text.split())
    return f"- {text}" if role == "user" else f"- {role}: {text}"


def _usage_report(completion: object) -> dict[str, int]:
    """The reply's token counts under convmem's usage keys, for the trace (cached tokens as
    OpenAI reports them, in ``prompt_tokens_details``)."""
    prompt, written = _usage(completion)
    details = getattr(getattr(completion, "usage", None), "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None)
    report = {"prompt_tokens": prompt, "completion_tokens": written}
    return report | ({"cached_tokens": cached} if isinstance(cached, int) else {})


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
