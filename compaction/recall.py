"""Recall: older messages of the active path that match the current user turn, for the
``recalled`` section of a model input (see ``compaction.curator``, "Recall").

When the history does not fit, the memo keeps what it can; recall finds the rest on demand. The
words of the current user turn are looked up in the thread through the full-text index
(``threads.search.thread_term_hits``, one query), older than the current turn. Ranking is by
the rarity of the words a message shares with the turn (the sum of each shared word's
inverse document frequency in the thread): a word found in many of the thread's messages ("what",
"order") tells nothing and is ignored, a word found in a few (a code, a name) decides. Words
found in nearly the same messages count once (a sentence repeated through the conversation
would otherwise outvote the one word that names what the turn asks about). Neither
index ranks so: PostgreSQL's ``ts_rank`` has no document frequency at all, and both would
rank within the whole table, not the thread.

The newest statement of the same thing replaces the older one here as in the memo: a candidate
is passed over when a newer candidate of the user's corrects something (a value with "actually",
"changed", "instead"…) and holds every telling word of the turn the older one holds -- the newer
one, which says all the older did, is recalled in its place. A current turn with a correction's
words still recalls: those words ("new", "now", "wrong", "moved") are in ordinary requests and
complaints as often as in corrections, and the turn itself, last in the input, says the newest
value.

Only messages on the active path are candidates: a message on the read stretch is; an older
one is when it is the only message of the thread at its depth (counted through the (thread,
depth) index by the query that reads the candidates' rows); at a depth with forks, by one bounded
walk up the path. One query when the caller has the turn's text (the word hits and, in the
same statement, the rows of the messages the rare words hit), one more for the text otherwise,
and one more with a fork. The best ``MAX_CANDIDATES`` are returned with their rendered text
and its exact token count, so the curator's arithmetic holds; erased messages are never
candidates (they are not in the index).
"""

import math
import os
import threading
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connection

from compaction.backends import text_caches
from compaction.backends.salience import gives_correction
from compaction.curator import Turn
from compaction.rendering import MessagePayload, recalled_content, sha256_hex
from compaction.selectors import StretchRow
from convmem.db import walk_sql
from convmem.sealed_fields import stored_open
from threads.models import Message, Role, Thread
from threads.search import TermHit, query_terms, term_lookup_fetch, thread_term_hits_sql

MESSAGE_TABLE = Message._meta.db_table
# Words of the user turn looked up (see ``_specific``).
MAX_TERMS = 10
# Hits read per word; a word with more is common in the thread and ignored.
PER_TERM = 24
# A word found in more than this share of the thread's older messages is ignored too.
COMMON_SHARE = 0.2
MAX_CANDIDATES = 12
# Words whose hit sets overlap this much (Jaccard) are one piece of evidence (see ``_ranked``).
SAME_EVIDENCE = 0.6
# Threads whose common words a process remembers (see ``_CommonWords``).
COMMON_WORDS_THREADS = 2048
# How far up the path a fork check may walk (rows); forked candidates beyond are skipped.
MAX_FORK_WALK = 2000

# ``(text, sha256, encoding) -> tokens``: the context service's per-process count cache.
TokenCounter = Callable[[str, str, str], int]


@dataclass(frozen=True)
class Recalled:
    """A candidate for the recalled section: the curator's view, and what it renders as."""

    turn: Turn
    public_id: str
    role: str
    payload: MessagePayload


class _CommonWords:
    """The words each thread was found to say often, per process: a lookup found ``PER_TERM``
    + 1 messages or more holding the word below a turn. Below a later turn of the thread (one
    as deep or deeper, and newer) the word can only be commoner, and a common word is ignored
    (``_ranked``, ``_corrected_later``), so it is not looked up again: the recalled section is
    the same, without the lookup's costliest part. A word's lookup reads the index's every
    entry of the word in the thread (a GIN bitmap, or an FTS5 list, cannot stop at ``LIMIT``),
    so the words of every other sentence ("the", "order", "hello") cost what the thread has
    grown to, each turn. Bounded (the threads asked least recently go first); conversation
    words, so dropped with the text caches (after an erasure, and on their timer)."""

    def __init__(self, threads: int) -> None:
        self._threads = threads
        self._by_thread: OrderedDict[int, dict[str, tuple[int, int]]] = OrderedDict()
        self._lock = threading.Lock()
        # A forked child's lock is its own (see ``text_caches._timer_lock_renew``).
        os.register_at_fork(after_in_child=self._lock_renew)
        text_caches.register(clear=self.clear, size=self.size)

    def _lock_renew(self) -> None:
        self._lock = threading.Lock()

    def uncommon(
        self, thread_id: int, terms: Sequence[str], *, below_depth: int, below_id: int
    ) -> list[str]:
        """``terms`` less those known common in the thread below this turn or an older one."""
        with self._lock:
            known = self._by_thread.get(thread_id, {})
            if known:
                self._by_thread.move_to_end(thread_id)
        return [
            term
            for term in terms
            if not (term in known and known[term][0] <= below_depth and known[term][1] <= below_id)
        ]

    def learn(
        self, thread_id: int, hits: Iterable[TermHit], *, below_depth: int, below_id: int
    ) -> None:
        """Remember the words with ``PER_TERM`` + 1 hits or more below this turn."""
        counts: dict[str, int] = defaultdict(int)
        for hit in hits:
            counts[hit.term] += 1
        common = [term for term, count in counts.items() if count > PER_TERM]
        if not common:
            return
        text_caches.remembering()
        with self._lock:
            known = self._by_thread.setdefault(thread_id, {})
            self._by_thread.move_to_end(thread_id)
            for term in common:
                if term not in known or known[term] > (below_depth, below_id):
                    known[term] = (below_depth, below_id)
            while len(self._by_thread) > self._threads:
                self._by_thread.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._by_thread.clear()

    def size(self) -> int:
        with self._lock:
            return sum(len(words) for words in self._by_thread.values())


_COMMON_WORDS = _CommonWords(COMMON_WORDS_THREADS)


def recall_candidates(
    *,
    thread: Thread,
    rows: Sequence[StretchRow],
    max_tokens: int,
    encoding: str,
    count: TokenCounter,
    texts: Mapping[int, str] | None = None,
) -> list[Recalled]:
    """The best candidates for recall on the path ending with ``rows`` (the context read,
    root → leaf), best first; see the module docstring. ``count(text, digest, encoding)``
    counts tokens (the context service's per-process cache). ``texts``: contents the caller
    already read, by message id (the current user turn's is read here otherwise)."""
    query = _current_user_turn(rows)
    if query is None:
        return []
    below_depth = query.depth
    text = (texts or {}).get(query.id)
    text = _text_of(query.id) if text is None else text
    terms = _specific(query_terms(text))
    if not terms or below_depth <= 1:
        return []
    asked = _COMMON_WORDS.uncommon(thread.pk, terms, below_depth=below_depth, below_id=query.id)
    if not asked:
        return []
    hits, rows_hit = _hits_and_rows(thread, asked, query, max_tokens)
    _COMMON_WORDS.learn(thread.pk, hits, below_depth=below_depth, below_id=query.id)
    ranked = [message_id for message_id, _ in _ranked(hits, older=below_depth - 1)]
    found = {pk: rows_hit[pk] for pk in ranked[: MAX_CANDIDATES * 2] if pk in rows_hit}
    on_path = _on_path(thread, rows, found)
    found = {pk: found[pk] for pk in on_path}
    corrected = _corrected_later(found, hits)
    chosen = [
        message_id for message_id in ranked if message_id in found and message_id not in corrected
    ]
    return _rendered(chosen[:MAX_CANDIDATES], found, encoding, count)


def _corrected_later(found: Mapping[int, "_Candidate"], hits: Iterable) -> set[int]:
    """The candidates that a newer candidate of the user's corrects (``gives_correction``)
    while it holds every word of the turn they hold: the newest statement of the same thing
    replaces the older one in the recalled section as in the memo."""
    by_term: dict[str, set[int]] = defaultdict(set)
    for hit in hits:
        by_term[hit.term].add(hit.message_id)
    words: dict[int, set[str]] = defaultdict(set)
    for term, ids in by_term.items():
        if len(ids) <= PER_TERM:  # a word common in the thread tells nothing (see ``_ranked``)
            for message_id in ids:
                words[message_id].add(term)
    # Whether a user's candidate corrects is asked only of one that holds every word of an
    # older candidate (the cheap test): no other can pass anything over, and finding a
    # statement's anchors is recall's costliest step.
    correcting = [
        (candidate.depth, words[pk])
        for pk, candidate in found.items()
        if candidate.role == Role.USER
        and _holds_an_older(candidate.depth, words[pk], found, words)
        and gives_correction(candidate.payload.content or "")
    ]
    return {
        pk
        for pk, candidate in found.items()
        if any(depth > candidate.depth and words[pk] <= said for depth, said in correcting)
    }


def _holds_an_older(
    depth: int, said: set[str], found: Mapping[int, "_Candidate"], words: Mapping[int, set[str]]
) -> bool:
    """Whether a candidate older than ``depth`` holds no word of the turn outside ``said``."""
    return any(other.depth < depth and words[pk] <= said for pk, other in found.items())


def _current_user_turn(rows: Sequence[StretchRow]) -> StretchRow | None:
    return next((row for row in reversed(rows) if row.role == Role.USER), None)


def _specific(terms: list[str]) -> list[str]:
    """The ``MAX_TERMS`` words the lookup asks about: words with a digit (ids, codes, amounts,
    dates) first, then the others in the order the turn says them (its question usually comes
    with its first words; a long word is no likelier to be specific than a short one: "teacher"
    singles out a message where "keyboard" in a repeated aside does not); one- and two-letter
    words never (in alphabetic scripts they are function words). A stable order, so the same
    turn always asks the same question."""
    useful = [term for term in terms if len(term) > 2 or any(c.isdigit() for c in term)]
    ranked = sorted(useful, key=lambda term: not any(c.isdigit() for c in term))
    return ranked[:MAX_TERMS]


def _text_of(message_id: int) -> str:
    public_id, content = (
        Message.objects.filter(pk=message_id).values_list("public_id", "content").get()
    )
    return stored_open(Message, "content", public_id, content)


def _ranked(hits: Iterable, *, older: int) -> list[tuple[int, float]]:
    """(message id, score) best first, ties to the newer message. Each piece of evidence
    counts once: words found in (nearly) the same messages — the words of a sentence said over
    and over, a name and its surname — are one piece (``_evidence``), weighted by its rarity."""
    by_term: dict[str, list[int]] = defaultdict(list)
    for hit in hits:
        by_term[hit.term].append(hit.message_id)
    specific = [
        frozenset(ids)
        for ids in by_term.values()
        if len(ids) <= PER_TERM and len(ids) <= max(1.0, COMMON_SHARE * older)
    ]
    scores: dict[int, float] = defaultdict(float)
    for ids in _evidence(specific):
        weight = math.log(1 + older / len(ids))
        for message_id in ids:
            scores[message_id] += weight
    return sorted(scores.items(), key=lambda item: (-item[1], -item[0]))


def _evidence(hit_sets: Iterable[frozenset[int]]) -> list[frozenset[int]]:
    """Hit sets merged when they overlap by ``SAME_EVIDENCE`` or more (Jaccard), smallest
    first, so a rare word is not swallowed by a commoner one it only touches."""
    merged: list[frozenset[int]] = []
    for ids in sorted(hit_sets, key=len):
        for index, group in enumerate(merged):
            if len(ids & group) >= SAME_EVIDENCE * len(ids | group):
                merged[index] = group | ids
                break
        else:
            merged.append(ids)
    return merged


@dataclass(frozen=True)
class _Candidate:
    public_id: str
    role: str
    payload: MessagePayload
    depth: int
    at_depth: int  # messages of the thread at this depth (1: it lies on every path there)


# The words' hits (``threads.search.thread_term_hits_sql``, as a CTE) and, in the same
# statement, the rows of the messages its rare words hit (``PER_TERM`` hits or fewer: a superset
# of what ``_ranked`` can rank) that could fit the section, with how many messages of the
# thread share their depth (through the (thread, depth) index). A hit row has its term; a
# message row has none.
_HITS_AND_ROWS_SQL = f"""
WITH hits(term, id, depth) AS ({{hits}})
SELECT term, id, depth, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM hits
UNION ALL
SELECT NULL, m.id, m.depth, m.public_id, m.role, m.content, m.content_parts, m.tool_calls,
    m.tool_call_id, (SELECT COUNT(*) FROM {MESSAGE_TABLE} s
                     WHERE s.thread_id = m.thread_id AND s.depth = m.depth)
FROM {MESSAGE_TABLE} m
WHERE m.id IN (SELECT id FROM hits WHERE term IN (
    SELECT term FROM hits GROUP BY term HAVING COUNT(*) <= %s))
AND m.token_count <= %s
"""


def _hits_and_rows(
    thread: Thread, terms: list[str], query: StretchRow, max_tokens: int
) -> tuple[list[TermHit], dict[int, "_Candidate"]]:
    """The hits of ``terms`` older than ``query`` (up to ``PER_TERM`` + 1 a word), and the
    messages the rare ones hit that could fit the section, by id: one round trip, where the
    hits and then the candidates the ranking picked among them were two."""
    hits_sql, params = thread_term_hits_sql(
        thread_id=thread.pk,
        terms=terms,
        # The path's messages are older than its current turn (a parent precedes its child).
        below_id=query.id,
        below_depth=query.depth,
        per_term=PER_TERM + 1,
        # Sealed messages hold the words' hashes under the subject's key.
        key_id=thread.data_key_id,
    )
    sql = _HITS_AND_ROWS_SQL.format(hits=hits_sql)
    rows = term_lookup_fetch(sql, [*params, PER_TERM, max_tokens])
    hits = [TermHit(term, id_, depth) for term, id_, depth, *_ in rows if term is not None]
    return hits, _candidates([row[1:] for row in rows if row[0] is None])


def _candidates(rows: Iterable[Sequence[Any]]) -> dict[int, "_Candidate"]:
    """The candidates of the message rows of ``_HITS_AND_ROWS_SQL``, by id."""
    parts_field, calls_field = (Message._meta.get_field(name) for name in _JSON_FIELDS)
    return {
        pk: _Candidate(
            public_id,
            role,
            MessagePayload(
                stored_open(Message, "content", public_id, content),
                stored_open(
                    Message,
                    "content_parts",
                    public_id,
                    parts_field.from_db_value(parts, None, connection),
                ),
                stored_open(
                    Message,
                    "tool_calls",
                    public_id,
                    calls_field.from_db_value(calls, None, connection),
                ),
                call_id,
            ),
            depth,
            at_depth,
        )
        for pk, depth, public_id, role, content, parts, calls, call_id, at_depth in rows
    }


_JSON_FIELDS = ("content_parts", "tool_calls")


_WALK_SQL = f"""
WITH RECURSIVE up(id, parent_id, depth, n) AS (
    SELECT id, parent_id, depth, 1 FROM {MESSAGE_TABLE} WHERE id = %s
    UNION ALL
    SELECT m.id, m.parent_id, m.depth, up.n + 1 FROM up {{step}}
    WHERE up.depth > %s AND up.n < %s
)
SELECT id FROM up
"""


def _on_path(thread: Thread, rows: Sequence[StretchRow], found: dict[int, _Candidate]) -> set[int]:
    """Which candidates lie on the path ending with ``rows``."""
    read = {row.id for row in rows}
    top_depth = rows[0].depth
    on_path = {message_id for message_id in found if message_id in read}
    forked: dict[int, int] = {}
    for message_id, candidate in found.items():
        if message_id in read or candidate.depth >= top_depth:
            continue  # on the read stretch, or at a depth it covers yet not on it
        if candidate.at_depth == 1:
            on_path.add(message_id)
        else:
            forked[message_id] = candidate.depth
    if forked:
        with connection.cursor() as cursor:
            sql = walk_sql(_WALK_SQL, table=MESSAGE_TABLE, walk="up")
            cursor.execute(sql, [rows[0].id, min(forked.values()), MAX_FORK_WALK])
            walked = {row[0] for row in cursor.fetchall()}
        on_path |= forked.keys() & walked
    return on_path


def _rendered(
    chosen: list[int], found: dict[int, _Candidate], encoding: str, count: TokenCounter
) -> list[Recalled]:
    recalled = []
    for message_id in chosen:
        candidate = found[message_id]
        text = recalled_content(
            message_id=candidate.public_id, role=candidate.role, payload=candidate.payload
        )
        tokens = count(text, sha256_hex(text), encoding)
        turn = Turn(message_id, candidate.role, tokens)
        recalled.append(Recalled(turn, candidate.public_id, candidate.role, candidate.payload))
    return recalled
