"""Typed results: one frozen dataclass per resource of the API's OpenAPI schema.

Each class names its schema component in ``__schema__``; a test checks that the fields match the
component's properties (and that nullable or optional properties are typed ``… | None``), so
the classes follow the server. ``raw`` keeps the JSON as received (fields the server added
later are there too); results of writes carry the ``idempotency_key`` they were sent with.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from functools import cache
from typing import Any, ClassVar, Generic, TypeVar

__all__ = [
    "ChatMessage",
    "Context",
    "DeletionRequest",
    "ImportReport",
    "ImportResult",
    "MemoError",
    "MemoLag",
    "MemoSection",
    "Message",
    "MessageBatch",
    "Page",
    "Prefix",
    "Replay",
    "Resource",
    "RespondResult",
    "Run",
    "SearchHit",
    "Sections",
    "Summary",
    "SystemSection",
    "Thread",
    "Tokens",
    "TreeNode",
    "Usage",
    "UsagePeriod",
    "UsageRollup",
    "WebhookEndpoint",
    "WebhookEndpointWithSecret",
]

ResourceT = TypeVar("ResourceT", bound="Resource")


@dataclass(frozen=True, kw_only=True)
class Resource:
    """The base of every result: ``raw`` JSON and, on writes, the ``idempotency_key`` used."""

    __schema__: ClassVar[str] = ""
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    idempotency_key: str | None = field(default=None, compare=False)

    @classmethod
    def from_json(cls, data: dict[str, Any], *, idempotency_key: str | None = None) -> Any:
        """Build from the API's JSON; nested resources are built too, unknown keys kept in
        ``raw`` only."""
        values = {
            name: _build(hint, data.get(json_name)) for name, json_name, hint in _api_fields(cls)
        }
        return cls(**values, raw=data, idempotency_key=idempotency_key)


def api_name(item: dataclasses.Field[Any]) -> str:
    """The JSON name of a field (``from_`` is ``from``)."""
    return item.metadata.get("json", item.name)


@cache
def _api_fields(cls: type) -> tuple[tuple[str, str, Any], ...]:
    hints = typing.get_type_hints(cls)
    return tuple(
        (item.name, api_name(item), hints[item.name])
        for item in dataclasses.fields(cls)
        if item.name not in ("raw", "idempotency_key")
    )


def _build(hint: Any, value: Any) -> Any:
    if value is None:
        return None
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        options = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        return _build(options[0], value) if len(options) == 1 else value
    if origin is list:
        (item,) = typing.get_args(hint)
        return [_build(item, entry) for entry in value]
    if isinstance(hint, type) and issubclass(hint, Resource):
        return hint.from_json(value)
    return value


@dataclass(frozen=True, kw_only=True)
class Thread(Resource):
    __schema__ = "Thread"
    id: str
    user_ref: str
    title: str
    metadata: dict[str, Any] | None
    active_leaf_id: str | None
    profile: str | None
    system: str | None
    system_version: int | None
    expires_at: str | None
    created_at: str
    updated_at: str


@dataclass(frozen=True, kw_only=True)
class Message(Resource):
    __schema__ = "Message"
    id: str
    thread_id: str
    parent_id: str | None
    role: str
    content: str | None
    content_parts: list[dict[str, Any]] | None
    tool_calls: list[dict[str, Any]] | None
    tool_call_id: str | None
    metadata: dict[str, Any] | None
    model: str | None
    usage: dict[str, Any] | None
    status: str
    token_count: int
    edits_id: str | None
    assembly_id: str | None
    erased: bool
    created_at: str


@dataclass(frozen=True, kw_only=True)
class TreeNode(Message):
    __schema__ = "TreeNode"
    depth: int
    sibling_index: int
    sibling_count: int


@dataclass(frozen=True, kw_only=True)
class MessageBatch(Resource):
    __schema__ = "MessageBatch"
    results: list[Message]


@dataclass(frozen=True, kw_only=True)
class ChatMessage(Resource):
    __schema__ = "ChatMessage"
    role: str
    content: str | list[dict[str, Any]] | None
    tool_calls: list[dict[str, Any]] | None
    tool_call_id: str | None


@dataclass(frozen=True, kw_only=True)
class SystemSection(Resource):
    __schema__ = "SystemSection"
    hash: str
    tokens: int


@dataclass(frozen=True, kw_only=True)
class MemoSection(Resource):
    __schema__ = "MemoSection"
    summary_id: str
    first_id: str
    last_id: str
    status: str
    chain_depth: int
    # Only when the input left out memo lines that a later turn corrects.
    superseded_lines: list[int] | None


@dataclass(frozen=True, kw_only=True)
class MemoError(Resource):
    __schema__ = "MemoError"
    summary_id: str
    error: str
    failures_in_a_row: int
    retry_at: str


@dataclass(frozen=True, kw_only=True)
class MemoLag(Resource):
    __schema__ = "MemoLag"
    turns: int
    tokens: int
    first_id: str | None
    last_id: str | None


@dataclass(frozen=True, kw_only=True)
class Prefix(Resource):
    __schema__ = "Prefix"
    messages: int
    tokens: int
    hash: str


@dataclass(frozen=True, kw_only=True)
class Sections(Resource):
    __schema__ = "Sections"
    system: SystemSection | None
    memo: MemoSection | None
    anchor: list[str]
    recalled: list[str]
    retrieved: list[str]
    elided: list[str]
    recent: list[str]
    dropped: list[str]


@dataclass(frozen=True, kw_only=True)
class Tokens(Resource):
    __schema__ = "Tokens"
    window: int
    reserve: int
    system: int
    memo: int
    anchor: int
    retrieved: int
    recalled: int
    recent: int
    total: int
    free: int


@dataclass(frozen=True, kw_only=True)
class Context(Resource):
    """A model input assembled by ``/context``: ``messages`` are ready for a chat model."""

    __schema__ = "ContextResponse"
    assembly_id: str
    assembler_version: str
    format: str
    messages: list[ChatMessage]
    prefix: Prefix
    sections: Sections
    tokens: Tokens
    memo_status: str
    pending_memo: MemoSection | None
    memo_error: MemoError | None
    memo_lag: MemoLag

    def chat_messages(self) -> list[dict[str, Any]]:
        """``messages`` as the JSON a chat-completions API takes."""
        return [message.raw for message in self.messages]


@dataclass(frozen=True, kw_only=True)
class Summary(Resource):
    __schema__ = "Summary"
    id: str
    first_id: str
    last_id: str
    covered_ids: list[str]
    status: str
    text: str
    token_count: int
    scores: dict[str, Any] | None
    chain_depth: int
    base_id: str | None
    backend: str
    model: str
    prompt_version: str
    attempts: int
    error: str
    created_at: str
    updated_at: str


@dataclass(frozen=True, kw_only=True)
class Replay(Resource):
    __schema__ = "Replay"
    assembly_id: str
    messages: list[ChatMessage]
    rendered_hash: str
    replayed_hash: str
    matches: bool
    reason: str | None


@dataclass(frozen=True, kw_only=True)
class RespondResult(Resource):
    """One answered turn: the stored user turn and answer."""

    __schema__ = "RespondResult"
    thread_id: str
    user_message: Message
    assistant_message: Message
    assembly_id: str
    finish_reason: str
    usage: dict[str, Any] | None
    cost: str
    currency: str


@dataclass(frozen=True, kw_only=True)
class DeletionRequest(Resource):
    __schema__ = "DeletionRequest"
    id: str
    user_ref: str | None
    thread_id: str | None
    message_id: str | None
    status: str
    reason: str
    created_at: str
    due_at: str
    decided_at: str | None
    rejection_reason: str | None
    executed_at: str | None
    proof: dict[str, Any] | None


@dataclass(frozen=True, kw_only=True)
class SearchHit(Resource):
    __schema__ = "SearchHit"
    message_id: str
    thread_id: str
    user_ref: str
    role: str
    created_at: str
    snippet: str


@dataclass(frozen=True, kw_only=True)
class Usage(Resource):
    __schema__ = "Usage"
    turns: int
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    cache_write_tokens: int
    memos: int
    memo_prompt_tokens: int
    memo_completion_tokens: int
    total_tokens: int
    cost: str


@dataclass(frozen=True, kw_only=True)
class UsagePeriod(Usage):
    __schema__ = "UsagePeriod"
    period: str


@dataclass(frozen=True, kw_only=True)
class UsageRollup(Resource):
    __schema__ = "UsageRollup"
    from_: str = field(metadata={"json": "from"})
    to: str
    group_by: str
    user_ref: str | None
    currency: str
    totals: Usage
    results: list[UsagePeriod]


@dataclass(frozen=True, kw_only=True)
class Page(Resource, Generic[ResourceT]):
    """One page of a list: ``results`` and the ``next`` page's URL (None on the last)."""

    results: list[ResourceT]
    next: str | None

    @classmethod
    def of(cls, item_type: type[ResourceT], data: dict[str, Any]) -> Page[ResourceT]:
        results = [item_type.from_json(entry) for entry in data["results"]]
        return cls(results=results, next=data.get("next"), raw=data)


@dataclass(frozen=True, kw_only=True)
class Run(Resource):
    """A ``/respond`` generated in a worker: ids and states, never content. ``state`` is one of
    ``queued``, ``running``, ``completed``, ``interrupted``, ``cancelled``, ``failed``; ``seq``
    the last event's sequence number."""

    __schema__ = "Run"
    id: str
    thread_id: str
    state: str
    seq: int
    user_message_id: str
    assistant_message_id: str | None
    assembly_id: str | None
    error: str | None
    created_at: str
    updated_at: str

    @property
    def finished(self) -> bool:
        return self.state not in ("queued", "running")


@dataclass(frozen=True, kw_only=True)
class ImportResult(Resource):
    """One conversation of an import: ``status`` ``imported``, ``skipped`` (imported before)
    or ``failed`` (``detail`` says why)."""

    __schema__ = "ImportResult"
    source_id: str
    status: str
    thread_id: str | None
    messages: int
    detail: str


@dataclass(frozen=True, kw_only=True)
class ImportReport(Resource):
    __schema__ = "ImportReport"
    format: str
    imported: int
    skipped: int
    failed: int
    results: list[ImportResult]


@dataclass(frozen=True, kw_only=True)
class WebhookEndpoint(Resource):
    __schema__ = "WebhookEndpoint"
    id: str
    url: str
    events: list[str]
    active: bool
    created_at: str


@dataclass(frozen=True, kw_only=True)
class WebhookDelivery(Resource):
    """One event sent (or being sent) to an endpoint: ``event_id`` is the ``webhook-id`` header
    of every attempt; ``status`` ``pending``, ``delivered`` or ``failed``. Not the payload."""

    __schema__ = "WebhookDelivery"
    event_id: str
    event_type: str
    status: str
    attempts: int
    last_status_code: int | None
    last_error: str
    created_at: str
    delivered_at: str | None


@dataclass(frozen=True, kw_only=True)
class WebhookEndpointWithSecret(WebhookEndpoint):
    """An endpoint as created or rotated: with its signing ``secret`` (``whsec_…``), shown
    only then."""

    __schema__ = "WebhookEndpointWithSecret"
    secret: str
