"""The export as a page a person can read (GDPR Art. 15): every conversation of the subject in
order, each message numbered, branches marked ("continues from #4", "not on the current
branch"), tool calls in words, images and files named by their reference, memos the service
wrote about the conversation, and the deletion requests about the subject.

It is an encoding of the same export as ``json`` and ``jsonl`` (``audit.exports``): the same
records, the same audit event, streamed the same way. Per thread it holds the message tree's
``pk → parent`` map and each message's number (integers, not content) to mark branches and
name messages by number; content is read a batch at a time.
"""

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.template.loader import get_template
from django.utils import timezone

from compaction.models import Summary
from threads.models import Message, Role, Thread
from threads.selectors import messages_with_refs

if TYPE_CHECKING:
    from audit.exports import Export

Piece = tuple[str | None, str]
ROLE_WORDS = {
    Role.USER: "You",
    Role.ASSISTANT: "Assistant",
    Role.TOOL: "Tool result",
    Role.SYSTEM: "Instructions to the assistant",
}


@dataclass(frozen=True)
class CallWords:
    name: str
    arguments: list[tuple[str, str]]
    raw: str


@dataclass(frozen=True)
class MessageView:
    number: int
    message: Message
    role_words: str
    # A branch: the message does not follow the one before it in the export, but an earlier
    # one (its number), or the very beginning of the conversation (``restarts``).
    continues_from: int | None
    restarts: bool
    edits: int | None
    on_current_branch: bool
    calls: list[CallWords]
    answers: str


def call_words(call: dict[str, Any]) -> CallWords:
    """A tool call as "name" and (argument, value) lines; the raw text when it is not an
    object of arguments (the model's JSON text is kept verbatim)."""
    function = call.get("function") or {}
    raw = function.get("arguments", "")
    try:
        parsed = json.loads(raw) if raw else {}
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        lines = [
            (key, value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))
            for key, value in parsed.items()
        ]
        return CallWords(name=function.get("name", ""), arguments=lines, raw="")
    return CallWords(name=function.get("name", ""), arguments=[], raw=raw)


def _current_branch(parents: dict[int, int | None], leaf_id: int | None) -> set[int]:
    on_branch, node = set(), leaf_id
    while node is not None and node in parents:
        on_branch.add(node)
        node = parents[node]
    return on_branch


class HtmlExport:
    """The pieces of the ``html`` encoding of ``export`` (kind of record, text)."""

    def __init__(self, export: "Export") -> None:
        self.export = export
        self.head = get_template("audit/export/head.html")
        self.thread_start = get_template("audit/export/thread_start.html")
        self.message = get_template("audit/export/message.html")
        self.thread_end = get_template("audit/export/thread_end.html")
        self.tail = get_template("audit/export/tail.html")

    def pieces(self) -> Iterator[Piece]:
        export = self.export
        threads = list(export.threads().order_by("created_at", "pk").values_list("pk", flat=True))
        yield (
            None,
            self.head.render(
                {
                    "subject": export.subject,
                    "generated_at": timezone.now(),
                    "thread_count": len(threads),
                    "for_print": export.fmt == "pdf",
                }
            ),
        )
        for index, pk in enumerate(threads, start=1):
            thread = Thread.objects.select_related("active_leaf").get(pk=pk)
            yield from self._thread(index, thread)
        yield from self._tail()

    def _thread(self, index: int, thread: Thread) -> Iterator[Piece]:
        batch = self.export.batch
        parents: dict[int, int | None] = {}
        root_id = None
        for pk, parent_id, role in (
            Message.objects.filter(thread=thread)
            .order_by("pk")
            .values_list("pk", "parent_id", "role")
            .iterator()
        ):
            parents[pk] = parent_id
            if role == Role.ROOT:
                root_id = pk
        on_branch = _current_branch(parents, thread.active_leaf_id)
        numbers: dict[int, int] = {}
        yield (
            "thread",
            self.thread_start.render(
                {"index": index, "thread": thread, "messages": len(parents) - 1}
            ),
        )
        previous, calls_by_id = root_id, {}
        rows = messages_with_refs().filter(thread=thread).exclude(role=Role.ROOT).order_by("pk")
        for message in _batched(rows, batch):
            numbers[message.pk] = len(numbers) + 1
            view = MessageView(
                number=numbers[message.pk],
                message=message,
                role_words=ROLE_WORDS.get(message.role, message.role),
                continues_from=(
                    numbers.get(message.parent_id) if message.parent_id != previous else None
                ),
                restarts=message.parent_id == root_id and previous != root_id,
                edits=numbers.get(message.edits_id) if message.edits_id else None,
                on_current_branch=message.pk in on_branch,
                calls=[call_words(call) for call in message.tool_calls or []],
                answers=calls_by_id.get(message.tool_call_id, ""),
            )
            for call in message.tool_calls or []:
                calls_by_id[call.get("id", "")] = (call.get("function") or {}).get("name", "")
            previous = message.pk
            yield "message", self.message.render({"m": view})
        memos = Summary.objects.filter(thread=thread).select_related("first", "last").order_by("pk")
        yield (
            None,
            self.thread_end.render(
                {
                    "memos": [
                        (memo, numbers.get(memo.first_id), numbers.get(memo.last_id))
                        for memo in memos
                    ]
                }
            ),
        )

    def _tail(self) -> Iterator[Piece]:
        requests = list(self.export.deletion_requests())
        yield None, self.tail.render({"requests": requests})


def _batched(rows: Any, batch: int) -> Iterator[Message]:
    """Rows in pk order, ``batch`` at a time (one query each)."""
    last = 0
    while True:
        page = list(rows.filter(pk__gt=last)[:batch])
        yield from page
        if len(page) < batch:
            return
        last = page[-1].pk
