"""Full-text search over message content: one index, read by the search API, the admin's message
search and context recall.

What is indexed: a message's ``content`` (for a message sent as content parts, its text parts)
and the name and arguments of each tool call it makes; a tool result's output is its content.
Erased messages are not in the index, and the hidden root never matches (it has no content).

- **PostgreSQL**: a GIN index on ``to_tsvector('simple', …)`` of that text plus one lexeme
  naming the thread (``~<thread id>``, which no query text can spell: ``SEARCH_DOCUMENT``),
  partial on ``erased_at IS NULL``: a lookup within one thread asks for its words *and* the
  thread's lexeme, so the index alone answers it, whatever the planner's statistics say (with
  the thread as a column, the planner preferred a (thread, …) btree and computed the document
  of every message of the thread, on every turn). The database keeps it in
  step with every INSERT and UPDATE, in the writing transaction: a tombstone (which sets
  ``erased_at``) takes the message out of the index when the erasure commits. The ``simple``
  configuration neither stems nor drops stop words, so ids, codes and text in any language
  match as written (case-insensitively).
- **SQLite** (the embedded default): an FTS5 table ``threads_message_fts`` (``unicode61``
  tokenizer, diacritics folded) with two columns, ``body`` (the text) and ``thread`` (one
  token, ``t<thread id>``: a lookup within one thread is a MATCH on both columns, and FTS5
  intersects the two lists instead of reading every thread's hits), filled by triggers on the
  message table, so every write — service, bulk ``update()``, erasure — keeps it in step in the
  same transaction. Django's SQLite schema editor rebuilds a table for some ``ALTER``s, which
  drops its triggers: ``search_index_ensure`` (run after every ``migrate``) creates any that
  are missing.

Queries: every word of the query must occur (AND), case-insensitively, on both backends; on
SQLite only in ``body`` (a word of the query never matches the thread token).
Snippets come back HTML-escaped with the matched words in ``<mark>…</mark>``.
"""

import html
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import BooleanField, Q, QuerySet, TextField
from django.db.models.expressions import RawSQL

from convmem.models import Tenant
from threads.models import Message, Role, Thread

MESSAGE_TABLE = Message._meta.db_table
FTS_TABLE = "threads_message_fts"
PG_INDEX = "message_search_document_idx"
THREAD_LEXEME_PREFIX = "~"
PG_CONFIG = "simple"
# At most this many words of a query are used (a pasted page is not a query).
MAX_QUERY_TERMS = 32
_WORD = re.compile(r"\w+", re.UNICODE)
# Marks around matched words inside snippets, turned into <mark> after escaping the text.
_START, _STOP = "\x02", "\x03"


def _pg_document(table: str = "") -> str:
    prefix = f'"{table}".' if table else ""
    return (
        # Angle brackets become spaces: PostgreSQL's parser reads `<b>word</b>`-like text as
        # tags and leaves the words inside out of the document (pasted HTML, code).
        f"(to_tsvector('{PG_CONFIG}'::regconfig, translate({prefix}content, '<>', '  ')) || "
        f"jsonb_to_tsvector('{PG_CONFIG}'::regconfig, "
        f"COALESCE(jsonb_path_query_array({prefix}tool_calls, '$[*].function'), '[]'::jsonb), "
        """'["string"]') || """
        # The thread's lexeme, which no query text can spell (the parser drops the `~`).
        f"array_to_tsvector(ARRAY['{THREAD_LEXEME_PREFIX}' || {prefix}thread_id::text]))"
    )


def _thread_lexeme(thread_id: int) -> str:
    """A tsquery matching the documents of one thread (see ``_pg_document``)."""
    return f"'{THREAD_LEXEME_PREFIX}{int(thread_id)}'"


# The indexed expression; queries must spell it the same way for the planner to use the index.
SEARCH_DOCUMENT = _pg_document()

_SQLITE_BODY = """new.content || ' ' || COALESCE((
    SELECT group_concat(
        COALESCE(json_extract(value, '$.function.name'), '') || ' ' ||
        COALESCE(json_extract(value, '$.function.arguments'), ''), ' ')
    FROM json_each(new.tool_calls)), '')"""

SQLITE_SCHEMA = [
    f"""CREATE VIRTUAL TABLE IF NOT EXISTS {FTS_TABLE} USING fts5(
        body, thread, tokenize = 'unicode61 remove_diacritics 2')""",
    f"""CREATE TRIGGER IF NOT EXISTS {FTS_TABLE}_insert AFTER INSERT ON {MESSAGE_TABLE}
    WHEN new.erased_at IS NULL AND new.role <> 'root'
    BEGIN
        INSERT INTO {FTS_TABLE}(rowid, body, thread)
            VALUES (new.id, {_SQLITE_BODY}, 't' || new.thread_id);
    END""",
    f"""CREATE TRIGGER IF NOT EXISTS {FTS_TABLE}_update
    AFTER UPDATE OF content, tool_calls, erased_at ON {MESSAGE_TABLE}
    BEGIN
        DELETE FROM {FTS_TABLE} WHERE rowid = old.id;
        INSERT INTO {FTS_TABLE}(rowid, body, thread)
            SELECT new.id, {_SQLITE_BODY}, 't' || new.thread_id
            WHERE new.erased_at IS NULL AND new.role <> 'root';
    END""",
    f"""CREATE TRIGGER IF NOT EXISTS {FTS_TABLE}_delete AFTER DELETE ON {MESSAGE_TABLE}
    BEGIN
        DELETE FROM {FTS_TABLE} WHERE rowid = old.id;
    END""",
]
SQLITE_TRIGGERS = [f"{FTS_TABLE}_insert", f"{FTS_TABLE}_update", f"{FTS_TABLE}_delete"]
SQLITE_BACKFILL = f"""
INSERT INTO {FTS_TABLE}(rowid, body, thread)
SELECT id, {_SQLITE_BODY.replace("new.", "")}, 't' || thread_id FROM {MESSAGE_TABLE}
WHERE erased_at IS NULL AND role <> 'root'
"""

PG_SCHEMA = [
    f"CREATE INDEX IF NOT EXISTS {PG_INDEX} ON {MESSAGE_TABLE} "
    f"USING gin (({SEARCH_DOCUMENT})) WHERE erased_at IS NULL",
]


def search_index_ensure(db: BaseDatabaseWrapper) -> None:
    """Create the index (and, on SQLite, its triggers) where missing. Idempotent; run by the
    migration that introduces the index and after every ``migrate``. A new FTS5 table is filled
    from the messages that exist."""
    if db.vendor == "postgresql":
        with db.cursor() as cursor:
            for statement in PG_SCHEMA:
                cursor.execute(statement)
    elif db.vendor == "sqlite":
        with db.cursor() as cursor:
            cursor.execute("SELECT 1 FROM sqlite_master WHERE name = %s", [FTS_TABLE])
            new = cursor.fetchone() is None
            for statement in SQLITE_SCHEMA:
                cursor.execute(statement)
            if new:
                cursor.execute(SQLITE_BACKFILL)


def search_index_drop(db: BaseDatabaseWrapper) -> None:
    with db.cursor() as cursor:
        if db.vendor == "postgresql":
            cursor.execute(f"DROP INDEX IF EXISTS {PG_INDEX}")
        elif db.vendor == "sqlite":
            for trigger in SQLITE_TRIGGERS:
                cursor.execute(f"DROP TRIGGER IF EXISTS {trigger}")
            cursor.execute(f"DROP TABLE IF EXISTS {FTS_TABLE}")


def search_index_compact(db: BaseDatabaseWrapper) -> bool:
    """On SQLite, merge the FTS5 index into one segment: a deleted row's words stay in the
    older segments (masked) until a merge, so a physical scrub compacts the index before the
    file is rewritten. Returns whether there was anything to do (PostgreSQL: ``VACUUM FULL``
    of the message table rebuilds the GIN index)."""
    if db.vendor != "sqlite":
        return False
    with db.cursor() as cursor:
        cursor.execute(f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES ('optimize')")
    return True


def query_terms(text: str, limit: int = MAX_QUERY_TERMS) -> list[str]:
    """The distinct words of ``text``, lower-cased, in order of first appearance."""
    seen: dict[str, None] = {}
    for word in _WORD.findall(text.lower()):
        seen.setdefault(word, None)
        if len(seen) == limit:
            break
    return list(seen)


def _fts_match(terms: Sequence[str], thread_id: int | None = None) -> str:
    """An FTS5 query requiring every term in ``body`` (each quoted, so no word is read as an
    operator), and, given ``thread_id``, that thread's token."""
    words = " ".join('"' + term.replace('"', '""') + '"' for term in terms)
    match = f"body : ({words})"
    return match if thread_id is None else f'thread : "t{thread_id}" AND {match}'


def _pg_query(terms: Sequence[str]) -> str:
    return " ".join(terms)


def matches(terms: Sequence[str]) -> Q | RawSQL:
    """A filter for ``Message`` querysets: the messages holding every one of ``terms``, through
    the index. The caller also filters ``erased_at__isnull=True`` (on PostgreSQL the index is
    partial on it; on SQLite erased messages are not in the index at all)."""
    if connection.vendor == "postgresql":
        return RawSQL(
            f"{_pg_document(MESSAGE_TABLE)} @@ plainto_tsquery('{PG_CONFIG}', %s)",
            [_pg_query(terms)],
            output_field=BooleanField(),
        )
    return Q(
        pk__in=RawSQL(
            f"SELECT rowid FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH %s", [_fts_match(terms)]
        )
    )


def snippet_of(terms: Sequence[str]) -> RawSQL:
    """An annotation: a short passage of each matching message with the terms marked (between
    ``_START`` and ``_STOP``; see ``snippet_html``)."""
    if connection.vendor == "postgresql":
        options = f"StartSel={_START}, StopSel={_STOP}, MaxWords=24, MinWords=8, MaxFragments=2"
        text = (
            f"\"{MESSAGE_TABLE}\".content || COALESCE(' ' || "
            f"jsonb_path_query_array(\"{MESSAGE_TABLE}\".tool_calls, '$[*].function')::text, '')"
        )
        return RawSQL(
            f"ts_headline('{PG_CONFIG}', {text}, plainto_tsquery('{PG_CONFIG}', %s), %s)",
            [_pg_query(terms), options],
            output_field=TextField(),
        )
    return RawSQL(
        f"""(SELECT snippet({FTS_TABLE}, 0, %s, %s, '…', 24) FROM {FTS_TABLE}
        WHERE {FTS_TABLE} MATCH %s AND rowid = "{MESSAGE_TABLE}".id)""",
        [_START, _STOP, _fts_match(terms)],
        output_field=TextField(),
    )


def snippet_html(raw: str | None) -> str:
    """A snippet as safe HTML: the text escaped, the matched words in ``<mark>``."""
    escaped = html.escape(raw or "")
    return escaped.replace(_START, "<mark>").replace(_STOP, "</mark>")


@dataclass(frozen=True)
class TermHit:
    """A message of a thread holding one query term."""

    term: str
    message_id: int
    depth: int


def thread_term_hits(
    *, thread_id: int, terms: Sequence[str], below_id: int, below_depth: int, per_term: int
) -> list[TermHit]:
    """For each term, up to ``per_term`` live messages of the thread older than ``below_id``
    and above ``below_depth`` that hold it, through the index, reading the thread's own entries
    only (see the module docstring). One query. In no set order: a term with ``per_term``
    hits is common in the thread and the caller ignores it, so which hits come back then does
    not matter, and a term with fewer comes back whole. That lets FTS5 read its lists forwards
    (streamed; reading one backwards decodes it whole) and PostgreSQL skip a sort."""
    if not terms:
        return []
    sql, params = thread_term_hits_sql(
        thread_id=thread_id,
        terms=terms,
        below_id=below_id,
        below_depth=below_depth,
        per_term=per_term,
    )
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql" and connection.in_atomic_block:
            # The document is costly to compute (a parse of the message) but the planner
            # prices it as a few operators: on a table of a few thousand rows it would scan
            # them all and compute every document, for each word. Only the index is worth it,
            # so sequential scans are off for the rest of the transaction (context assembly's:
            # what follows reads by primary key and writes), set in the same round trip.
            cursor.execute(f"SET LOCAL enable_seqscan = off; {sql}", params)
            cursor.nextset()
        else:
            cursor.execute(sql, params)
        return [TermHit(term, id_, depth) for term, id_, depth in cursor.fetchall()]


def thread_term_hits_sql(
    *, thread_id: int, terms: Sequence[str], below_id: int, below_depth: int, per_term: int
) -> tuple[str, list[Any]]:
    """The query of ``thread_term_hits`` and its parameters."""
    if connection.vendor == "postgresql":
        one = (
            # The thread is a lexeme of the document, so the GIN index alone finds the term's
            # messages in this thread. ``+ 0``: the thread, id and depth are checked on the rows
            # it finds, never used to pick an index — through a (thread, …) btree the planner
            # would compute the document of every message of the thread (it cannot tell what
            # that costs, with statistics or without).
            f"(SELECT %s, id, depth FROM {MESSAGE_TABLE} WHERE thread_id + 0 = %s "
            f"AND id + 0 < %s AND depth + 0 < %s AND erased_at IS NULL "
            f"AND {SEARCH_DOCUMENT} @@ (plainto_tsquery('{PG_CONFIG}', %s) && %s::tsquery) "
            "LIMIT %s)"
        )
        params = [
            [term, thread_id, below_id, below_depth, term, _thread_lexeme(thread_id), per_term]
            for term in terms
        ]
    else:
        one = (
            f"SELECT * FROM (SELECT %s, m.id, m.depth FROM {FTS_TABLE} f "
            f"JOIN {MESSAGE_TABLE} m ON m.id = f.rowid WHERE {FTS_TABLE} MATCH %s "
            "AND f.rowid < %s AND m.depth < %s ORDER BY f.rowid LIMIT %s)"
        )
        params = [
            [term, _fts_match([term], thread_id), below_id, below_depth, per_term] for term in terms
        ]
    sql = " UNION ALL ".join([one] * len(terms))
    return sql, [value for group in params for value in group]


def message_search(queryset: QuerySet[Message], text: str) -> tuple[QuerySet[Message], list[str]]:
    """``queryset`` narrowed to live messages holding every word of ``text`` (none if it has
    no words), annotated with ``search_snippet``; and the words used."""
    terms = query_terms(text)
    if not terms:
        return queryset.none(), terms
    found = queryset.filter(matches(terms), erased_at__isnull=True)
    return found.annotate(search_snippet=snippet_of(terms)), terms


@dataclass(frozen=True)
class SearchHit:
    message_id: str
    thread_id: str
    user_ref: str
    role: str
    created_at: Any
    snippet: str


@dataclass(frozen=True)
class SearchPage:
    hits: list[SearchHit]
    has_more: bool


def tenant_message_search(
    *,
    tenant: Tenant,
    text: str,
    limit: int,
    thread: Thread | None = None,
    user_ref: str | None = None,
    before_id: int | None = None,
) -> SearchPage:
    """One page of the tenant's live messages holding every word of ``text``, newest first,
    optionally within one thread or one ``user_ref``'s threads, and older than ``before_id``
    (the cursor). Deleted threads, erased messages and other tenants' messages never match.
    One query on PostgreSQL, two on SQLite."""
    terms = query_terms(text)
    if not terms:
        return SearchPage(hits=[], has_more=False)
    if connection.vendor == "sqlite":
        rows = _sqlite_page(tenant, terms, limit + 1, thread, user_ref, before_id)
    else:
        messages = Message.objects.filter(
            thread__tenant=tenant, thread__deleted_at__isnull=True
        ).exclude(role=Role.ROOT)
        if thread is not None:
            messages = messages.filter(thread=thread)
        if user_ref is not None:
            messages = messages.filter(thread__user_ref=user_ref)
        if before_id is not None:
            messages = messages.filter(pk__lt=before_id)
        found, _ = message_search(messages, text)
        rows = list(found.order_by("-pk").values_list(*_HIT_FIELDS, "search_snippet")[: limit + 1])
    hits = [
        SearchHit(message_id, thread_id, ref, role, created_at, snippet_html(snippet))
        for message_id, thread_id, ref, role, created_at, snippet in rows[:limit]
    ]
    return SearchPage(hits=hits, has_more=len(rows) > limit)


_HIT_FIELDS = ("public_id", "thread__public_id", "thread__user_ref", "role", "created_at")


def _sqlite_page(
    tenant: Tenant,
    terms: Sequence[str],
    size: int,
    thread: Thread | None,
    user_ref: str | None,
    before_id: int | None,
) -> list[tuple[Any, ...]]:
    """The page driven from the FTS5 table in descending rowid order, which FTS5 serves
    directly: the scan stops after ``size`` hits instead of collecting every match first (a
    word in every message costs a page, not the table). Then the rows' fields, by pk."""
    where = ["t.tenant_id = %s", "t.deleted_at IS NULL", "m.erased_at IS NULL"]
    match = _fts_match(terms, thread.pk if thread else None)
    params: list[Any] = [_START, _STOP, match, tenant.pk]
    for clause, value in (
        ("m.thread_id = %s", thread.pk if thread else None),
        ("t.user_ref = %s", user_ref),
        ("f.rowid < %s", before_id),
    ):
        if value is not None:
            where.append(clause)
            params.append(value)
    sql = f"""
        SELECT f.rowid, snippet({FTS_TABLE}, 0, %s, %s, '…', 24)
        FROM {FTS_TABLE} f
        JOIN {MESSAGE_TABLE} m ON m.id = f.rowid
        JOIN {Thread._meta.db_table} t ON t.id = m.thread_id
        WHERE {FTS_TABLE} MATCH %s AND {" AND ".join(where)}
        ORDER BY f.rowid DESC LIMIT %s"""
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, size])
        found = cursor.fetchall()
    fields = {
        row[0]: row[1:]
        for row in Message.objects.filter(pk__in=[pk for pk, _ in found]).values_list(
            "pk", *_HIT_FIELDS
        )
    }
    return [(*fields[pk], snippet) for pk, snippet in found]


def search_cursor_position(*, tenant: Tenant, public_id: str) -> int | None:
    """The message a search cursor names (one of the tenant's), as the pk the next page starts
    below; None if it is not one."""
    return (
        Message.objects.filter(thread__tenant=tenant, public_id=public_id)
        .values_list("pk", flat=True)
        .first()
    )
