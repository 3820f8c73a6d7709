"""Rendering a curated plan into OpenAI Chat Completions messages, and the hash that
identifies a rendered input.

Pure functions (no database): the context service renders with them, and a replay rebuilds a
recorded input from the assembly record's ``items`` plus the payloads they name, then compares
``rendered_hash``. The layout of one model input, in order:

1. the system prompt (a ``system`` message), if any;
2. the memo, as a ``system`` message: ``MEMO_HEADER`` (no ids: older records named the range), then
   its text, less the lines that turns shown after it correct (``superseded_lines``);
3. the anchor (the task statement: the conversation's first user turn), verbatim;
4. each recalled message (an older turn matching the current one, found by the search index),
   oldest first, as a ``system`` message ``RECALLED_HEADER`` (its role and id) + its text;
5. each retrieved item, as a ``system`` message ``Retrieved (<ref>):`` + its content;
6. the recent turns verbatim, oldest first; the current turn is the last message.

Recalled messages are quoted, not replayed in their own roles: they are excerpts out of
order, and a system message saying "earlier in this conversation" cannot be mistaken for the
turn the model answers next; an assistant turn's tool calls are quoted as text, so no call
appears without its results. They come after the memo and anchor (the stable part a prompt
cache serves) and before the per-turn material.

Record items (``AssemblyRecord.items``), one per message, in that order::

    {"kind": "system", "hash": sha256, "tokens": n}
    {"kind": "summary", "id": "sum_…", "first_id": "msg_…", "last_id": "msg_…", "tokens": n,
     "header": 2, "superseded_lines": [3, 7]}  # the last key only when lines are left out
    {"kind": "message", "id": "msg_…", "role": "user", "tokens": n, "anchor": true}  # anchor
    {"kind": "recalled", "id": "msg_…", "role": "user", "tokens": n}
    {"kind": "retrieved", "ref": "…", "hash": sha256, "tokens": n}
    {"kind": "message", "id": "msg_…", "role": "assistant", "tokens": n}
    {"kind": "message", "id": "msg_…", "role": "tool", "tokens": n, "elided": true}
    {"kind": "message", "id": "msg_…", "role": "tool", "tokens": n, "uncalled": true}

``tokens`` is the token count of the rendered message's content (headers and markers
included, the per-message overhead not). A message renders with its content parts, tool calls
and ``tool_call_id`` (``MessagePayload``); ``elided`` shows a tool result as
``ELIDED_TOOL_RESULT``; ``uncalled`` marks a tool result recorded before tool calls were
stored, which has no call to answer and renders as a system message ``Tool output:`` + its
content so the input stays valid. ``payloads`` for ``render`` come from ``item_payload_key``:
the system prompt and retrieved contents by hash (``compaction.ContentBlob``), a summary's ``text``
by public id, a message's (or a recalled message's) ``MessagePayload`` by public id.
"""

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

MEMO_HEADER = "Summary of earlier conversation:\n"
# Until December 2026 the header named the range by internal ids, which meant nothing to the
# model; records made then (summary items without ``"header": 2``) replay with it.
MEMO_HEADER_V1 = "Summary of earlier conversation (messages {first}…{last}):\n"
MEMO_HEADER_VERSION = 2
RETRIEVED_HEADER = "Retrieved ({ref}):\n"
RECALLED_HEADER = "Earlier in this conversation ({role}, message {id}):\n"
UNCALLED_TOOL_HEADER = "Tool output:\n"
ELIDED_TOOL_RESULT = (
    "[Tool result elided to save context: {tokens} tokens, message {id}. "
    "Call the tool again if you need it.]"
)
FORMAT = "openai.chat_completions"

Message = dict[str, Any]


class MissingText(KeyError):
    """``render`` was not given the payload of one of the items (erased or never stored)."""


@dataclass(frozen=True)
class MessagePayload:
    """What a stored message contributes to the model input besides its role."""

    content: str
    content_parts: list[dict[str, Any]] | None = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str = ""


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def memo_content(*, text: str) -> str:
    """The memo message's content. The header ends in ``":\\n"`` so, with cl100k-style
    encodings, its tokens never merge with the text's: count(header + text) is what the memo
    writer stores as the summary's ``token_count``. No internal ids: the model cannot use them."""
    return MEMO_HEADER + text


def memo_text_shown(text: str, superseded_lines: Sequence[int] = ()) -> str:
    """The memo's text as an input shows it: without the lines that turns shown after it
    correct (their indices in ``text.split("\\n")``; see ``compaction.context``)."""
    if not superseded_lines:
        return text
    left_out = set(superseded_lines)
    return "\n".join(line for index, line in enumerate(text.split("\n")) if index not in left_out)


def _recorded_memo_content(item: Mapping[str, Any], text: str) -> str:
    text = memo_text_shown(text, item.get("superseded_lines", ()))
    if item.get("header") == MEMO_HEADER_VERSION:
        return memo_content(text=text)
    return MEMO_HEADER_V1.format(first=item["first_id"], last=item["last_id"]) + text


def retrieved_content(*, ref: str, content: str) -> str:
    return RETRIEVED_HEADER.format(ref=ref) + content


def recalled_content(*, message_id: str, role: str, payload: MessagePayload) -> str:
    """A recalled message quoted: its role and id, its text, and any tool calls it made."""
    lines = [payload.content] if payload.content else []
    for call in payload.tool_calls or []:
        function = call.get("function", {})
        lines.append(f"Called {function.get('name', '')}({function.get('arguments', '')})")
    return RECALLED_HEADER.format(role=role, id=message_id) + "\n".join(lines)


def elided_tool_result(*, message_id: str, tokens: int) -> str:
    """The marker shown in place of a bulky tool result the curator elided."""
    return ELIDED_TOOL_RESULT.format(tokens=tokens, id=message_id)


def uncalled_tool_content(content: str) -> str:
    return UNCALLED_TOOL_HEADER + content


def item_payload_key(item: Mapping[str, Any]) -> str:
    """The key under which ``render`` expects an item's payload: the content hash for system
    and retrieved items, the public id for summaries and messages."""
    return item["hash"] if item["kind"] in ("system", "retrieved") else item["id"]


def render(items: Sequence[Mapping[str, Any]], payloads: Mapping[str, Any]) -> list[Message]:
    """The chat messages of a recorded input, one per item, in order.

    ``payloads`` maps ``item_payload_key(item)`` to a text (system prompt, retrieved content,
    summary text) or, for messages, a ``MessagePayload``. Raises ``MissingText`` naming the
    first item without one.
    """
    messages: list[Message] = []
    for item in items:
        key = item_payload_key(item)
        if key not in payloads:
            raise MissingText(f"no text for {item['kind']} {key}")
        payload = payloads[key]
        kind = item["kind"]
        if kind == "system":
            messages.append({"role": "system", "content": payload})
        elif kind == "summary":
            content = _recorded_memo_content(item, payload)
            messages.append({"role": "system", "content": content})
        elif kind == "recalled":
            content = recalled_content(message_id=item["id"], role=item["role"], payload=payload)
            messages.append({"role": "system", "content": content})
        elif kind == "retrieved":
            content = retrieved_content(ref=item["ref"], content=payload)
            messages.append({"role": "system", "content": content})
        elif kind == "message":
            messages.append(_chat_message(item, payload))
        else:
            raise ValueError(f"unknown item kind {kind!r}")
    return messages


def _chat_message(item: Mapping[str, Any], payload: MessagePayload) -> Message:
    """One stored message as Chat Completions input. A plain message renders as exactly
    ``{"role", "content"}``, as every curator version has rendered it."""
    role = item["role"]
    if item.get("uncalled"):
        return {"role": "system", "content": uncalled_tool_content(payload.content)}
    if item.get("elided"):
        content: Any = elided_tool_result(message_id=item["id"], tokens=item["original_tokens"])
    else:
        content = payload.content_parts or payload.content
    message: Message = {"role": role, "content": content}
    if payload.tool_calls:
        message["tool_calls"] = payload.tool_calls
        if not payload.content:
            message["content"] = None
    if role == "tool" and payload.tool_call_id:
        message["tool_call_id"] = payload.tool_call_id
    return message


def canonical_json(messages: Sequence[Message]) -> str:
    """The messages as canonical JSON (sorted keys, no spaces, UTF-8 kept): what is hashed."""
    return json.dumps(list(messages), ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def rendered_hash(messages: Sequence[Message]) -> str:
    """SHA-256 (hex) of ``canonical_json(messages)``: the hash stored on the assembly record."""
    return sha256_hex(canonical_json(messages))
