"""How agent turns read on the staff pages: a tool call as a named call with its arguments
pretty-printed, each tool result under the call it answers, content parts as text, image links
and file references. Pure functions of stored messages; the views pass their results to the
templates (``admin/threads/message/body.html`` draws one message).
"""

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from threads.content import FILE, IMAGE_URL, TEXT
from threads.models import Message, Role

# A tool result (or a call's arguments) longer than this is shown collapsed, its first line
# as the summary: one bulky JSON answer would otherwise push the conversation off the screen.
LONG_CHARS = 600
LONG_LINES = 12
SUMMARY_CHARS = 120
ROLE_TITLES = {
    Role.USER: "A user message",
    Role.ASSISTANT: "An assistant message",
    Role.TOOL: "A tool result",
    Role.SYSTEM: "A system message",
}


@dataclass(frozen=True)
class Part:
    """One content part, for people: ``kind`` is "text", "image" or "file"."""

    kind: str
    text: str = ""
    url: str = ""
    host: str = ""
    detail: str = ""
    file_id: str = ""


@dataclass(frozen=True)
class Block:
    """A piece of text to show, pretty-printed when it is JSON, collapsed when long."""

    text: str
    is_json: bool
    long: bool
    first_line: str


@dataclass
class ToolCall:
    """One call of an assistant turn, and the tool message answering it when on the page."""

    id: str
    name: str
    arguments: Block
    result: Message | None = None
    result_block: Block | None = None


@dataclass
class Turn:
    """What the body template needs for one message besides the message itself."""

    parts: list[Part] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    result: Block | None = None
    # A tool result drawn under its call (so not again on its own).
    under_call: bool = False
    # The call it answers (for a tool result shown on its own: "answers get_order").
    answers: str = ""


def block(text: str) -> Block:
    """``text`` as shown: JSON pretty-printed (keys in their order), anything else as is."""
    shown, is_json = text, False
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        try:
            shown = json.dumps(json.loads(stripped), indent=2, ensure_ascii=False)
            is_json = True
        except ValueError:
            pass
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    if len(first) > SUMMARY_CHARS:
        first = first[: SUMMARY_CHARS - 1] + "…"
    long = len(shown) > LONG_CHARS or shown.count("\n") >= LONG_LINES
    return Block(text=shown, is_json=is_json, long=long, first_line=first)


def parts(message: Message) -> list[Part]:
    """The message's content parts in order; empty when it has plain text only."""
    found = []
    for part in message.content_parts or []:
        kind = part.get("type")
        if kind == TEXT:
            found.append(Part(kind="text", text=part.get("text", "")))
        elif kind == IMAGE_URL:
            image = part.get(IMAGE_URL) or {}
            url = image.get("url", "")
            found.append(
                Part(
                    kind="image",
                    url=url,
                    host=urlsplit(url).hostname or "",
                    detail=image.get("detail", ""),
                )
            )
        elif kind == FILE:
            found.append(Part(kind="file", file_id=(part.get(FILE) or {}).get("file_id", "")))
    return found


def tool_calls(message: Message) -> list[ToolCall]:
    return [
        ToolCall(
            id=call.get("id", ""),
            name=(call.get("function") or {}).get("name", ""),
            arguments=block((call.get("function") or {}).get("arguments", "")),
        )
        for call in message.tool_calls or []
    ]


def turns(messages: Sequence[Message], *, nest: Iterable[int] = ()) -> dict[int, Turn]:
    """A :class:`Turn` per message pk. A tool message answering a call of a turn on the same
    page is attached to that call; it is drawn under it when its pk is in ``nest`` (callers
    leave out results that sit at a fork, which keep their own place and switcher)."""
    nestable = set(nest)
    by_pk = {m.pk: Turn(parts=parts(m), calls=tool_calls(m)) for m in messages}
    open_calls: dict[str, ToolCall] = {}
    for message in messages:
        turn = by_pk[message.pk]
        for call in turn.calls:
            open_calls[call.id] = call
        if message.role != Role.TOOL:
            continue
        if not message.erased_at:
            turn.result = block(message.content)
        call = open_calls.get(message.tool_call_id)
        if call is None:
            continue
        turn.answers = call.name
        if message.pk in nestable and call.result is None:
            call.result, call.result_block = message, turn.result
            turn.under_call = True
    return by_pk
