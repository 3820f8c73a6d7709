"""Reading conversation exports into threads' terms, with no database: ChatGPT's data export
(``conversations.json``), Claude's (``conversations.json``) and convmem's own
(``convmem.export/2``, ``audit.exports``).

Each reader yields one ``Conversation`` per conversation of the file: the source's id, a title,
and its turns as ``ImportedTurn``s (parents first, the source's node ids as keys) with the
node the source calls current as the leaf. A conversation the reader cannot make sense of is
yielded as a ``Refused`` with the reason, so one odd conversation never stops a whole file.
"""

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from convmem.errors import InvalidRequest
from threads.models import MessageStatus, Role
from threads.services import ImportedTurn

CHATGPT, CLAUDE, CONVMEM = "chatgpt", "claude", "convmem"
FORMATS = (CHATGPT, CLAUDE, CONVMEM)
CONVMEM_SCHEMAS = ("convmem.export/1", "convmem.export/2")
# Claude's web API names this as the parent of a conversation's first message.
CLAUDE_ROOT_PARENT = "00000000-0000-4000-8000-000000000000"


@dataclass(frozen=True)
class Conversation:
    source: str
    source_id: str
    turns: list[ImportedTurn]
    leaf_key: str | None
    title: str = ""
    user_ref: str | None = None  # convmem exports name the end user; the others do not
    metadata: dict[str, Any] = field(default_factory=dict)
    profile: str | None = None
    system_prompts: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Refused:
    source: str
    source_id: str
    reason: str


def detect(data: Any) -> str:
    """The format of a parsed export file (``InvalidRequest`` if it is none we read)."""
    for fmt in FORMATS:
        if _is(data, fmt):
            return fmt
    raise InvalidRequest(
        "The file is not a ChatGPT or Claude conversations.json, nor a convmem JSON export.",
        code="unknown_import_format",
    )


def _is(data: Any, fmt: str) -> bool:
    """Whether ``data`` has the outer shape of a ``fmt`` export (each conversation's own shape
    is checked as it is read)."""
    if fmt == CONVMEM:
        return (
            isinstance(data, dict)
            and data.get("schema") in CONVMEM_SCHEMAS
            and isinstance(data.get("threads"), list)
        )
    marker = {CHATGPT: "mapping", CLAUDE: "chat_messages"}[fmt]
    return (
        isinstance(data, list)
        and bool(data)
        and all(isinstance(c, dict) and marker in c for c in data)
    )


def conversations(data: Any, fmt: str) -> Iterator[Conversation | Refused]:
    """Each conversation of ``data``, read as ``fmt`` (``InvalidRequest`` if ``data`` is not
    that kind of export at all)."""
    if not _is(data, fmt):
        raise InvalidRequest(f"The file is not a {fmt} export.", code="unknown_import_format")
    readers = {CHATGPT: _chatgpt, CLAUDE: _claude, CONVMEM: _convmem}
    items = data["threads"] if fmt == CONVMEM else data
    for index, item in enumerate(items):
        source_id = _source_id(item, fmt, index)
        try:
            yield readers[fmt](item, source_id)
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            yield Refused(fmt, source_id, f"not a {fmt} conversation ({error!r})")


def conversation_count(data: Any, fmt: str) -> int:
    if not _is(data, fmt):
        return 0
    return len(data["threads"] if fmt == CONVMEM else data)


def _source_id(item: Any, fmt: str, index: int) -> str:
    key = {CHATGPT: "id", CLAUDE: "uuid", CONVMEM: "id"}[fmt]
    value = item.get(key) or item.get("conversation_id") if isinstance(item, dict) else None
    return str(value)[:255] if value else f"#{index}"


# --- ChatGPT ------------------------------------------------------------------------------------
# ``mapping`` is a tree of nodes {id, message, parent, children}; ``current_node`` is the leaf
# the user last saw. A message has ``author.role`` (system, user, assistant, tool),
# ``content.content_type`` and ``recipient`` ("all", or the tool an assistant message calls).
# Nodes without a message (the root), hidden system messages, custom instructions and
# reasoning are not turns: their children hang on the nearest kept ancestor.

_CHATGPT_HIDDEN_TYPES = {
    "user_editable_context",
    "model_editable_context",
    "thoughts",
    "reasoning_recap",
}


def _chatgpt(item: dict[str, Any], source_id: str) -> Conversation:
    mapping: dict[str, dict[str, Any]] = item["mapping"]
    roots = [key for key, node in mapping.items() if node.get("parent") not in mapping]
    kept: dict[str, str | None] = {}  # node id -> the kept node its turn hangs on
    calls: set[str] = set()  # assistant nodes kept as tool calls
    turns: list[ImportedTurn] = []
    stack = [(root, None) for root in reversed(roots)]
    while stack:
        key, parent = stack.pop()
        node = mapping[key]
        turn = _chatgpt_turn(key, node, parent, mapping, calls)
        if turn is not None:
            turns.append(turn)
            parent = key
        kept[key] = parent
        stack.extend((child, parent) for child in reversed(node.get("children") or []))
    current = item.get("current_node")
    return Conversation(
        source=CHATGPT,
        source_id=source_id,
        title=str(item.get("title") or "")[:255],
        turns=turns,
        leaf_key=kept.get(current) if current in kept else None,
        metadata={"imported_from": CHATGPT, "source_id": source_id},
    )


def _chatgpt_turn(
    key: str,
    node: dict[str, Any],
    parent: str | None,
    mapping: dict[str, dict[str, Any]],
    calls: set[str],
) -> ImportedTurn | None:
    message = node.get("message")
    if not message:
        return None
    role = message["author"]["role"]
    content = message.get("content") or {}
    meta = message.get("metadata") or {}
    if content.get("content_type") in _CHATGPT_HIDDEN_TYPES or meta.get(
        "is_visually_hidden_from_conversation"
    ):
        return None
    text, attachments = _chatgpt_text(content)
    metadata: dict[str, Any] = {"source_id": key}
    if message.get("create_time"):
        metadata["created_at"] = message["create_time"]
    if attachments:
        metadata["attachments"] = attachments
    if role == Role.ASSISTANT and _chatgpt_is_call(node, mapping):
        calls.add(key)
        call = {
            "id": _call_id(key),
            "type": "function",
            "function": {"name": _tool_name(message.get("recipient")), "arguments": text},
        }
        metadata["recipient"] = message.get("recipient")
        return ImportedTurn(
            key=key,
            parent_key=parent,
            role=Role.ASSISTANT,
            content=None,
            tool_calls=[call],
            metadata=metadata,
            model=_model(meta),
        )
    if role == "tool":
        if parent not in calls:
            return None  # a tool output with no call to answer is not a turn of the path
        metadata["tool"] = message["author"].get("name") or ""
        return ImportedTurn(
            key=key,
            parent_key=parent,
            role=Role.TOOL,
            content=text or "(no output)",
            tool_call_id=_call_id(parent),
            metadata=metadata,
        )
    if role not in (Role.USER, Role.ASSISTANT, Role.SYSTEM) or not text.strip():
        return None
    return ImportedTurn(
        key=key,
        parent_key=parent,
        role=role,
        content=text,
        metadata=metadata,
        model=_model(meta) if role == Role.ASSISTANT else "",
    )


def _model(meta: dict[str, Any]) -> str:
    return str(meta.get("model_slug") or "")[:128]


def _chatgpt_is_call(node: dict[str, Any], mapping: dict[str, dict[str, Any]]) -> bool:
    """An assistant message addressed to a tool whose children are all that tool's output:
    a tool call and its results, as Chat Completions has them."""
    message = node["message"]
    children = [mapping[c] for c in node.get("children") or [] if c in mapping]
    return (
        message.get("recipient") not in (None, "all")
        and bool(children)
        and all(_chatgpt_role(child) == "tool" for child in children)
    )


def _chatgpt_role(node: dict[str, Any]) -> str | None:
    return ((node.get("message") or {}).get("author") or {}).get("role")


def _tool_name(recipient: Any) -> str:
    """A Chat Completions function name for a ChatGPT recipient (``dalle.text2im``:
    ``dalle_text2im``; the recipient itself is kept in the turn's metadata)."""
    name = re.sub(r"[^A-Za-z0-9_-]", "_", str(recipient or "tool"))
    return name[:64]


def _call_id(key: str) -> str:
    return f"call_{key}"[:64]


def _chatgpt_text(content: dict[str, Any]) -> tuple[str, list[Any]]:
    """The text of a message, and what it points at (images, files) that is not text."""
    parts = content.get("parts")
    if isinstance(parts, list):
        texts = [p for p in parts if isinstance(p, str)]
        others = [p for p in parts if not isinstance(p, str)]
        texts += [p["text"] for p in others if isinstance(p.get("text"), str)]
        return "\n".join(t for t in texts if t), [p for p in others if "text" not in p]
    for name in ("text", "result"):
        if isinstance(content.get(name), str):
            return content[name], []
    return "", []


# --- Claude -------------------------------------------------------------------------------------
# A conversation {uuid, name, chat_messages: [{uuid, sender: human|assistant, text, content:
# [{type: text|tool_use|tool_result, …}], attachments: [{file_name, extracted_content}], files,
# created_at}]}. The data export lists one path; messages that name a ``parent_message_uuid``
# (as Claude's web API gives them) are placed on their branches, the leaf being
# ``current_leaf_message_uuid`` or the last message listed.

_CLAUDE_ROLES = {"human": Role.USER, "user": Role.USER, "assistant": Role.ASSISTANT}


def _claude(item: dict[str, Any], source_id: str) -> Conversation:
    messages = item["chat_messages"]
    keys = {m["uuid"] for m in messages}
    turns: list[ImportedTurn] = []
    previous: str | None = None
    for message in messages:
        key = message["uuid"]
        if "parent_message_uuid" in message:
            parent = message["parent_message_uuid"]
            parent = parent if parent in keys else None
        else:
            parent = previous
        turns.append(_claude_turn(message, key, parent))
        previous = key
    leaf = item.get("current_leaf_message_uuid")
    return Conversation(
        source=CLAUDE,
        source_id=source_id,
        title=str(item.get("name") or "")[:255],
        turns=_parents_first(turns),
        leaf_key=leaf if leaf in keys else previous,
        metadata={"imported_from": CLAUDE, "source_id": source_id},
    )


def _claude_turn(message: dict[str, Any], key: str, parent: str | None) -> ImportedTurn:
    blocks = [b for b in message.get("content") or [] if isinstance(b, dict)]
    texts = [b["text"] for b in blocks if b.get("type") == "text" and b.get("text")]
    text = "\n\n".join(texts) if texts else message.get("text") or ""
    attachments = message.get("attachments") or []
    for attachment in attachments:
        if attachment.get("extracted_content"):
            text += f"\n\n[{attachment.get('file_name', 'attachment')}]\n"
            text += attachment["extracted_content"]
    metadata: dict[str, Any] = {"source_id": key}
    if message.get("created_at"):
        metadata["created_at"] = message["created_at"]
    tools = [b for b in blocks if b.get("type") in ("tool_use", "tool_result")]
    if tools:
        metadata["tool_blocks"] = tools
    files = [a.get("file_name") for a in attachments] + [
        f.get("file_name") for f in message.get("files") or [] if isinstance(f, dict)
    ]
    if any(files):
        metadata["files"] = [f for f in files if f]
    return ImportedTurn(
        key=key,
        parent_key=parent,
        role=_CLAUDE_ROLES[message["sender"]],
        content=text if text.strip() else "(empty)",
        metadata=metadata,
    )


def _parents_first(turns: list[ImportedTurn]) -> list[ImportedTurn]:
    """``turns`` reordered so every parent comes before its children (the export lists them by
    time, which a branch made later under an old message keeps anyway; this makes it sure)."""
    children: dict[str | None, list[ImportedTurn]] = {}
    for turn in turns:
        children.setdefault(turn.parent_key, []).append(turn)
    ordered: list[ImportedTurn] = []
    stack = list(reversed(children.get(None, [])))
    while stack:
        turn = stack.pop()
        ordered.append(turn)
        stack.extend(reversed(children.get(turn.key, [])))
    return ordered


# --- convmem ------------------------------------------------------------------------------------
# A ``convmem.export/2`` JSON export (docs/export-schema.md): threads with every node of every
# branch. What is brought back is the conversation — the tree, edits, the active leaf, the
# thread's fields and system prompt versions; memos and model inputs are derived records the
# new thread makes again, and audit events stay with the thread they describe.


def _convmem(item: dict[str, Any], source_id: str) -> Conversation:
    # In the export's order, which is the order they were written: parents first.
    turns = [
        ImportedTurn(
            key=_text(m["id"]),
            parent_key=_text_or_none(m["parent_id"]),
            role=_text(m["role"]),
            content=m["content_parts"] if m["content_parts"] else m["content"],
            tool_calls=m["tool_calls"],
            tool_call_id=m["tool_call_id"],
            metadata=_object(m["metadata"]),
            model=_text(m["model"] or "", limit=128),
            usage=m["usage"],
            edits_key=_text_or_none(m["edits_id"]),
            status=MessageStatus(m.get("status") or MessageStatus.COMPLETE),
        )
        for m in item["messages"]
    ]
    return Conversation(
        source=CONVMEM,
        source_id=source_id,
        title=_text(item["title"], limit=255),
        user_ref=_text(item["user_ref"], limit=255),
        metadata=_object(item["metadata"]),
        profile=_text_or_none(item.get("profile")),
        system_prompts=[_text(p["text"]) for p in item.get("system_prompts") or []],
        turns=turns,
        leaf_key=_text_or_none(item["active_leaf_id"]),
    )


def _text(value: Any, *, limit: int | None = None) -> str:
    if not isinstance(value, str) or (limit is not None and len(value) > limit):
        raise ValueError(f"expected a string{f' of at most {limit} characters' if limit else ''}")
    return value


def _text_or_none(value: Any) -> str | None:
    return None if value is None else _text(value)


def _object(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError("expected an object")
    return value


def loads(raw: bytes | str) -> Any:
    try:
        return json.loads(raw)
    except ValueError as error:
        raise InvalidRequest(f"The file is not JSON: {error}.", code="parse_error") from None
