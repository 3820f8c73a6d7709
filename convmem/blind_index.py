"""The blind index: what the full-text index holds for a sealed message, and how a query is
asked of it.

With sealing on, a message's content is ciphertext, so the index cannot read its words. Instead
each sealed message carries a *blind document* (``Message.search_terms``, computed in Python
before the write and inserted with the row): the message's distinct words, normalised, each
replaced by its keyed hash under the subject's search key (``convmem.crypto.search_tokens``),
sorted, after one token naming the key. No order, no repetitions: the document says which
words (as hashes) a message has, not where or how often. A query's words are hashed the same
way under the key of the thread or subject searched, and matched as words; the key token makes
a hash match only documents made under its own key.

Destroying the data key (an erasure of the subject) makes the hashes meaningless: no one can
compute a word's hash any more, so a backup's blind documents cannot be matched against a
dictionary. What they still show is how many distinct words each message has and which
messages share a (hashed) word.

Words: the text lower-cased, diacritics folded (``é`` → ``e``), split into runs of letters,
digits and ``_`` — the same function for documents and queries, so they always agree.
"""

import re
import unicodedata

from convmem import crypto

# Every blind token starts with "~", which no word of a query can spell (the PostgreSQL parser
# drops it; SQLite keeps blind tokens in a column of their own).
KEY_TOKEN_PREFIX = "~k"
WORD_TOKEN_PREFIX = "~h"
_WORD = re.compile(r"\w+", re.UNICODE)


def index_words(text: str) -> list[str]:
    """The distinct words of ``text``, normalised (lower-cased, diacritics folded), in order of
    first appearance."""
    folded = text.lower()
    if not folded.isascii():  # ASCII has nothing to decompose or fold
        decomposed = unicodedata.normalize("NFKD", folded)
        folded = "".join(c for c in decomposed if not unicodedata.combining(c))
    return list(dict.fromkeys(_WORD.findall(folded)))


def key_token(key_id: str) -> str:
    """The token naming the key a blind document was made under (letters and digits only)."""
    return KEY_TOKEN_PREFIX + "".join(c for c in key_id if c.isalnum())


def word_tokens(words: list[str], key_id: str) -> list[str]:
    return [WORD_TOKEN_PREFIX + token for token in crypto.search_tokens(words, key_id=key_id)]


def blind_document(text: str, key_id: str) -> str:
    """The blind document of ``text`` under ``key_id``: the key token, then the sorted hashes
    of its distinct words, space-separated. Raises ``crypto.KeyUnavailable`` for a destroyed
    key."""
    return " ".join([key_token(key_id), *sorted(set(word_tokens(index_words(text), key_id)))])


def blind_query(terms: list[str], key_id: str) -> list[str] | None:
    """The tokens a blind document under ``key_id`` must hold to have every word of ``terms``
    (the key token first); None when the key is destroyed or unknown (nothing under it is
    findable any more) or the terms have no word."""
    words = index_words(" ".join(terms))
    if not words or not key_id:
        return None
    try:
        return [key_token(key_id), *word_tokens(words, key_id)]
    except crypto.KeyUnavailable:
        return None


def blind_query_each(terms: list[str], key_id: str) -> dict[str, list[str]]:
    """``blind_query([term], key_id)`` of each of ``terms`` that has a word, by term, with the
    key loaded once and each distinct word hashed once; {} when the key is destroyed or
    unknown."""
    if not key_id:
        return {}
    words = {term: index_words(term) for term in terms}
    distinct = list(dict.fromkeys(word for term_words in words.values() for word in term_words))
    try:
        tokens = dict(zip(distinct, word_tokens(distinct, key_id), strict=True))
    except crypto.KeyUnavailable:
        return {}
    key = key_token(key_id)
    return {term: [key, *(tokens[w] for w in ws)] for term, ws in words.items() if ws}


def blind_queries(terms: list[str], key_ids: list[str]) -> list[list[str]]:
    """``blind_query`` under each of ``key_ids`` that is live (loaded in one keys-database
    query for those not cached)."""
    live = crypto.search_keys_load(key_ids)
    return [query for key_id in live if (query := blind_query(terms, key_id)) is not None]
