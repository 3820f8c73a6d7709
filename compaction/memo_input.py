"""What a memo writer reads: one segment of the original messages, as plain text, within the
summarizer's context limit.

Summarizer backends take ``MemoSource(id, role, content)`` with plain text, so agent turns are
spelled out here: a tool call as ``[called name with {arguments}]``, a tool result as
``[result of name] …``, images and files by reference as ``[image URL]`` / ``[file ID]``.
Bulky tool results are cut to ``elide_over`` tokens before summarising, half from their start
and half from their end, where logs and reports put their outcome (the curator pulls the same
lever for the model input); a text of lines is cut between lines, so no line is read in pieces.

The writer's input is bounded by construction: ``input_budget`` is what the summarizer's
context holds after its output, the previous memo and the prompt's fixed text, and
``fit_sources`` halves the longest messages (keeping their start and end) until the segment
fits it. The curator already sizes segments to fit (``compaction.profiles``), so cutting is
the exception: a single huge message, or a tokenizer that counts differently.
"""

from collections.abc import Sequence
from dataclasses import replace

from compaction.backends import MemoSource
from compaction.backends.base import MAX_FRAMING_TOKENS as FRAMING_TOKENS
from compaction.backends.base import MAX_INSTRUCTION_TOKENS as PROMPT_TOKENS
from compaction.selectors import RangeRow
from convmem.tokens import count_tokens, get_encoding

MAX_ARGUMENT_CHARS = 500
CUT_MARKER = " … [{count} tokens cut] … "
MIN_CUT_TOKENS = 64


def input_budget(*, context_tokens: int, max_tokens: int, previous_memo_tokens: int) -> int:
    """Tokens left for the segment's messages in one summarizer call."""
    return context_tokens - max_tokens - previous_memo_tokens - PROMPT_TOKENS


def memo_sources(rows: Sequence[RangeRow], *, elide_over: int, encoding: str) -> list[MemoSource]:
    """The segment's messages as plain text, erased ones left out."""
    names = {call["id"]: call["function"]["name"] for row in rows for call in row.tool_calls or ()}
    return [
        MemoSource(id=row.public_id, role=row.role, content=_text(row, names, elide_over, encoding))
        for row in rows
        if row.erased_at is None
    ]


def _text(row: RangeRow, names: dict[str, str], elide_over: int, encoding: str) -> str:
    parts = [row.content] if row.content else []
    for part in row.content_parts or ():
        if part["type"] == "image_url":
            parts.append(f"[image {part['image_url']['url']}]")
        elif part["type"] == "file":
            parts.append(f"[file {part['file']['file_id']}]")
    for call in row.tool_calls or ():
        arguments = call["function"]["arguments"]
        if len(arguments) > MAX_ARGUMENT_CHARS:
            arguments = arguments[:MAX_ARGUMENT_CHARS] + "…"
        parts.append(f"[called {call['function']['name']} with {arguments}]")
    text = "\n".join(parts)
    if row.role != "tool":
        return text
    if elide_over and row.token_count > elide_over:
        # Its start and its end: logs and reports put their outcome, errors and totals last.
        head, tail = _whole_lines(*_ends(text, elide_over, encoding))
        cut = row.token_count - elide_over
        text = f"{head}\n… [{cut} tokens of tool output not summarised] …\n{tail}"
    label = names.get(row.tool_call_id, row.tool_call_id) if row.tool_call_id else "a tool"
    return f"[result of {label}] {text}"


def _ends(text: str, tokens: int, encoding: str) -> tuple[str, str]:
    """The first and the last ``tokens // 2`` tokens of ``text``."""
    codec = get_encoding(encoding)
    encoded = codec.encode(text, disallowed_special=())
    half = tokens // 2
    return codec.decode(encoded[:half]), codec.decode(encoded[len(encoded) - (tokens - half) :])


def _whole_lines(head: str, tail: str) -> tuple[str, str]:
    """``head`` and ``tail`` without the pieces of lines the cut split: a log line or table row
    cut in two would otherwise read, joined to another's piece, as one line that no template
    has (and a value cut in half as a whole one). A side without a line break is kept whole."""
    if not head.endswith("\n") and "\n" in head.strip("\n"):
        head = head[: head.rfind("\n") + 1]
    if not tail.startswith("\n") and "\n" in tail.strip("\n"):
        tail = tail[tail.find("\n") :]
    return head.rstrip("\n"), tail.lstrip("\n")


def fit_sources(sources: Sequence[MemoSource], *, budget: int, encoding: str) -> list[MemoSource]:
    """``sources`` within ``budget`` tokens (content plus framing per message): the longest
    message is cut in half, keeping its start and end, until they fit; if the framing of
    very many tiny messages alone is over budget, the oldest messages are left out."""
    budget = max(budget, 0)
    fitted = list(sources)
    counts = [count_tokens(source.content, encoding) for source in fitted]
    while fitted and sum(counts) + FRAMING_TOKENS * len(fitted) > budget:
        longest = max(range(len(fitted)), key=counts.__getitem__)
        if counts[longest] <= MIN_CUT_TOKENS:
            break
        content = _halved(fitted[longest].content, counts[longest], encoding)
        fitted[longest] = replace(fitted[longest], content=content)
        counts[longest] = count_tokens(content, encoding)
    while fitted and sum(counts) + FRAMING_TOKENS * len(fitted) > budget:
        fitted.pop(0)
        counts.pop(0)
    return fitted


def _halved(text: str, count: int, encoding: str) -> str:
    """About half of ``text``: its first and last quarters around a marker saying how much
    was cut (the marker itself is a few tokens, so only texts over MIN_CUT_TOKENS are cut)."""
    codec = get_encoding(encoding)
    tokens = codec.encode(text, disallowed_special=())
    keep = count // 4
    marker = CUT_MARKER.format(count=len(tokens) - 2 * keep)
    head, tail = codec.decode(tokens[:keep]), codec.decode(tokens[-keep:])
    if "\n" in head.strip("\n") or "\n" in tail.strip("\n"):
        # Lines (a log, a listing): whole lines each side of the marker, on a line of its own.
        head, tail = _whole_lines(head, tail)
        return f"{head}\n{marker.strip()}\n{tail}"
    return head + marker + tail
