"""Rendering a curated plan into chat messages, and the hash that identifies a rendered input.

Pure functions (no database): the context service renders with them, and a replay rebuilds a
recorded input from the assembly record's ``items`` plus the texts they name, then compares
``rendered_hash``. The layout of one model input, in order:

1. the system prompt (a ``system`` message), if any;
2. the memo, as a ``system`` message: ``MEMO_HEADER`` naming the covered range, then its text;
3. the anchor (the task statement: the conversation's first user turn), verbatim;
4. each retrieved item, as a ``system`` message ``Retrieved (<ref>):`` + its content;
5. the recent turns verbatim, oldest first; the current turn is the last message.

Record items (``AssemblyRecord.items``), one per message, in that order::

    {"kind": "system", "hash": sha256, "tokens": n}
    {"kind": "summary", "id": "sum_…", "first_id": "msg_…", "last_id": "msg_…", "tokens": n}
    {"kind": "message", "id": "msg_…", "role": "user", "tokens": n, "anchor": true}  # anchor
    {"kind": "retrieved", "ref": "…", "hash": sha256, "tokens": n}
    {"kind": "message", "id": "msg_…", "role": "assistant", "tokens": n}

``tokens`` is the token count of the rendered message's content (headers included, the
per-message overhead not). ``texts`` for ``render`` come from ``item_text_key``: the system
prompt and retrieved contents by hash (``audit.ContentBlob``), a summary's ``text`` and a
message's ``content`` by public id.
"""

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

MEMO_HEADER = "Summary of earlier conversation (messages {first}…{last}):\n"
RETRIEVED_HEADER = "Retrieved ({ref}):\n"

Message = dict[str, str]


class MissingText(KeyError):
    """``render`` was not given the text of one of the items (erased or never stored)."""


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def memo_content(*, first_id: str, last_id: str, text: str) -> str:
    """The memo message's content. The header ends in ``":\\n"`` so, with cl100k-style
    encodings, its tokens never merge with the text's: count(header + text) is what the memo
    writer stores as the summary's ``token_count``."""
    return MEMO_HEADER.format(first=first_id, last=last_id) + text


def retrieved_content(*, ref: str, content: str) -> str:
    return RETRIEVED_HEADER.format(ref=ref) + content


def item_text_key(item: Mapping[str, Any]) -> str:
    """The key under which ``render`` expects an item's text: the content hash for system and
    retrieved items, the public id for summaries and messages."""
    return item["hash"] if item["kind"] in ("system", "retrieved") else item["id"]


def render(items: Sequence[Mapping[str, Any]], texts: Mapping[str, str]) -> list[Message]:
    """The chat messages of a recorded input: one ``{"role", "content"}`` per item, in order.

    ``texts`` maps ``item_text_key(item)`` to the stored text: the system prompt or retrieved
    content (``audit.ContentBlob`` by sha256), the summary's ``text``, the message's
    ``content``. Raises ``MissingText`` naming the first item without one.
    """
    messages: list[Message] = []
    for item in items:
        key = item_text_key(item)
        if key not in texts:
            raise MissingText(f"no text for {item['kind']} {key}")
        text = texts[key]
        kind = item["kind"]
        if kind == "system":
            messages.append({"role": "system", "content": text})
        elif kind == "summary":
            content = memo_content(first_id=item["first_id"], last_id=item["last_id"], text=text)
            messages.append({"role": "system", "content": content})
        elif kind == "retrieved":
            content = retrieved_content(ref=item["ref"], content=text)
            messages.append({"role": "system", "content": content})
        elif kind == "message":
            messages.append({"role": item["role"], "content": text})
        else:
            raise ValueError(f"unknown item kind {kind!r}")
    return messages


def canonical_json(messages: Sequence[Message]) -> str:
    """The messages as canonical JSON (sorted keys, no spaces, UTF-8 kept): what is hashed."""
    return json.dumps(list(messages), ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def rendered_hash(messages: Sequence[Message]) -> str:
    """SHA-256 (hex) of ``canonical_json(messages)``: the hash stored on the assembly record."""
    return sha256_hex(canonical_json(messages))
