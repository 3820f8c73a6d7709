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

A sealed message (``CONVMEM_ENCRYPT_CONTENT``) has ciphertext for content: it is indexed by its
blind document instead (``Message.search_terms``: the keyed hashes of its words under the
subject's key, ``convmem.blind_index``) — on PostgreSQL the document's ``CASE`` reads it, on
SQLite the trigger puts it in the ``blind`` column. A query asks for its words in clear or,
under each key searched (``search_key_ids``), for that key's token and the words' hashes.

Queries: every word of the query must occur (AND), case-insensitively, on both backends; on
SQLite only in ``body`` or ``blind`` (a word of the query never matches the thread token).
Snippets come back HTML-escaped with the matched words in ``<mark>…</mark>``.
"""

import html
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connection, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import BooleanField, Q, QuerySet, TextField
from django.db.models.expressions import RawSQL

from convmem import blind_index, crypto
from convmem.db import statements_pipelined
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
        # A sealed message (``search_terms`` set) is indexed by its blind document, the words'
        # keyed hashes (``convmem.blind_index``): its content is ciphertext.
        f"(CASE WHEN {prefix}search_terms = '' THEN "
        # Angle brackets become spaces: PostgreSQL's parser reads `<b>word</b>`-like text as
        # tags and leaves the words inside out of the document (pasted HTML, code).
        f"to_tsvector('{PG_CONFIG}'::regconfig, translate({prefix}content, '<>', '  ')) || "
        f"jsonb_to_tsvector('{PG_CONFIG}'::regconfig, "
        f"COALESCE(jsonb_path_query_array({prefix}tool_calls, '$[*].function'), '[]'::jsonb), "
        """'["string"]') """
        f"ELSE array_to_tsvector(string_to_array({prefix}search_terms, ' ')) END || "
        # The thread's lexeme, which no query text can spell (the parser drops the `~`).
        f"array_to_tsvector(ARRAY['{THREAD_LEXEME_PREFIX}' || {prefix}thread_id::text]))"
    )


def _thread_lexeme(thread_id: int) -> str:
    """A tsquery matching the documents of one thread (see ``_pg_document``)."""
    return f"'{THREAD_LEXEME_PREFIX}{int(thread_id)}'"


# The indexed expression; queries must spell it the same way for the planner to use the index.
SEARCH_DOCUMENT = _pg_document()

_SQLITE_TEXT = """{row}content || ' ' || COALESCE((
    SELECT group_concat(
        COALESCE(json_extract(value, '$.function.name'), '') || ' ' ||
        COALESCE(json_extract(value, '$.function.arguments'), ''), ' ')
    FROM json_each({row}tool_calls)), '')"""
# A sealed message's body is empty (its content is ciphertext); its blind document goes to
# the ``blind`` column.
_SQLITE_BODY = (
    "CASE WHEN {row}search_terms = '' THEN " + _SQLITE_TEXT + " ELSE '' END, {row}search_terms"
)
_SQLITE_NEW = _SQLITE_BODY.format(row="new.")

SQLITE_SCHEMA = [
    f"""CREATE VIRTUAL TABLE IF NOT EXISTS {FTS_TABLE} USING fts5(
        body, thread, blind, tokenize = 'unicode61 remove_diacritics 2')""",
    f"""CREATE TRIGGER IF NOT EXISTS {FTS_TABLE}_insert AFTER INSERT ON {MESSAGE_TABLE}
    WHEN new.erased_at IS NULL AND new.role <> 'root'
    BEGIN
        INSERT INTO {FTS_TABLE}(rowid, body, blind, thread)
            VALUES (new.id, {_SQLITE_NEW}, 't' || new.thread_id);
    END""",
    f"""CREATE TRIGGER IF NOT EXISTS {FTS_TABLE}_update
    AFTER UPDATE OF content, tool_calls, search_terms, erased_at ON {MESSAGE_TABLE}
    BEGIN
        DELETE FROM {FTS_TABLE} WHERE rowid = old.id;
        INSERT INTO {FTS_TABLE}(rowid, body, blind, thread)
            SELECT new.id, {_SQLITE_NEW}, 't' || new.thread_id
            WHERE new.erased_at IS NULL AND new.role <> 'root';
    END""",
    f"""CREATE TRIGGER IF NOT EXISTS {FTS_TABLE}_delete AFTER DELETE ON {MESSAGE_TABLE}
    BEGIN
        DELETE FROM {FTS_TABLE} WHERE rowid = old.id;
    END""",
]
SQLITE_TRIGGERS = [f"{FTS_TABLE}_insert", f"{FTS_TABLE}_update", f"{FTS_TABLE}_delete"]
SQLITE_BACKFILL = f"""
INSERT INTO {FTS_TABLE}(rowid, body, blind, thread)
SELECT id, {_SQLITE_BODY.format(row="")}, 't' || thread_id FROM {MESSAGE_TABLE}
WHERE erased_at IS NULL AND role <> 'root'
"""

# A pending list of at most 64 kB (``fastupdate`` with PostgreSQL's smallest
# ``gin_pending_list_limit``): an insert adds its entries to one unsorted list, and the insert
# that takes the list past 64 kB merges it into the tree, word by word, each word's new rows at
# once. Without the list (``fastupdate = off``, migration 0014) every insert walked the tree once
# for each of its ~80 words and logged each leaf page it changed: 0.6 ms of a 2.6 ms append.
# With PostgreSQL's default limit (4 MB) every search read ~150 pages of list per word; 64 kB
# is 8 pages, which recall's lookup does not measurably feel (docs/round-trips.md).
PG_STORAGE = "fastupdate = on, gin_pending_list_limit = 64"
PG_SCHEMA = [
    f"CREATE INDEX IF NOT EXISTS {PG_INDEX} ON {MESSAGE_TABLE} "
    f"USING gin (({SEARCH_DOCUMENT})) WITH ({PG_STORAGE}) WHERE erased_at IS NULL",
]


def search_index_ensure(db: BaseDatabaseWrapper) -> None:
    """Create the index (and, on SQLite, its triggers) where missing. Idempotent; run by the
    migration that introduces the index and after every ``migrate``. A new FTS5 table is filled
    from the messages that exist. Before migration ``threads/0013_message_search_terms`` (a
    database migrated from scratch passes the earlier migrations that built the index) there
    is nothing to do: that migration builds it."""
    with db.cursor() as cursor:
        columns = db.introspection.get_table_description(cursor, MESSAGE_TABLE)
    if "search_terms" not in {column.name for column in columns}:
        return
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


Blind = Sequence[Sequence[str]]


def _fts_quoted(terms: Sequence[str]) -> str:
    return " ".join('"' + term.replace('"', '""') + '"' for term in terms)


def _fts_match(terms: Sequence[str], thread_id: int | None = None, blind: Blind = ()) -> str:
    """An FTS5 query requiring every term in ``body`` (each quoted, so no word is read as an
    operator) — or, for each blind query, all its tokens in ``blind`` — and, given
    ``thread_id``, that thread's token."""
    match = f"body : ({_fts_quoted(terms)})"
    if blind:
        either = [match, *(f"blind : ({_fts_quoted(query)})" for query in blind)]
        match = "(" + " OR ".join(either) + ")"
    return match if thread_id is None else f'thread : "t{thread_id}" AND {match}'


def _pg_query(terms: Sequence[str]) -> str:
    return " ".join(terms)


def _pg_blind(blind: Blind) -> str:
    """The blind queries as one tsquery: each query's tokens all (the key token among them),
    any query (tokens are letters, digits and ``~``: nothing to quote)."""
    return " | ".join("(" + " & ".join(f"'{token}'" for token in q) + ")" for q in blind)


def _pg_tsquery(terms: Sequence[str], blind: Blind) -> tuple[str, list[Any]]:
    """SQL for the tsquery of ``terms`` in clear or any of ``blind``, and its parameters."""
    plain = f"plainto_tsquery('{PG_CONFIG}', %s)"
    if not blind:
        return plain, [_pg_query(terms)]
    return f"({plain} || %s::tsquery)", [_pg_query(terms), _pg_blind(blind)]


def blind_for(terms: Sequence[str], key_ids: Sequence[str]) -> list[list[str]]:
    """The blind queries of ``terms`` under each live key of ``key_ids`` (none for keys that
    are destroyed, or when there are none)."""
    key_ids = [key_id for key_id in dict.fromkeys(key_ids) if key_id]
    return blind_index.blind_queries(list(terms), key_ids) if key_ids else []


def matches(terms: Sequence[str], blind: Blind = ()) -> Q | RawSQL:
    """A filter for ``Message`` querysets: the messages holding every one of ``terms``, in
    clear or (sealed messages) as the hashes of one of ``blind``, through the index. The
    caller also filters ``erased_at__isnull=True`` (on PostgreSQL the index is partial on it;
    on SQLite erased messages are not in the index at all)."""
    if connection.vendor == "postgresql":
        tsquery, params = _pg_tsquery(terms, blind)
        return RawSQL(
            f"{_pg_document(MESSAGE_TABLE)} @@ {tsquery}", params, output_field=BooleanField()
        )
    return Q(
        pk__in=RawSQL(
            f"SELECT rowid FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH %s",
            [_fts_match(terms, blind=blind)],
        )
    )


def snippet_of(terms: Sequence[str]) -> RawSQL:
    """An annotation: a short passage of each matching message with the terms marked (between
    ``_START`` and ``_STOP``; see ``snippet_html``); empty for a sealed message, whose text
    only Python can open (``snippets_in_clear``)."""
    if connection.vendor == "postgresql":
        options = f"StartSel={_START}, StopSel={_STOP}, MaxWords=24, MinWords=8, MaxFragments=2"
        text = (
            f"\"{MESSAGE_TABLE}\".content || COALESCE(' ' || "
            f"jsonb_path_query_array(\"{MESSAGE_TABLE}\".tool_calls, '$[*].function')::text, '')"
        )
        return RawSQL(
            f"CASE WHEN \"{MESSAGE_TABLE}\".search_terms = '' THEN "
            f"ts_headline('{PG_CONFIG}', {text}, plainto_tsquery('{PG_CONFIG}', %s), %s) "
            "ELSE '' END",
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


SNIPPET_WORDS = 24


def snippet_in_clear(text: str, terms: Sequence[str]) -> str:
    """A snippet made in Python from a message's text in clear (a sealed message): the stretch
    of ``SNIPPET_WORDS`` words holding most of the terms, the terms marked, "…" where the
    text is cut — as FTS5's ``snippet`` does."""
    wanted = set(blind_index.index_words(" ".join(terms)))
    words = list(_WORD.finditer(text))
    if not words:
        return ""
    hit = [bool(set(blind_index.index_words(w.group())) & wanted) for w in words]
    starts = range(max(1, len(words) - SNIPPET_WORDS + 1))
    first = max(starts, key=lambda i: (sum(hit[i : i + SNIPPET_WORDS]), -i))
    last = min(first + SNIPPET_WORDS, len(words)) - 1
    pieces = ["…" if first > 0 else text[: words[0].start()]]
    for index in range(first, last + 1):
        word = words[index]
        if index > first:
            pieces.append(text[words[index - 1].end() : word.start()])
        pieces.append(f"{_START}{word.group()}{_STOP}" if hit[index] else word.group())
    pieces.append("…" if last < len(words) - 1 else text[words[-1].end() :])
    return "".join(pieces)


def snippets_in_clear(snippets: dict[int, str], terms: Sequence[str]) -> dict[int, str]:
    """``snippets`` (by message pk) with the empty ones — sealed messages' — made in Python
    from the message opened (``convmem.crypto``, through the model): one query, none when no
    snippet is empty."""
    empty = [pk for pk, snippet in snippets.items() if not snippet]
    if not empty:
        return snippets
    opened = Message.objects.filter(pk__in=empty).only("pk", "public_id", "content", "tool_calls")
    return {
        **snippets,
        **{m.pk: snippet_in_clear(m.blind_index_text(), terms) for m in opened},
    }


@dataclass(frozen=True)
class TermHit:
    """A message of a thread holding one query term."""

    term: str
    message_id: int
    depth: int


def thread_term_hits(
    *,
    thread_id: int,
    terms: Sequence[str],
    below_id: int,
    below_depth: int,
    per_term: int,
    key_id: str = "",
) -> list[TermHit]:
    """For each term, up to ``per_term`` live messages of the thread older than ``below_id``
    and above ``below_depth`` that hold it (in clear, or as its hash under ``key_id``, the
    thread's data key, in a sealed message), through the index, reading the thread's own
    entries only (see the module docstring). One query. In no set order: a term with
    ``per_term`` hits is common in the thread and the caller ignores it, so which hits come
    back then does not matter, and a term with fewer comes back whole. That lets FTS5 read its
    lists forwards (streamed; reading one backwards decodes it whole) and PostgreSQL skip a
    sort."""
    if not terms:
        return []
    sql, params = thread_term_hits_sql(
        thread_id=thread_id,
        terms=terms,
        below_id=below_id,
        below_depth=below_depth,
        per_term=per_term,
        key_id=key_id,
    )
    return [TermHit(term, id_, depth) for term, id_, depth in term_lookup_fetch(sql, params)]


def term_lookup_fetch(sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
    """The rows of ``sql``, a query built on ``thread_term_hits_sql`` (that query, or one that
    reads it as a CTE), in one round trip."""
    if connection.vendor != "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchall()
    # The document is costly to compute (a parse of the message) but the planner prices it as
    # a few operators: on a table of a few thousand rows it would scan them all and compute
    # every document, for each word. Only the index is worth it, so sequential scans are off
    # for the rest of the transaction (context assembly's: what follows reads by primary key
    # and writes), set in the same round trip. Pipelined, each statement is bound by the
    # server: the connection prepares the lookup once it has run it often enough
    # (``prepare_threshold``), so it is not planned every turn, and every plan it keeps was
    # made with the setting (there is no run without it).
    with (
        transaction.atomic(savepoint=False),
        connection.cursor() as setting,
        connection.cursor() as cursor,
    ):
        statements_pipelined(
            [(setting, "SET LOCAL enable_seqscan = off", []), (cursor, sql, params)]
        )
        return cursor.fetchall()


# Each term's hits, through the GIN index (one parameterised scan a term). The thread is a
# lexeme of the document, so the index alone finds the term's messages in this thread. ``+ 0``:
# the thread, id and depth are checked on the rows it finds, never used to pick an index —
# through a (thread, …) btree the planner would compute the document of every message of the
# thread (it cannot tell what that costs, with statistics or without). The terms come as an
# array, with their blind queries (sealed messages) or NULL: one copy of the document's
# expression to parse and plan, where a branch per term (a UNION ALL) made planning cost
# twice the run.
_PG_TERM_HITS = f"""
SELECT t.term, m.id, m.depth FROM unnest(%s::text[], %s::text[]) AS t(term, blind)
CROSS JOIN LATERAL (
    SELECT id, depth FROM {MESSAGE_TABLE} WHERE thread_id + 0 = %s AND id + 0 < %s
    AND depth + 0 < %s AND erased_at IS NULL
    AND {SEARCH_DOCUMENT} @@ ((CASE WHEN t.blind IS NULL
        THEN plainto_tsquery('{PG_CONFIG}', t.term)
        ELSE plainto_tsquery('{PG_CONFIG}', t.term) || t.blind::tsquery END) && %s::tsquery)
    LIMIT %s
) m
"""


def thread_term_hits_sql(
    *,
    thread_id: int,
    terms: Sequence[str],
    below_id: int,
    below_depth: int,
    per_term: int,
    key_id: str = "",
) -> tuple[str, list[Any]]:
    """The query of ``thread_term_hits`` and its parameters."""
    blind = {
        term: [query] for term, query in blind_index.blind_query_each(list(terms), key_id).items()
    }
    if connection.vendor == "postgresql":
        blinds = [_pg_blind(blind[term]) if term in blind else None for term in terms]
        params = [list(terms), blinds, thread_id, below_id, below_depth]
        return _PG_TERM_HITS, [*params, _thread_lexeme(thread_id), per_term]
    selects = []
    params: list[Any] = []
    for term in terms:
        selects.append(
            f"SELECT * FROM (SELECT %s, m.id, m.depth FROM {FTS_TABLE} f "
            f"JOIN {MESSAGE_TABLE} m ON m.id = f.rowid WHERE {FTS_TABLE} MATCH %s "
            "AND f.rowid < %s AND m.depth < %s ORDER BY f.rowid LIMIT %s)"
        )
        match = _fts_match([term], thread_id, blind.get(term, ()))
        params += [term, match, below_id, below_depth, per_term]
    return " UNION ALL ".join(selects), params


def message_search(
    queryset: QuerySet[Message], text: str, key_ids: Sequence[str] | None = None
) -> tuple[QuerySet[Message], list[str]]:
    """``queryset`` narrowed to live messages holding every word of ``text`` (none if it has
    no words), annotated with ``search_snippet`` (empty for sealed messages: see
    ``snippets_in_clear``); and the words used. Sealed messages are found under the data keys
    ``key_ids``; None: under every live key (the staff's search across tenants: one hash per
    word per key, see docs/search-and-recall.md)."""
    terms = query_terms(text)
    if not terms:
        return queryset.none(), terms
    blind = blind_for(terms, crypto.live_key_ids() if key_ids is None else key_ids)
    found = queryset.filter(matches(terms, blind), erased_at__isnull=True)
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


def search_key_ids(*, tenant: Tenant, thread: Thread | None, user_ref: str | None) -> list[str]:
    """The data keys a search's words are hashed under, for sealed messages: the thread's; a
    ``user_ref``'s (its subject's live key); or, tenant-wide, every live key of the tenant —
    each thread's messages are matched against their own key's hashes only."""
    if thread is not None:
        return [thread.data_key_id] if thread.data_key_id else []
    if user_ref:
        return crypto.live_key_ids(tenant_id=tenant.pk, subject=user_ref)
    return crypto.live_key_ids(tenant_id=tenant.pk)


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
    One query on PostgreSQL, two on SQLite; with sealed messages among the hits, one more
    (their text, opened for the snippets), and the keys database's on a key's first use."""
    terms = query_terms(text)
    if not terms:
        return SearchPage(hits=[], has_more=False)
    key_ids = search_key_ids(tenant=tenant, thread=thread, user_ref=user_ref)
    if connection.vendor == "sqlite":
        blind = blind_for(terms, key_ids)
        rows = _sqlite_page(tenant, terms, blind, limit + 1, thread, user_ref, before_id)
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
        found, _ = message_search(messages, text, key_ids)
        rows = list(
            found.order_by("-pk").values_list("pk", *_HIT_FIELDS, "search_snippet")[: limit + 1]
        )
    page = rows[:limit]
    snippets = snippets_in_clear({row[0]: row[-1] for row in page}, terms)
    hits = [
        SearchHit(message_id, thread_id, ref, role, created_at, snippet_html(snippets[pk]))
        for pk, message_id, thread_id, ref, role, created_at, _ in page
    ]
    return SearchPage(hits=hits, has_more=len(rows) > limit)


_HIT_FIELDS = ("public_id", "thread__public_id", "thread__user_ref", "role", "created_at")


def _sqlite_page(
    tenant: Tenant,
    terms: Sequence[str],
    blind: Blind,
    size: int,
    thread: Thread | None,
    user_ref: str | None,
    before_id: int | None,
) -> list[tuple[Any, ...]]:
    """The page driven from the FTS5 table in descending rowid order, which FTS5 serves
    directly: the scan stops after ``size`` hits instead of collecting every match first (a
    word in every message costs a page, not the table). Then the rows' fields, by pk."""
    where = ["t.tenant_id = %s", "t.deleted_at IS NULL", "m.erased_at IS NULL"]
    match = _fts_match(terms, thread.pk if thread else None, blind)
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
    return [(pk, *fields[pk], snippet) for pk, snippet in found]


def search_cursor_position(*, tenant: Tenant, public_id: str) -> int | None:
    """The message a search cursor names (one of the tenant's), as the pk the next page starts
    below; None if it is not one."""
    return (
        Message.objects.filter(thread__tenant=tenant, public_id=public_id)
        .values_list("pk", flat=True)
        .first()
    )
