"""The embedded summarizer: an extractive memo of the statements later turns depend on.

Deterministic, with no network and no model, and with no vocabulary of any domain. The memo is
a list of statements taken from the conversation, verbatim or trimmed around their values, one
a line and oldest first::

    Earlier in the conversation (oldest first; the user's words unless marked):
    - My booking code is qxhzpm and I land at 07:40 on 03/12/2026.
    - assistant: Ticket 5f0c…e1 is open for the router at Calle Mayor 5.

A statement is kept when it carries *anchors* (specific words, told by their shape:
``compaction.backends.salience``) or, from the user, a preference or decision. Each memo is the
previous memo's lines plus the next segment's statements, folded in order:

- a statement that only restates an earlier line (its values all there, hardly a new word)
  refreshes that line (it moves to the end) instead of being added again; an earlier line that
  the new statement restates in full is replaced by it;
- of a tool's output, when the user or assistant names the label of some of its lines later
  in the segment (a key written joined or apart: "retry_limit", "the retry limit"), those
  lines and any failure line are kept and the rest let go; an output no one names keeps its
  one most telling line; lines of one log or listing template are let go by their *form*
  (``compaction.backends.salience.form``), whatever words and random ids fill them;
- a correction (an "actually", "instead", "new", "changed"… statement) replaces the newest
  earlier line on the same matter — sharing a content word and holding a value of the same shape
  as the new value — or, when that line carries other values too, cuts the stale value out; a
  correction worded wholly apart replaces the only line holding a value of its telling shape;
  a correction of the user's that names the slot a line gives its value under (its key, written
  joined or apart: "ignore what we had as the function at fault" for "function_at_fault: X";
  or the words after the value: "X is the manager") replaces that line's value, whatever its
  notation, unless several lines of that slot hold other values (which one is meant is not
  told); the matter it is about ("… for the router return") names no slot;
- a closing statement ("resolved", "cancelled", "no longer needed"…) that brings no new value
  lets go of the lines holding its identifiers, unless those identifiers run through much of
  the memo (a customer number, a project path);
- the memo is then brought within ``max_tokens`` by letting go of the least needed lines: old
  before new, assistant and tool lines before the user's, lines with few values before lines
  with many, and lines none of whose values is their own (each held by a newer line too)
  before lines with a value of their own.

When the memo is written, the messages of the active path after its range may be handed to
``drop_superseded`` (``compaction.backends.base.ReadsAhead``): what they correct is let go by the
same rules, and nothing of theirs is added. The memo that later folds those messages in is told
which they are (``read_ahead``) and adds their statements without applying their corrections
again: the line a correction took is gone, and a second pass would take another.

A previous memo in another form (a remote model's prose) is read like message text, so its facts
are not lost. What each memo kept and let go is measured by the stored scores
(``compaction.evals``) and shown on the memo page.

Settings: ``CONVMEM_EMBEDDED_CONTEXT_TOKENS`` (default 16384), the input plus output size the
writer may hand this backend in one call.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from django.conf import settings

from compaction.backends.base import MemoDraft, MemoSource
from compaction.backends.salience import (
    EDGE_PUNCTUATION,
    MEDIUM,
    PREFERENCE,
    STRONG,
    WEAK,
    Statement,
    anchors,
    form,
    says,
    shape,
    skeleton,
    statements,
    strength,
    topic_words,
)
from compaction.backends.text_caches import text_cache
from convmem.tokens import count_tokens

PROMPT_VERSION = "extractive-memo/5"
MODEL = "extractive-memo"
DEFAULT_CONTEXT_TOKENS = 16384
HEADER = "Earlier in the conversation (oldest first; the user's words unless marked):"
# Where a statement divides into clauses: a comma, semicolon or colon and a blank, or a dash
# between blanks (a value such as "1 234,50" or "12:30" has no blank after its mark).
_CLAUSE = re.compile(r"([,;:] | [-–—] )")  # noqa: RUF001
# What the memo writer's input adds to a cut tool output: not the conversation's words.
_MARKER = re.compile(
    r"… \[\d+ (?:more )?tokens (?:of tool output not summarised|cut)\] …|^\[result of [^\]]*\] "
)
_LINE = re.compile(r"^- (?:(assistant|tool|system|memo): )?(.+)$")
# Statements taken from one message at most (a long tool output or a pasted log would otherwise
# fill the memo alone), and the words a kept statement is trimmed to around its values.
MAX_PER_MESSAGE = {"user": 6, "assistant": 4, "tool": 1}
# ... but of a tool's output the lines the conversation names (``_turned_to``), up to this many.
MAX_NAMED_PER_OUTPUT = 3
MAX_WORDS = 40
# (A full memo cuts its lines to ``TIGHT_BEFORE`` words before each value before it lets any go:
# the label words that tell two slots of one matter apart are worth room only while there is
# room.)
WINDOW_BEFORE, WINDOW_AFTER = 10, 3
TIGHT_BEFORE = 5
# An identifier held by more than this share of the memo's lines is the conversation's own (a
# customer number, a repository): closing one matter never lets go of it.
SHARED_ANCHOR_SHARE = 0.25
# Content words a closing statement without values must share with a line to close it, and a
# correction's announcement with the line it corrects.
CLOSING_WORDS = NAMED_WORDS = 2
# A statement holding only values a line already holds, and fewer new words than this, restates
# that line (it refreshes it instead of being kept twice).
RESTATEMENT_WORDS = 3
# A skeleton seen this often in the memo and the segment is a template or small talk.
REPEATS = 2
GRAM = 4
# Words before a value that, ending two statements alike, make them statements of one thing.
SAME_LABEL_WORDS = 7
# English verbs and connectives that join a label to its value; dropped from the end of a label
# (``_label_before``), so the frame "<label> is <value>" and "<label> has changed to <value>"
# compare alike. Grammar words, not a domain's.
_LINKING_WORDS = frozenset(
    [
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "am",
        "now",
        "actually",
        "really",
        "still",
        "instead",
        "rather",
        "then",
        "has",
        "have",
        "had",
        "changed",
        "change",
        "changes",
        "updated",
        "update",
        "moved",
        "become",
        "becomes",
        "became",
        "will",
        "would",
        "should",
        "to",
        "=",
        "-",
        ":",
        "it's",
        "it",
        "that",
        "which",
    ]
)
_ROLE_WEIGHT = {"user": 0.3, "memo": 0.25, "assistant": 0.2}


@dataclass(frozen=True)
class Line:
    """One kept statement: who said it, its (trimmed) text, and its anchors. Frozen, so that
    its keys, asked of every line at each fold, are worked out once."""

    role: str
    text: str
    anchors: tuple[str, ...]

    @functools.cached_property
    def keys(self) -> frozenset[str]:
        return frozenset(anchor.casefold() for anchor in self.anchors)

    @property
    def weight(self) -> int:
        return min(8, sum(strength(anchor) for anchor in self.anchors))

    @functools.cached_property
    def labels(self) -> dict[str, tuple[str, ...]]:
        """Each anchor's label in the line (``_label_of``)."""
        return {anchor: _label_of(self.text, self.anchors, anchor) for anchor in self.anchors}

    def render(self) -> str:
        return f"- {self.text}" if self.role == "user" else f"- {self.role}: {self.text}"


class EmbeddedBackend:
    """Extractive memos within ``max_tokens`` (counted with the default encoding).

    Same input, same memo. The memo is empty when nothing in the range carries a value, a
    preference or a decision, or when ``max_tokens`` is too small for one line.
    """

    name = "embedded"

    def __init__(self) -> None:
        self.context_tokens = int(
            getattr(settings, "CONVMEM_EMBEDDED_CONTEXT_TOKENS", DEFAULT_CONTEXT_TOKENS)
        )

    def summarize(
        self,
        *,
        previous_memo: str | None,
        messages: Sequence[MemoSource],
        max_tokens: int,
        read_ahead: frozenset[str] = frozenset(),
    ) -> MemoDraft:
        """Fold ``messages`` into the lines of ``previous_memo`` and write them; see the module
        docstring. ``read_ahead``: the ids of those messages whose corrections the previous
        memo already holds. ``prompt_tokens`` counts what was read, ``completion_tokens`` what
        was written."""
        memo = Memo(parse_memo(previous_memo or ""))
        by_message = [_statements_of(message) for message in messages]
        counts = _repeat_counts(memo.lines, by_message)
        repeated = {key for key, count in counts.items() if count >= REPEATS}
        often = {key for key, count in counts.items() if count > REPEATS}
        memo.forget(repeated, often)
        later = _later_words(messages)
        replies = _reply_words(messages)
        for message, found, after, reply in zip(messages, by_message, later, replies, strict=True):
            named: list[Statement] = []
            if after is not None:
                found, named = _turned_to(found, after, reply, repeated)
            for statement in worth_keeping(found, repeated, often, named=named):
                memo.fold(statement, read_ahead=message.id in read_ahead)
        text = fit_memo(memo.lines, max(max_tokens, 0))
        read = count_tokens(previous_memo or "") + sum(
            count_tokens(message.content) for message in messages
        )
        return MemoDraft(
            text=text,
            backend=self.name,
            model=MODEL,
            prompt_version=PROMPT_VERSION,
            prompt_tokens=read,
            completion_tokens=count_tokens(text),
        )

    def drop_superseded(self, *, memo: str, later: Sequence[MemoSource]) -> str:
        """``memo`` without the lines that ``later`` messages (after its range) correct: each
        statement of theirs that would replace or cut a line when folded does so here, but is
        not added (see ``compaction.backends.base.ReadsAhead``). The memo unchanged when none
        does."""
        folded = Memo(parse_memo(memo))
        before = [line.render() for line in folded.lines]
        for message in later:
            for statement in _statements_of(message):
                folded.supersede(statement)
        if [line.render() for line in folded.lines] == before:
            return memo
        return fit_memo(folded.lines, count_tokens(memo) + len(folded.lines) + 1)


def lines_superseded(*, memo: str, later: Sequence[MemoSource]) -> tuple[int, ...]:
    """The indices (in ``memo.split("\\n")``) of the memo's lines that ``later`` messages
    correct, by the rules ``drop_superseded`` applies: the lines it would let go or cut. The
    context uses it for a memo shown beside newer turns (``compaction.context``): a line is
    left out whole, so the record can name it by its index and a replay leaves out the same
    line whatever rules a later writer has. Text that is not a line of this writer's is never
    named. Only statements that say they correct (or follow a sentence announcing it) are read:
    unlike a memo write, which folds every statement in, a line is taken out of an input already
    sent, and a statement that only restates a label is weaker evidence. Each message is read
    against the whole memo (not against what the messages before it left), so a message is read
    once per memo however many turns show it."""
    named: set[int] = set()
    for message in later:
        named.update(_superseded_by(memo, message))
    return tuple(sorted(named))


# Asked at every turn for each correcting turn shown after the memo (the same memo and
# message, turn after turn, in each web process): remembered, as are the memo's lines.
@text_cache(4096)
def _superseded_by(memo: str, message: MemoSource) -> tuple[int, ...]:
    parsed = _memo_lines(memo)
    folded = Memo([line for _, line in parsed])
    for statement in _statements_of(message):
        if statement.corrects:  # it says so (or follows a sentence that announces it)
            folded.supersede(statement)
    # A line let go or cut is gone or another object. Lines of the same text are one
    # (remembered) object, of which a rule may let one go: then all of them are named.
    given = Counter(id(line) for _, line in parsed)
    standing = Counter(id(line) for line in folded.lines)
    return tuple(index for index, line in parsed if standing[id(line)] < given[id(line)])


def _statements_of(message: MemoSource) -> list[Statement]:
    """The statements of a message of the range, without the marks of a cut tool output."""
    return cued_statements(message.role, _MARKER.sub(" ", message.content))


def _memo_lines(memo: str) -> tuple[tuple[int, Line], ...]:
    """The memo's lines of this writer's form, with their indices in ``memo.split("\\n")``."""
    lines = ((index, _memo_line(raw.strip())) for index, raw in enumerate(memo.split("\n")))
    return tuple((index, line) for index, line in lines if line is not None)


# A memo rolls onto the next with most of its lines unchanged: each line is read once, and the
# labels its ``Line`` works out (at each correction read against it) are kept with it.
@text_cache(8192)
def _memo_line(raw: str) -> Line | None:
    match = _LINE.match(raw)
    if match is None:
        return None
    return Line(match.group(1) or "user", match.group(2), tuple(_anchors_of(match.group(2))))


# A line of a tool's output that reports a failure: kept whether or not the conversation
# names it (what failed, and how, is what the next turns work on).
FAILURE = re.compile(r"\w(?:Error|Exception)\b|\b(?:FAILED|FAIL|ERROR|FATAL|Traceback|panic)\b")
# Words a label of a tool's output is read from (its last ones, before the value).
LABEL_WORDS = 4


def _spelled(text: str) -> str:
    """``text`` in lower case with joined words written apart ("code_freeze_date",
    "codeFreezeDate", "code-freeze date" all read "code freeze date"), one blank between words."""
    text = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", text)
    text = re.sub(r"(?<=[^\W\d_])[_\-.](?=[^\W\d_])", " ", text)
    return " " + " ".join(re.sub(r"[^\w\s]", " ", text.casefold()).split()) + " "


def _later_words(messages: Sequence[MemoSource]) -> list[str | None]:
    """For each message, what the conversation says after it in this segment (its user's and
    assistant's words, spelled out by ``_spelled``); None when nothing follows (whether the
    conversation turns to a tool's output is then not known yet)."""
    out: list[str | None] = [None] * len(messages)
    said = ""
    for index in range(len(messages) - 1, -1, -1):
        out[index] = said or None
        message = messages[index]
        if message.role in ("user", "assistant"):
            said = _spelled(_CALL.sub(" ", message.content)) + said
    return out


def _reply_words(messages: Sequence[MemoSource]) -> list[str]:
    """For each message, the words of the first user's or assistant's message after it in this
    segment (spelled out by ``_spelled``; "" when none follows)."""
    out = [""] * len(messages)
    reply = ""
    for index in range(len(messages) - 1, -1, -1):
        out[index] = reply
        message = messages[index]
        if message.role in ("user", "assistant"):
            reply = _spelled(_CALL.sub(" ", message.content))
    return out


_CALL = re.compile(r"\[called [^\]]*\]")


def _turned_to(
    found: list[Statement], later: str, reply: str, repeated: set[str]
) -> tuple[list[Statement], list[Statement]]:
    """The statements of a message without the lines of a tool's output that the conversation
    passes over, when it turns to others of them: what it names of an output is what it
    keeps of it. A line of a template repeated in other outputs (a field every reply of a tool
    has) counts as named only when the reply right after the output names it ("the escalation
    number is listed under escalation_number"): later words may be about another output's. An
    output none of whose lines it names is left to ``worth_keeping``. Also the lines named."""
    named = [
        s
        for s in found
        if s.role == "tool"
        and (_label_said(s, reply) if _said_over_and_over(s, repeated) else _referred(s, later))
    ]
    if not named:
        return found, []
    return [s for s in found if s.role != "tool" or s in named], named


def _referred(statement: Statement, later: str) -> bool:
    """Whether the conversation turns to a line of a tool's output: the line reports a failure,
    or the label of one of its values (the two to four words before it, a joined key written
    apart) is said again after it. Lines no one turns to (the ids and timings a tool reports
    each time) are the tool's, not the conversation's."""
    return FAILURE.search(statement.text) is not None or _label_said(statement, later)


def _label_said(statement: Statement, later: str) -> bool:
    """Whether the label of one of the line's values (``_referred``) is said in ``later``."""
    for value in statement.anchors:
        words = _spelled(" ".join(_label_before(statement.text, value)[-LABEL_WORDS:])).split()
        label: list[str] = []
        for word in reversed(words):
            if not word.isalpha():
                break
            label.insert(0, word)
        for start in range(len(label) - 1):
            if f" {' '.join(label[start:])} " in later:
                return True
    return False


# Words that announce a correction in a sentence of their own ("Sorry, I gave you the wrong one
# earlier.", "The date moved:", "I was wrong about the room for the Q3 offsite.", "Forget the
# old venue for the offsite."); "now" and "new" alone are too common to announce one.
ANNOUNCED_CORRECTION = re.compile(
    r"\b(?:actually|correction|wrong|mistake|typo|scratch that|changed? my mind|moved|instead|"
    r"updated?|changed|forget (?:the|what|that|about)|disregard|ignore (?:the|what|that)|"
    r"reassigned|renamed|re(?:booked|scheduled|vised)|revised|postponed)\b",
    re.IGNORECASE,
)


# The time stamp that opens each record of a log (ISO 8601 date and time, with a fraction and
# zone if any, then a bracketed or padded source before the level is left as it is).
LOG_STAMP = re.compile(
    r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?\s+"
)


def cued_statements(role: str, text: str) -> list[Statement]:
    """The statements of a message; a statement right after one that announces a correction
    ("Sorry, I gave you the wrong one earlier.", "I was wrong about the room for the Q3
    offsite.") carries that announcement with it (in ``said``), so it is read as the
    correction of what the announcement names. The announcement may hold values of its own
    (the matter's name: "Q3"). A log's records are read without their time stamps."""
    return list(_cued_statements(role, text))


# A message is read again by the writes after its own (a write reads ahead past its segment,
# ``drop_superseded``, and the next write reads those messages as its segment). Whole messages
# are the largest keys of the writer's caches: a few hundred cover a segment and its read-ahead.
@text_cache(512)
def _cued_statements(role: str, text: str) -> tuple[Statement, ...]:
    found = list(statements(role, text))
    if role == "tool":
        found = _without_log_stamps(found)
    for index in range(1, len(found)):
        cue = found[index - 1]
        if says(ANNOUNCED_CORRECTION, cue.text) and not cue.asks:
            statement = found[index]
            found[index] = Statement(
                statement.role, statement.text, statement.anchors, f"{cue.text} {statement.whole}"
            )
    return tuple(found)


def _without_log_stamps(found: list[Statement]) -> list[Statement]:
    """A tool output most of whose lines open with a time stamp is a log: each record is read
    without it. The stamp is when the line was written, not what the conversation turns to, and
    as two strong values it would outweigh the record's own value and cost a dozen tokens in
    every line the memo keeps."""
    if 2 * sum(bool(LOG_STAMP.match(s.text)) for s in found) <= len(found):
        return found
    records = []
    for statement in found:
        text = LOG_STAMP.sub("", statement.text, count=1)
        records.append(
            statement
            if text == statement.text
            else Statement(statement.role, text, tuple(anchors(text)))
        )
    return records


def parse_memo(text: str) -> list[Line]:
    """The lines of a memo this backend wrote; any other text is read as statements."""
    lines: list[Line] = []
    for raw in text.splitlines():
        raw = raw.strip()
        if not raw or raw == HEADER:
            continue
        line = _memo_line(raw)
        if line is not None:
            lines.append(line)
            continue
        for statement in worth_keeping(list(statements("memo", raw)), set()):
            lines.append(Line("memo", statement.text, statement.anchors))
    return lines


def _anchors_of(text: str) -> list[str]:
    return [anchor for statement in statements("memo", text) for anchor in statement.anchors]


def _repeat_counts(lines: Sequence[Line], by_message: Sequence[list[Statement]]) -> dict[str, int]:
    """How often the memo and the segment say each skeleton and word 4-gram: what is said over
    and over (``REPEATS`` times) is a template (log lines, JSON fields of every tool reply) or
    small talk. A value worth keeping is said in its own words. Values are counted too (keyed
    by ``_value_key``): a value said once is not small talk, whatever words frame it."""
    items = [*lines, *(s for found in by_message for s in found)]
    counts: dict[str, int] = {}
    for item in items:
        keys = {skeleton(item.text), *_grams(item.text)}
        if _from_tool(item):
            keys.add(_form_key(item.text))
        keys |= {_value_key(anchor) for anchor in item.anchors}
        for key in keys:
            counts[key] = counts.get(key, 0) + 1
    return counts


def _from_tool(item: Statement | Line) -> bool:
    return item.role == "tool" or item.text.startswith("[called ")


def _form_key(text: str) -> str:
    return "\x01" + form(text)


def _value_key(anchor: str) -> str:
    return "\x00" + anchor.casefold()


@text_cache(4096)  # asked of every line and statement at each write
def _grams(text: str) -> frozenset[str]:
    words = [word.strip(EDGE_PUNCTUATION).casefold() for word in text.split()]
    return frozenset("\t".join(words[i : i + GRAM]) for i in range(len(words) - GRAM + 1))


def _said_over_and_over(item: Statement | Line, repeated: set[str]) -> bool:
    """A tool line or call of a repeated template, or a thin statement (no value of its own
    beyond a weak one) most of whose word 4-grams are said elsewhere too."""
    if item.text.startswith("[called "):
        return skeleton(item.text) in repeated
    if item.role == "tool":
        return skeleton(item.text) in repeated or _form_key(item.text) in repeated
    if _weight(item) > MEDIUM:
        return False
    if any(_value_key(anchor) not in repeated for anchor in item.anchors):
        return False  # it says a value nothing else here says: not small talk
    grams = _grams(item.text)
    if skeleton(item.text) in repeated:
        return True
    return bool(grams) and 2 * len(grams & repeated) >= len(grams)


def worth_keeping(
    found: list[Statement],
    repeated: set[str],
    often: set[str] | None = None,
    *,
    named: Sequence[Statement] = (),
) -> list[Statement]:
    """The statements of one message a memo may keep (trimmed), at most
    ``MAX_PER_MESSAGE[role]``: those that carry the most, in message order. A statement is kept
    when it carries a value (a question only a strong one), or, from the user, states a
    preference or a decision; never when its skeleton is one of ``repeated``, unless the
    conversation names it (``named``, lines of a tool's output: ``_turned_to``)."""
    kept = []
    for statement in found:
        if statement.text.startswith("[called "):  # an agent's call weighs like a tool's output
            statement = Statement("tool", statement.text, statement.anchors, statement.said)
        if (
            statement not in named
            and _said_over_and_over(statement, _repeats_for(statement, repeated, often))
            and not _request_after_lead_in(statement, repeated)
        ):
            continue
        strongest = max((strength(anchor) for anchor in statement.anchors), default=0)
        if statement.asks and strongest < STRONG:
            continue
        if statement.weight >= (WEAK if statement.role == "user" else MEDIUM) or (
            statement.role in ("user", "memo") and statement.prefers and _words(statement) >= 3
        ):
            kept.append(_trimmed(statement))
    if not kept:
        return kept
    # Counted by who wrote the message (an agent's calls are read like a tool's output, but
    # an assistant message keeps as many of them as of its words).
    limit = MAX_PER_MESSAGE.get(found[0].role, 3)
    if found[0].role == "tool" and named:
        limit = max(limit, min(len(named), MAX_NAMED_PER_OUTPUT))
    if len(kept) > limit:
        ranked = sorted(range(len(kept)), key=lambda i: (-kept[i].weight, i))[:limit]
        kept = [kept[i] for i in sorted(ranked)]
    return kept


def _repeats_for(item: Statement | Line, repeated: set[str], often: set[str] | None) -> set[str]:
    """What counts as said over and over for ``item``: a user's statement without values (a
    preference, a decision) must be said more often than twice before it is taken for small
    talk, as restating a wish once ("email only, please, as I said") is what people do."""
    if often is not None and item.role == "user" and not item.anchors:
        return often
    return repeated


def _request_after_lead_in(statement: Statement, repeated: set[str]) -> bool:
    """A preference or decision of the user's after a lead-in said before many requests ("one
    more thing about how I like things: …"): the lead-in is repeated, the request is not."""
    if statement.role != "user" or not statement.prefers or statement.text.startswith("[called "):
        return False
    trimmed = _trimmed(statement)
    return trimmed.text != statement.text and not _said_over_and_over(trimmed, repeated)


def _weight(item: Statement | Line) -> int:
    return min(8, sum(strength(anchor) for anchor in item.anchors))


def _words(statement: Statement) -> int:
    return len(statement.text.split())


def _trimmed(statement: Statement) -> Statement:
    """A statement cut to what carries it: the clauses holding its values (the lead-in before
    a colon, "please keep that handy" after a comma go), or for a preference without values
    what follows its lead-in; then, if still long, the words around its values."""
    if statement.anchors:
        text = _clauses_with(statement.text, statement.anchors, user=statement.role == "user")
    else:
        _lead, colon, rest = statement.text.rpartition(": ")
        text = rest if colon and len(rest.split()) >= 3 else statement.text
    if not (statement.role == "user" and statement.prefers):
        text = _windows(text, statement.anchors)
    return Statement(statement.role, text, statement.anchors, statement.whole)


def _clauses_with(text: str, values: Sequence[str], *, user: bool) -> str:
    """The clauses of ``text`` holding one of ``values`` (or, said by the user, a preference
    or decision), joined as written ("…" for a gap)."""
    pieces = _CLAUSE.split(text)
    clauses, separators = pieces[0::2], pieces[1::2]
    keys = [value.casefold() for value in values]
    keep = [
        any(key in clause.casefold() for key in keys)
        or (user and PREFERENCE.search(clause) is not None)
        for clause in clauses
    ]
    if not any(keep) or all(keep):
        return text
    out: list[str] = []
    for index, clause in enumerate(clauses):
        if not keep[index]:
            continue
        if out:
            out.append(separators[index - 1] if keep[index - 1] else " … ")
        out.append(clause)
    return "".join(out).strip()


def _windows(text: str, values: Sequence[str], before: int = WINDOW_BEFORE) -> str:
    """``text`` cut to the words around its values: ``before`` words before each,
    ``WINDOW_AFTER`` after (a label and a unit stay; a long lead-in goes)."""
    words = text.split()
    if not values:
        return text if len(words) <= MAX_WORDS else " ".join(words[:MAX_WORDS]) + " …"
    keys = {value.casefold() for value in values}
    keep: set[int] = set()
    for index, word in enumerate(words):
        if any(key in word.casefold() for key in keys):
            keep.update(range(max(0, index - before), index + WINDOW_AFTER + 1))
    if not keep:
        keep = set(range(MAX_WORDS))
    pieces: list[str] = []
    previous = -2
    for index in sorted(i for i in keep if i < len(words)):
        if index != previous + 1 and (pieces or index > 0):
            pieces.append("…")  # a gap, or a start cut off (the label may be incomplete)
        pieces.append(words[index])
        previous = index
    return " ".join(pieces)


def _shared_words(topics: frozenset[str], announcement: frozenset[str], old: frozenset[str]) -> int:
    """The content words a new line shares with an old one; for a line that shares none, the
    words its announcement shares ("Turns out I was wrong about the change ticket on the
    Postgres failover. It's actually chg805455."), when they are at least ``NAMED_WORDS``: one
    word ("address") names many slots."""
    shared = len(topics & old)
    if shared:
        return shared
    announced = len(announcement & old)
    return announced if announced >= NAMED_WORDS else 0


class Memo:
    """The memo's lines while a segment is folded in (oldest first)."""

    def __init__(self, lines: Iterable[Line]) -> None:
        self.lines = list(lines)
        # The previous memo's lines (held, so their ids stay theirs), and those a statement
        # being folded in may not correct (``fold``'s ``read_ahead``).
        self._inherited = list(self.lines)
        self._settled: set[int] = set()

    def fold(self, statement: Statement, *, read_ahead: bool = False) -> None:
        """Fold one statement in: see the module docstring for the rules, applied in order.
        ``read_ahead``: the previous memo's writer read the statement ahead, so what it
        corrects among the previous memo's lines is let go already; it is read against the
        lines this write added only (a second pass would take another line of the slot)."""
        self._settled = {id(old) for old in self._inherited} if read_ahead else set()
        try:
            self._fold(statement)
        finally:
            self._settled = set()

    def _fold(self, statement: Statement) -> None:
        line = Line(statement.role, statement.text, statement.anchors)
        keys = line.keys
        known = set().union(*(old.keys for old in self.lines)) if self.lines else set()
        if statement.closes and keys <= known:
            if keys:
                self._close(keys)
            else:
                self._close_by_name(statement)
            return
        if keys and self._corrected(line, statement):
            self.lines.append(line)
            return
        if keys:
            holder = next(
                (
                    old
                    for old in reversed(self.lines)
                    if keys <= old.keys and _adds(line.text, old.text) < RESTATEMENT_WORDS
                ),
                None,
            )
            if holder is not None:
                self.lines.remove(holder)
                self.lines.append(holder)
                return
            self.lines = [
                old
                for old in self.lines
                if not (
                    old.keys and old.keys <= keys and _adds(old.text, line.text) < RESTATEMENT_WORDS
                )
            ]
        elif any(old.text.casefold() == line.text.casefold() for old in self.lines):
            return
        self.lines.append(line)

    def supersede(self, statement: Statement) -> None:
        """Apply what ``statement`` corrects (as ``fold`` would) without keeping it."""
        if statement.asks or not statement.anchors:
            return
        self._corrected(Line(statement.role, statement.text, statement.anchors), statement)

    def forget(self, repeated: set[str], often: set[str] | None = None) -> None:
        """Let go of lines whose skeleton turned out to be a template or small talk."""
        self.lines = [
            line
            for line in self.lines
            if not _said_over_and_over(line, _repeats_for(line, repeated, often))
        ]

    def _close(self, keys: frozenset[str]) -> None:
        identifiers = {key for key in keys if _identifier_like(key)} - self._shared_keys()
        if identifiers:
            self.lines = [line for line in self.lines if not (line.keys & identifiers)]

    def _close_by_name(self, statement: Statement) -> None:
        """A closing statement without values names its matter in words ("the blender order
        is resolved"): let go of the lines sharing two or more of its less common words."""
        words = topic_words(statement.text, statement.anchors)
        common = self._common_words()
        words = {word for word in words if word not in common}
        if len(words) < CLOSING_WORDS:
            return
        self.lines = [
            line
            for line in self.lines
            if len(words & topic_words(line.text, line.anchors)) < CLOSING_WORDS
        ]

    def _common_words(self) -> set[str]:
        """Content words in at least half the lines: they name no one matter."""
        counts: dict[str, int] = {}
        for line in self.lines:
            for word in topic_words(line.text, line.anchors):
                counts[word] = counts.get(word, 0) + 1
        return {word for word, count in counts.items() if count * 2 >= len(self.lines)}

    def _shared_keys(self) -> set[str]:
        counts: dict[str, int] = {}
        for line in self.lines:
            for key in line.keys:
                counts[key] = counts.get(key, 0) + 1
        limit = max(2, SHARED_ANCHOR_SHARE * len(self.lines))
        return {key for key, count in counts.items() if count > limit}

    def _corrected(self, line: Line, statement: Statement) -> bool:
        """Apply what ``statement`` (as ``line``) corrects, by the label rules (``_correct``)
        or, for a correction that names its slot in words, by that name (``_correct_by_slot``).
        True if an earlier line was let go or cut."""
        said = statement.whole
        if self._negated(line, said):
            return True
        if (statement.corrects or self._restates_label(line, said)) and self._correct(
            line, said, cued=statement.corrects
        ):
            return True
        return statement.corrects and not statement.asks and self._correct_by_slot(line, said)

    def _negated(self, line: Line, said: str) -> bool:
        """A statement that gives a new value and names an earlier one as not it ("it is
        v2.3.2, not v2.3.1", "#55120, not #55102", "use Y instead of X"): the earlier value,
        when it is of the new one's kind, is stale wherever the memo holds it. True if a line
        was let go or cut."""
        denied = _denied(said, line.anchors)
        if not denied:  # the text search first: most statements deny nothing
            return False
        known = self._all_keys()
        new_kinds = {_kind(a) for a in line.anchors if a.casefold() not in known}
        denied = [v for v in denied if v.casefold() in known and _kind(v) in new_kinds]
        if not denied:
            return False
        for old in [old for old in self._open() if old.keys & {v.casefold() for v in denied}]:
            stale = [a for a in old.anchors if a.casefold() in {v.casefold() for v in denied}]
            self._let_go(old, _stale_run(old, stale), line)
        return True

    def _correct_by_slot(self, line: Line, said: str) -> bool:
        """For the user's correction worded apart from the line it corrects but naming the slot that
        line gives its value under ("ignore what we had as the function at fault; use X",
        then the line "function_at_fault: Y"; "replace the manager I report to with X", then
        "Y is the manager"): the line whose label (a key written joined or apart) the
        correction says is the one that goes, or loses its stale values. The line
        whose label is said at most length and that shares most words with the correction;
        when several tie with other values, which one is meant is not told and none goes.
        True if one was let go or cut."""
        known = self._all_keys()
        new_values = [anchor for anchor in line.anchors if anchor.casefold() not in known]
        # The user's, with a value that tells something (not a lone short number: "20" of
        # "20 March 2027" tells as the run it is written in).
        if line.role != "user" or all(
            strength(_run_of(line.text, line.anchors, value)) <= WEAK for value in new_values
        ):
            return False
        spoken = _spelled(said)
        topics = topic_words(said, line.anchors)
        found: list[tuple[int, Line, list[str]]] = []
        for old in self._open():
            named = {
                anchor: _slot_said(old.text, old.anchors, anchor, spoken)
                for anchor in old.anchors
                # A value the correction says, or a key it names, is not stale.
                if anchor.casefold() not in line.keys and _spelled(anchor) not in spoken
            }
            slots = [slot for slot in named.values() if slot]
            if slots:
                slot = max(slots, key=len)
                # The matter they share, not the slot's own words (a key's, written joined,
                # are no words of the line).
                matter = topics & topic_words(old.text, old.anchors)
                shared = len(matter - topic_words(" ".join(slot), ()))
                stale = [anchor for anchor, words in named.items() if words]
                found.append((len(slot) + shared, old, _stale_run(old, stale)))
        best = max((score for score, _, _ in found), default=0)
        chosen = [(old, stale) for score, old, stale in found if score == best]
        if not chosen or len({frozenset(map(str.casefold, stale)) for _, stale in chosen}) > 1:
            return False
        for old, stale in chosen:
            self._let_go(old, stale, line)
        return True

    def _correct(self, line: Line, said: str = "", *, cued: bool = True) -> bool:
        """Let the earlier line that says the same thing go, or cut its stale values out. The
        line chosen shares a content word with the new one and either holds a value of the
        same shape as a new value or gives its value after the same label (both, when the
        new statement has no correction word: ``cued``); among several, the one sharing the
        most, the newest on a tie. ``said``: the whole sentence the new line was cut from (its
        label). True if one was found."""
        known = self._all_keys()
        new_values = [a for a in line.anchors if a.casefold() not in known]
        if not new_values:
            return False
        new_shapes = {_kind(value) for value in new_values}
        label = _label_of(said or line.text, line.anchors, new_values[0])
        # Said as a correction in so many words (not only "new" or "now"): a shorter name of
        # the slot ("my number") may name the line's ("my phone number").
        announced = says(ANNOUNCED_CORRECTION, said or line.text)
        topics = topic_words(line.text, line.anchors)
        # The user's own announcement ("I was wrong about …") names the line it takes back.
        announcement = (
            topic_words(said, line.anchors) if announced and line.role == "user" else frozenset()
        )
        best: tuple[float, Line, list[str]] | None = None
        open_lines = self._open()
        for position, old in enumerate(open_lines):
            shared = _shared_words(topics, announcement, topic_words(old.text, old.anchors))
            if not shared:
                continue
            fresh = [a for a in old.anchors if a.casefold() not in line.keys]
            labelled = [a for a in fresh if _same_label(label, old.labels[a])]
            shaped = [
                a
                for a in fresh
                if _kind(a) in new_shapes
                and not _other_of_a_kind(label, old.labels[a], shorter_is_same=announced)
            ]
            if not _telling_shapes(shaped, label, old):
                shaped = []
            related = [a for a in fresh if _related_label(label, old.labels[a])]
            stale = (labelled or shaped or related) if cued else labelled
            if not stale:
                continue
            match = max(_label_match(label, old.labels[a]) for a in stale)
            score = shared + match + position / len(open_lines)
            if best is None or score > best[0]:
                best = (score, old, _stale_run(old, stale))
        if best is None and cued and line.role == "user":
            best = self._only_line_of_shape(new_shapes, line)
        if best is None:
            return False
        _, old, stale = best
        self._let_go(old, stale, line)
        return True

    def _let_go(self, old: Line, stale: list[str], line: Line) -> None:
        """Let ``old`` go when nothing telling stays once its ``stale`` values are out (what
        stays the new ``line`` says too, or is weak), else cut the stale values out of it. A
        line of a tool's output goes whole: it is one record (a log line, a field), and what
        stays of it once its value is stale is its time stamp and label, which carry nothing."""
        kept = [a for a in old.anchors if a not in stale]
        if (
            not kept
            or _from_tool(old)
            or all(a.casefold() in line.keys or strength(a) <= WEAK for a in kept)
        ):
            self.lines.remove(old)
        else:
            cut = Line(old.role, _cut(old.text, stale), tuple(kept))
            self.lines = [cut if one is old else one for one in self.lines]

    def _only_line_of_shape(
        self, new_shapes: set[str], line: Line
    ) -> tuple[float, Line, list[str]] | None:
        """For the user's correction worded apart from the line it corrects ("my teacher's
        email is …", then "correction: the instructor's address is actually …"): the one line
        holding a value of a new value's shape, when that shape tells something by itself
        (three classes or more, letters among them: an e-mail, a code; not a number or a date,
        which many things have), no other line holds one, and it shares no
        content word with the new line (worded alike, it was the label rules' to find). None
        when several do (which one is meant is not told)."""
        telling = {one for one in new_shapes if len(one) >= 3 and "a" in one}
        holders = [
            (old, [a for a in old.anchors if _kind(a) in telling and a.casefold() not in line.keys])
            for old in self._open()
        ]
        holders = [(old, stale) for old, stale in holders if stale]
        if len(holders) != 1:
            return None
        old, stale = holders[0]
        if topic_words(line.text, line.anchors) & topic_words(old.text, old.anchors):
            return None
        return 0.0, old, _stale_run(old, stale)

    def _restates_label(self, line: Line, said: str = "") -> bool:
        """Whether an earlier line gives a value after the same words (the same label: "the
        pull request number for the Django upgrade is"): a new value for the same thing, even
        without "actually" or "changed"."""
        known = self._all_keys()
        new = [a for a in line.anchors if a.casefold() not in known]
        if not new:
            return False
        label = _label_of(said or line.text, line.anchors, new[0])
        # Labels that end alike end in the same word: the cheap test first, for every value of
        # every line.
        last = label[-1:]
        return any(
            other[-1:] == last and _same_label(label, other)
            for old in self._open()
            for other in old.labels.values()
        )

    def _open(self) -> list[Line]:
        """The lines a correction being folded in may let go or cut."""
        if not self._settled:
            return self.lines
        return [line for line in self.lines if id(line) not in self._settled]

    def _all_keys(self) -> set[str]:
        return set().union(*(line.keys for line in self.lines)) if self.lines else set()


# A pure function of its strings, asked again for every earlier line each time a statement is
# folded in (most of a memo write's time): remembered for the lines of the memos being written.
@text_cache(8192)
def _label_of(text: str, anchors: tuple[str, ...], value: str) -> tuple[str, ...]:
    """The label of ``value`` in ``text``: the words before the run of values it is written
    in ("SN PQQT-J85V", "GBP 274.54", "José Álvarez Núñez" read from their first value)."""
    lowered = text.casefold()
    at = lowered.find(value.casefold())
    if at < 0:
        return ()
    start = value
    moved = True
    while moved:
        moved = False
        for anchor in anchors:
            end = lowered.find(anchor.casefold())
            if end < 0 or end >= at:
                continue
            gap = text[end + len(anchor) : at]
            if len(gap) <= 2 and not gap.strip(" ,"):
                at, start, moved = end, anchor, True
                break
    return tuple(_label_before(text, start))


def _label_before(text: str, value: str) -> list[str]:
    """The words before ``value`` in ``text`` (lower case, edge punctuation stripped), without
    the verb and connectives that join a label to its value ("is", "is now", "has changed
    to", "="): "the address is actually X" and "the address has changed to Y" give their
    values after one label."""
    at = text.casefold().find(value.casefold())
    if at < 0:
        return []
    words = [word.strip(EDGE_PUNCTUATION).casefold() for word in text[:at].split()]
    words = [word for word in words if word]
    words = _before_value_phrase(words)
    while words and words[-1] in _LINKING_WORDS:
        words.pop()
    if text.startswith("…"):
        words.insert(0, CUT_OFF)  # the label's start was cut: it is not all of it
    return words


def _before_value_phrase(words: list[str]) -> list[str]:
    """``words`` (those before a value) without the words that open the value's own phrase:
    when a copula ("is", "are", "was", "were", "=", "to") stands at most ``VALUE_PHRASE_WORDS``
    words before the value, what follows it belongs to the value ("is python manage.py …",
    "is now this coming Friday", "= pytest -k …", "changed to the 3 pm slot"), not to the
    label; unless a preposition is among them ("is in two weeks"): a relation, not a name."""
    for back in range(min(VALUE_PHRASE_WORDS, len(words) - 1) + 1):
        if words[-1 - back] in _COPULAS:
            phrase = words[len(words) - back :]
            if _PREPOSITIONS.intersection(phrase):
                return words  # "is in two weeks", "is at 9": a relation, read as before
            return words[: len(words) - back]  # the nearest copula: "the flight to Osaka is"
    return words


# The verbs that join a label to its value; see ``_before_value_phrase``.
_COPULAS = frozenset(["is", "are", "was", "were", "=", "to"])
VALUE_PHRASE_WORDS = 3


# Words that open a noun phrase: two labels alike from one of these on name one thing.
_DETERMINERS = frozenset(
    """the a an my our your his her their its this that these those which what""".split()  # noqa: SIM905
)
_PREPOSITIONS = frozenset(
    """in on at for of to from with by about before after until""".split()  # noqa: SIM905
)
# The first word of the label of a line whose start was cut: it matches no word.
CUT_OFF = "\x00…"


# What names a value as the wrong one: "not" right before it ("it is v2.3.2, not v2.3.1").
# ("instead of" is left out: "use Y instead of X" denies X, "you charged Y instead of X" not.)
_DENIAL = re.compile(r"\bnot\s+(?:the\s+|an?\s+)?$", re.IGNORECASE)


def _denied(text: str, anchors: tuple[str, ...]) -> list[str]:
    """The values of ``anchors`` that ``text`` names as the wrong ones (see ``_DENIAL``): the
    run of values right after the denial, less those the text also says elsewhere (the
    currency of "CHF 53.00, not CHF 35.00")."""
    lowered = text.casefold()
    denied = []
    for value in anchors:
        at = lowered.find(value.casefold())
        while at >= 0:
            if _DENIAL.search(text[max(0, at - 12) : at]):
                run = _run_of(text[at:], anchors, value)
                rest = lowered[:at] + lowered[at + len(run) :]
                denied += [
                    a
                    for a in anchors
                    if a.casefold() in run.casefold() and a.casefold() not in rest
                ]
                break
            at = lowered.find(value.casefold(), at + 1)
    return list(dict.fromkeys(denied))


def _kind(value: str) -> str:
    """``value``'s shape, or for an e-mail address, a URL or a file's path the kind it is: two
    of one kind are two values of one thing however many dots or folders each has
    ("jane.doe@gmail.com" and "jane@doe.dev", "/etc/app/config.yaml" and
    "/opt/app/conf/app.yaml")."""
    value_shape = shape(value)
    if "@" in value_shape[1:]:
        return "a@a"
    if "://" in value_shape:
        return "a://a"
    # A file's path: folders and a name with its extension (a branch or "and/or" is no path).
    if "/" in value_shape and "." in value_shape[value_shape.rfind("/") :]:
        return "a/a.a"
    return value_shape


def _label_match(one: Sequence[str], other: Sequence[str]) -> int:
    """How many words two labels end with alike."""
    matched = 0
    for a, b in zip(reversed(one), reversed(other), strict=False):
        if a != b or a == CUT_OFF:
            break
        matched += 1
    return matched


def _telling_shapes(shaped: list[str], label: Sequence[str], old: Line) -> bool:
    """Whether values of the new line's shapes tell that ``old`` holds the stale value: a shape
    of three classes or more ("a-9", "9/9/9"), two shapes or more in common (an address: "9",
    "a9", "9a"), or a label ending alike in the name of the slot, not only in the matter ("my
    phone number" and "OK so my phone number"; not "the PNR for the flight to Osaka" and "the
    flight number for the flight to Osaka", which share only what follows "for"). A lone word
    or number alone tells nothing."""
    shapes = {shape(value) for value in shaped}
    if len(shapes) >= 2 or any(len(one) >= 3 for one in shapes):
        return True
    return any(_shares_slot(label, old.labels[a]) for a in shaped)


def _shares_slot(one: Sequence[str], other: Sequence[str]) -> bool:
    """Whether two labels end alike from before the matter they name on: what they share does
    not open with a preposition ("… number for the headphones return")."""
    matched = _label_match(one, other)
    return matched > 0 and one[len(one) - matched] not in _PREPOSITIONS


def _other_of_a_kind(
    one: Sequence[str], other: Sequence[str], *, shorter_is_same: bool = False
) -> bool:
    """Whether two labels name two things of one kind: they part inside their last noun
    phrase ("… for the series unit" and "… for the integration unit": what they share holds
    no determiner or preposition; "the RMA number for the headphones return" and "the return
    authorisation number for the headphones return" part before the matter they share). With
    ``shorter_is_same`` (a correction said in so many words), not when one names the other's
    slot in fewer words ("my number", "my phone number": ``_names_less``)."""
    matched = _label_match(one, other)
    if not matched or matched >= min(len(one), len(other)):
        return False
    shared = set(one[len(one) - matched :])
    if shared & _DETERMINERS or shared & _PREPOSITIONS:
        return False
    return not (shorter_is_same and (_names_less(one, other) or _names_less(other, one)))


# Words of a label that say the value is new or right, not which slot it fills ("the *new*
# hotel reference", "my *correct* number").
_VALUE_STATE_WORDS = frozenset(
    """new old correct right actual updated current latest previous earlier""".split()  # noqa: SIM905
)


def _names_less(one: Sequence[str], other: Sequence[str]) -> bool:
    """Whether the last noun phrase of label ``one`` names the slot of ``other``'s in fewer
    words ("my number" of "my phone number", "the new hotel reference" of "the hotel booking
    reference"): its content words are all ``other``'s."""
    phrase = _last_noun_phrase(one)
    content = {word for word in phrase if word not in _FUNCTION_WORDS | _VALUE_STATE_WORDS}
    fuller = set(_last_noun_phrase(other))
    # A possessive among the words it lacks names someone else's ("my partner's number").
    others = any(word.endswith(("'s", "’s")) for word in fuller - content)  # noqa: RUF001
    return bool(content) and content < fuller and not others


def _last_noun_phrase(label: Sequence[str]) -> list[str]:
    """The words of ``label`` from its last determiner or preposition on (all of it if none)."""
    for index in range(len(label) - 1, -1, -1):
        if label[index] in _DETERMINERS or label[index] in _PREPOSITIONS:
            return list(label[index + 1 :])
    return list(label)


def _related_label(one: Sequence[str], other: Sequence[str]) -> bool:
    """Whether two labels name one slot of one matter in other words: they end alike for three
    words or more (the matter: "for the router return") and, before that, share a word of four
    letters or more ("the agent handling it" and "the name of the support agent")."""
    matched = _label_match(one, other)
    if matched < 3:
        return False
    rest = {word for word in one[: len(one) - matched] if len(word) >= 4 and word.isalpha()}
    return bool(rest & set(other[: len(other) - matched]))


def _same_label(one: Sequence[str], other: Sequence[str]) -> bool:
    """Whether two labels end alike: ``SAME_LABEL_WORDS`` words or more from a determiner on,
    or all of the shorter one (at least four words). Not when they part inside a noun phrase:
    "the lumber supplier's invoice …" and "the concrete supplier's invoice …" name two things
    (what they share holds no determiner that many words from its end). Words before that
    determiner may be shared too ("OK so the tuition due date for …" and "They rescheduled, so
    the tuition due date for …")."""
    matched = _label_match(one, other)
    shorter = min(len(one), len(other))
    if matched == shorter and shorter >= 4:
        return True
    if matched < SAME_LABEL_WORDS:
        return False
    shared = one[len(one) - matched :]
    return any(word in _DETERMINERS for word in shared[: matched - SAME_LABEL_WORDS + 1])


# Words that say nothing of which slot a label names.
_FUNCTION_WORDS = _DETERMINERS | _PREPOSITIONS | _LINKING_WORDS | frozenset(["and", "or", "s"])
# Prepositions that, before a name in a correction, make it the matter ("… for the router
# return"), not the slot corrected.
_MATTER_PREPOSITIONS = frozenset(["for", "on", "in", "at", "to"])
# Words after a value that open its label ("Y is the manager", "Y for the query that
# worked", "Y — that's the error code"), and how many of them are read.
_LABEL_AFTER_OPENERS = _COPULAS | frozenset(["for", "as", "that's", "which", "—", "–", "-"])  # noqa: RUF001
WORDS_AFTER = 6
# Words read back from a name in a correction for the preposition that makes it the matter.
MATTER_REACH = 4
# Words of a noun phrase before the name of a slot ("the *maintainer's* phone number").
NOUN_REACH = 2


def _slot_said(text: str, anchors: tuple[str, ...], value: str, spoken: str) -> tuple[str, ...]:
    """The words of ``value``'s label in ``text`` that the correction ``spoken`` (written
    out by ``_spelled``) says, naming a slot (``_names_a_slot``) and not as the matter it is
    about; () when it says none. The label is read before the value, or after it when the
    value opens the line's statement of it ("Y is the manager")."""
    label = _spelled(" ".join(_label_of(text, anchors, value))).split()
    for before in _slot_readings(label, spoken):
        said = _slot_said_before(before, spoken)
        if said:
            return said
    return _slot_said_after(text, anchors, value, spoken)


def _slot_said_before(before: list[str], spoken: str) -> tuple[str, ...]:
    """The last words of the label ``before`` that ``spoken`` says as a slot; () if none."""
    tail: list[str] = []
    for word in reversed(before[-LABEL_WORDS:]):
        if not word.isalpha():
            break
        tail.insert(0, word)
    for start in range(len(tail)):
        head = before[: len(before) - len(tail) + start]
        # Not the matter the line's label names after a preposition ("… for the router
        # return", "… of traffic"), nor the last word of a longer name.
        if _in_matter(head, _PREPOSITIONS) or _ends_a_name(head, tail[start:]):
            continue
        if _said_as_slot(tail[start:], spoken):
            return tuple(tail[start:])
    return ()


def _slot_readings(label: list[str], spoken: str) -> list[list[str]]:
    """Where a label's slot may end: the label, without a last phrase naming its matter by a
    value ("the delivery date *for order qx 1182*"); then without its last phrase of the matter
    at all ("the deadline *for the quarterly report*", which a correction may call "the report
    deadline"), when the correction ``spoken`` says a word of that matter that the slot does
    not hold (one about "the order number for the blender order" is not about "the order
    number for the standing desk order")."""
    first = _without_matter(label) if label and not label[-1].isalpha() else label
    second = _without_matter(first)
    matter = set(first[len(second) :]) - set(second) - _FUNCTION_WORDS
    said = set(spoken.split())
    # A correction naming a matter of its own ("… for the router return") must name this one.
    if said & _OWN_MATTER_PREPOSITIONS:
        names_it = bool(matter) and matter <= said
    else:
        names_it = bool(matter & said)
    return [first, second] if second != first and names_it else [first]


# Prepositions with which a correction names its own matter ("to" mostly opens its value:
# "changed to …").
_OWN_MATTER_PREPOSITIONS = frozenset(["for", "on", "in", "at"])


def _without_matter(words: list[str]) -> list[str]:
    """``words`` without their last phrase opened by a preposition of the matter, if one
    opens at most ``MATTER_REACH`` words from the end."""
    for back in range(2, min(MATTER_REACH + 1, len(words)) + 1):
        if words[-back] in _MATTER_PREPOSITIONS:
            return words[:-back]
    return words


def _run_of(text: str, anchors: tuple[str, ...], value: str) -> str:
    """``value`` with the values written right before and after it (at most two characters
    of blank or comma between): "20 March 2027" for "20"."""
    lowered = text.casefold()
    start = lowered.find(value.casefold())
    if start < 0:
        return value
    end = start + len(value)
    moved = True
    while moved:
        moved = False
        for anchor in anchors:
            at = lowered.find(anchor.casefold(), end)
            if at >= 0 and at - end <= 2 and not text[end:at].strip(" ,"):
                end, moved = at + len(anchor), True
            before = lowered.rfind(anchor.casefold(), 0, start)
            stop = before + len(anchor)
            if before >= 0 and start - stop <= 2 and not text[stop:start].strip(" ,"):
                start, moved = before, True
    return text[start:end]


def _slot_said_after(
    text: str, anchors: tuple[str, ...], value: str, spoken: str
) -> tuple[str, ...]:
    at = text.casefold().find(value.casefold())
    if at < 0:
        return ()
    rest = text[at + len(value) :]
    ends = [rest.casefold().find(anchor.casefold()) for anchor in anchors if anchor != value]
    rest = rest[: min([end for end in ends if end >= 0], default=len(rest))]
    words = rest.split()[:WORDS_AFTER]
    if not words or words[0].casefold().strip(EDGE_PUNCTUATION) not in _LABEL_AFTER_OPENERS:
        return ()
    after = _spelled(" ".join(words)).split()
    spans = (
        after[start:end]
        for start in range(len(after))
        for end in range(start + 1, min(len(after), start + LABEL_WORDS) + 1)
        if not _ends_a_name(after[:start], after[start:end])
    )
    return max((tuple(span) for span in spans if _said_as_slot(span, spoken)), key=len, default=())


def _said_as_slot(words: Sequence[str], spoken: str) -> bool:
    """Whether ``words`` name a slot (``_names_a_slot``; not opened by a preposition: "for the
    router return" names a matter) and ``spoken`` says them as one: in a noun phrase of its
    own (``_named_by_the_speaker``)."""
    if not _names_a_slot(words) or words[0] in _PREPOSITIONS:
        return False
    phrase = f" {' '.join(words)} "
    start = spoken.find(phrase)
    while start >= 0:
        if _named_by_the_speaker(spoken[:start].split()):
            return True
        start = spoken.find(phrase, start + 1)
    return False


def _named_by_the_speaker(before: Sequence[str]) -> bool:
    """Whether words said after ``before`` stand in a noun phrase that names something ("the
    error code", "our old phone number", "the maintainer's phone number"): a determiner opens
    it at most ``NOUN_REACH`` words back, and no preposition of the matter comes before it
    ("… for the disk pressure alerts" names the matter, "we're going with" nothing)."""
    index = len(before) - 1
    while index >= 0 and len(before) - 1 - index < NOUN_REACH:
        word = before[index]
        if word in _DETERMINERS or (word in _FUNCTION_WORDS and word != "s"):
            break
        index -= 1
    if index < 0 or before[index] not in _DETERMINERS:
        return False
    return index == 0 or before[index - 1] not in _MATTER_PREPOSITIONS


def _in_matter(before: Sequence[str], prepositions: frozenset[str] = _MATTER_PREPOSITIONS) -> bool:
    """Whether words said after ``before`` belong to a phrase opened by a preposition of the
    matter ("for the disk pressure alerts" for "pressure alerts"): back over the phrase's
    other content words (a few; a number or code ends the phrase) and its determiners, one
    of ``prepositions`` is found."""
    words = list(before[-MATTER_REACH:])
    while words and words[-1] not in _FUNCTION_WORDS and words[-1].isalpha():
        words.pop()
    while words and words[-1] in _DETERMINERS:
        words.pop()
    return bool(words) and words[-1] in prepositions


def _ends_a_name(head: Sequence[str], words: Sequence[str]) -> bool:
    """Whether ``words``, with one content word, are only the end of a longer name ("number"
    of "phone number", which "the ticket number" does not name): a content word is before
    them."""
    content = [word for word in words if word not in _FUNCTION_WORDS]
    return len(content) < 2 and bool(head) and head[-1] not in _FUNCTION_WORDS


def _names_a_slot(words: Sequence[str]) -> bool:
    """Whether a label's words can name a slot by themselves: two content words ("error
    code", "first author"), or one long one ("manager", "runbook"); not "the date", nor the
    words that say a value is new ("going forward it's", "the new one is")."""
    content = [word for word in words if word not in _NO_SLOT_WORDS]
    return len(content) >= 2 or any(len(word) >= 6 for word in content)


# Words that say how a value is given, not which slot it fills.
_NO_SLOT_WORDS = (
    _FUNCTION_WORDS | _VALUE_STATE_WORDS | frozenset(["going", "forward", "actually", "instead"])
)


def _stale_run(line: Line, stale: list[str]) -> list[str]:
    """The stale values and the values written right after them (the rest of an IBAN, an
    address or an amount written in several pieces)."""
    anchors = list(line.anchors)
    run = set(stale)
    for index, anchor in enumerate(anchors):
        if anchor in run and index + 1 < len(anchors):
            after = line.text.find(anchor) + len(anchor)
            following = anchors[index + 1]
            if line.text.find(following, after) - after in (0, 1, 2):
                run.add(following)
    return [anchor for anchor in anchors if anchor in run]


def _adds(text: str, other: str) -> int:
    """How many distinct words ``text`` has that ``other`` lacks (edge punctuation aside)."""
    words = {word.strip(EDGE_PUNCTUATION).casefold() for word in text.split()}
    others = {word.strip(EDGE_PUNCTUATION).casefold() for word in other.split()}
    return len(words - others - {""})


def _identifier_like(key: str) -> bool:
    """A value that names one matter (a code, a number), not a person or a word in capitals."""
    return any(char.isdigit() for char in key) or re.search(r"\w[-_./:#@]\w", key) is not None


def _cut(text: str, values: Sequence[str]) -> str:
    """``text`` with ``values`` replaced by "…" where they stand as words of their own (a "1"
    inside "Q-1181" stays); a run of values cut together ("12 March 2027") leaves one "…"."""
    for value in values:
        text = re.sub(rf"(?<!\w){re.escape(value)}(?!\w)", "…", text, flags=re.IGNORECASE)
    return _CUT_RUN.sub("…", text)


# Marks left next to each other by values cut from one run, with the blanks and commas between.
_CUT_RUN = re.compile(r"…(?:[ ,]{0,2}…)+")


def _tightened(line: Line) -> Line:
    """``line`` cut to ``TIGHT_BEFORE`` words before each value (a user's wish without values
    stays whole)."""
    if not line.anchors:
        return line
    return Line(line.role, _windows(line.text, line.anchors, TIGHT_BEFORE), line.anchors)


def fit_memo(lines: Sequence[Line], max_tokens: int) -> str:
    """The memo text within ``max_tokens``: the least needed lines are let go first (see the
    module docstring); "" when not even the header and one line fit."""
    if not lines:
        return ""
    costs = [count_tokens(line.render()) + 1 for line in lines]
    budget = max_tokens - count_tokens(HEADER) - 1
    if sum(costs) > budget:
        lines = [_tightened(line) for line in lines]
        costs = [count_tokens(line.render()) + 1 for line in lines]
    holders = _holders(lines)
    order = sorted(
        range(len(lines)), key=lambda i: _need(lines[i], i, len(lines), holders), reverse=True
    )
    kept: set[int] = set()
    used = 0
    for index in order:
        if used + costs[index] <= budget:
            kept.add(index)
            used += costs[index]
    if not kept:
        return ""
    return "\n".join([HEADER, *(lines[i].render() for i in sorted(kept))])


def _holders(lines: Sequence[Line]) -> dict[str, tuple[int, int]]:
    """For each value (by key): how many of ``lines`` hold it, and the index of the newest."""
    holders: dict[str, tuple[int, int]] = {}
    for index, line in enumerate(lines):
        for key in line.keys:
            holders[key] = (holders.get(key, (0, 0))[0] + 1, index)
    return holders


def _need(line: Line, index: int, total: int, holders: dict[str, tuple[int, int]]) -> float:
    """How much later turns are likely to need a line: what it carries first, then who said
    it and how new it is (a preference without a value counts as a strong value; an agent's
    call as a weak one). A line none of whose values is its own -- each is held by a newer
    line too, as the name the conversation keeps coming back to is ("the i18n bug", a
    project path) -- carries only a share of each, and goes before a line with a value of
    its own; the newest line holding a value carries it whole, so the value itself stays."""
    recency = (index + 1) / total
    if line.text.startswith("[called "):
        carried = WEAK
    elif not line.anchors:
        carried = STRONG
    elif any(holders[key][1] == index for key in line.keys):
        carried = line.weight
    else:
        carried = _shared(line, holders)
    return 0.3 * carried + 0.5 * recency + _ROLE_WEIGHT.get(line.role, 0.0)


def _shared(line: Line, holders: dict[str, tuple[int, int]]) -> float:
    """The strength of the line's values, each divided among the lines that hold it."""
    strongest: dict[str, int] = {}
    for anchor in line.anchors:
        key = anchor.casefold()
        strongest[key] = max(strongest.get(key, 0), strength(anchor))
    return sum(value / holders[key][0] for key, value in strongest.items())
