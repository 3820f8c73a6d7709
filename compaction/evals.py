"""Memo faithfulness scores without ground truth: checkable facts, and how many a memo kept.

A memo is judged by the *checkable* facts it carries: numbers, money amounts, dates, times,
identifiers (order and ticket ids, tracking numbers, ids written in several pieces such as
"JD01 5523 5435 2199"), emails, phone numbers, URLs, proper names and quoted strings.
`extract_facts` finds them in any text and normalises them so that "$1,249.00" in a message and
"$1249" in a memo are the same fact. `score_memo_over_range` measures, over the whole range a
memo stands for (read as a stream, in bounded memory), how many of the range's key facts the
memo kept (recall; also for the facts mentioned last, which are the likeliest to still matter),
how many facts the memo states that no original supports (unsupported rate) and how much
smaller it is (compression). `score_memo` does the same for a list of texts in memory.

No summarizer uses this extractor to choose what to keep (the embedded one tells values by
their shape, ``compaction.backends.salience``), so these scores measure a memo rather than echo
its author. They need no ground truth, which is why they are stored with every memo; the
top-level ``memo_eval`` package is the evaluation with ground truth.

The extractor is heuristic and deliberately conservative about names: a capitalised word at the
start of a sentence is only taken as a name when the name continues ("Maria Lopez said"), and a
name found in one text counts as present in another that mentions it anywhere.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from decimal import Decimal
from typing import Any, NamedTuple

from compaction.backends.salience import anchors
from convmem.tokens import count_tokens


class Fact(NamedTuple):
    """One checkable fact: its kind and its normalised value, e.g. ("id", "ORD-12345")."""

    kind: str
    value: str

    def __str__(self) -> str:
        return f"{self.kind}:{self.value}"


# --- patterns, applied in this order; each match is masked before the next pattern runs --------

_MONTHS = {
    name: number
    for number, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
_WEEKDAYS = {"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"}
# Month names must be capitalised: "may 5" is a verb and a number, "May 5" is a date.
_MONTH = r"(?P<month>(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sept?|Oct|Nov|Dec)[a-z]*)"
_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>\d{4})"
_CURRENCY_SYMBOLS = {"$": "USD", "€": "EUR", "£": "GBP"}
_CURRENCY_WORDS = {
    "usd": "USD",
    "dollars": "USD",
    "dollar": "USD",
    "eur": "EUR",
    "euros": "EUR",
    "euro": "EUR",
    "gbp": "GBP",
    "pounds": "GBP",
    "chf": "CHF",
    **_CURRENCY_SYMBOLS,
}
# 1,249.50 or 1'249.50 (and 1249.5); 1.249,50 or 615,09 for the European way of writing it.
_AMOUNT = r"(?P<amount>\d{1,3}(?:[,']\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
_EU_AMOUNT = r"(?P<eu>\d{1,3}(?:[.']\d{3})*,\d{2})"
_SCALE = r"(?:\s?(?P<scale>k|K|m|M|million|bn|billion)\b)?"
_SCALES = {"k": 1_000, "m": 1_000_000, "million": 1_000_000, "bn": 10**9, "billion": 10**9}
_TRAILING_PUNCTUATION = ".,;:!?)]}'\""

# A URL never ends in punctuation: "see https://x.org/a." ends a sentence, not the path.
_URL_RE = re.compile(r"\b(?:https?://|www\.)[^\s<>\"']*[^\s<>\"'.,;:!?)\]}]", re.IGNORECASE)
_EMAIL_RE = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)*\.[A-Za-z]{2,}\b")
_ID_RE = re.compile(r"\b[A-Z][A-Z0-9]{1,9}(?:-[A-Z0-9]+)+\b|(?<![\w#])#\d{2,}\b")
_PHONE_RE = re.compile(r"(?<![\w+])\+\d{1,3}(?:[ -]?\d{2,5}){2,4}\b")
# Identifiers without a letter prefix and hyphen, found after amounts and dates are masked:
# letters and digits run together ("1Z999AA10123456784", "CLM6538879"), long digit strings
# (tracking numbers), and ids in several pieces ("JD01 5523 5435 2199", "CU 0899 5727",
# "403-5652257-5185400", "INV 123456").
_LOOSE_ID_RES = (
    re.compile(
        r"(?<![\w+.,/-])(?:[A-Z]{1,4}|[A-Z0-9]*\d[A-Z0-9]*)(?:[ -][A-Z0-9]*\d[A-Z0-9]*){2,}"
        r"(?![\w/-]|[.,]\w)"
    ),
    re.compile(r"(?<![\w+.,/-])[A-Z]{2,4}[ -]\d{5,}(?![\w/-]|[.,]\w)"),
    re.compile(r"\b(?=[A-Z0-9]*\d)(?=[A-Z0-9]*[A-Z])[A-Z0-9]{6,}\b"),
    re.compile(r"(?<![\w+.,])\d{10,}(?![\w/-]|[.,]\w)"),
)
# Dotted version numbers and addresses (5.2.1, 10.0.0.1); otherwise "5.2" would be a number.
_VERSION_RE = re.compile(r"(?<![\w.])v?\d+(?:\.\d+){2,}\b")
_CODE = r"(?P<code>USD|EUR|GBP|CHF)"
_WORD_AFTER = r"\s?(?P<word>[$€£]|USD|EUR|GBP|CHF|dollars?|euros?|pounds)(?!\w)"
_MONEY_RES = (
    re.compile(r"(?P<symbol>[$€£])\s?" + _EU_AMOUNT + r"(?!\d)"),
    re.compile(r"(?P<symbol>[$€£])\s?" + _AMOUNT + _SCALE),
    re.compile(r"\b" + _CODE + r"\s?" + _EU_AMOUNT + r"(?!\d)"),
    re.compile(r"\b" + _CODE + r"\s?" + _AMOUNT + _SCALE),
    re.compile(r"(?<![\w.,'])" + _EU_AMOUNT + _WORD_AFTER, re.IGNORECASE),
    re.compile(r"(?<![\w.])" + _AMOUNT + _SCALE + _WORD_AFTER, re.IGNORECASE),
)
_DATE_RES = (
    re.compile(r"\b(?P<year>\d{4})-(?P<month>\d{2})-(?P<day>\d{2})\b"),
    re.compile(r"\b(?P<month>\d{1,2})/(?P<day>\d{1,2})/(?P<year>\d{4})\b"),
    re.compile(r"\b" + _MONTH + r"\s+" + _DAY + r"\b(?:,?\s+" + _YEAR + r"\b)?"),
    re.compile(r"\b" + _DAY + r"\s+(?:of\s+)?" + _MONTH + r"(?:,?\s+" + _YEAR + r"\b)?"),
    re.compile(r"\b" + _MONTH + r"\s+" + _YEAR + r"\b"),
)
_TIME_RE = re.compile(
    r"\b(?P<hour>\d{1,2})(?::(?P<minute>\d{2}))?\s?(?P<meridiem>[ap])\.?m\.?(?!\w)"
    r"|\b(?P<hour24>\d{1,2}):(?P<minute24>\d{2})\b",
    re.IGNORECASE,
)
_NUMBER_RE = re.compile(r"(?<![\w.])" + _AMOUNT + r"(?P<percent>%)?")
_QUOTED_RE = re.compile(r"\"([^\"\n]{2,80})\"|“([^”\n]{2,80})”")
# A name word: capitalised, then lower case (allowing McDonald, O'Brien, Jean-Luc).
_TITLE = r"(?:Mr|Mrs|Ms|Dr|Prof)"
_NAME_WORD = r"(?!" + _TITLE + r"\b)(?:Mc|Mac|O')?[A-Z][a-z]+(?:-[A-Z][a-z]+)*"
_NAME_RE = re.compile(
    r"(?P<title>\b"
    + _TITLE
    + r"\.?[ \t]+)?\b(?P<name>"
    + _NAME_WORD
    + r"(?:[ \t]+"
    + _NAME_WORD
    + r")*)\b"
)
_SENTENCE_ENDS = ".!?:;\n-*•>"
# Capitalised words that are not names even in the middle of a sentence.
_NOT_NAMES = {"Ok", "Okay", "Hi", "Hello", "Hey", "Thanks", "Please", "Yes", "No"}


Located = tuple[int, int, Fact]  # start, end (in the text) and the fact stated there


def extract_facts(text: str) -> set[Fact]:
    """Return the checkable facts in `text`, normalised.

    Kinds: "url", "email", "phone", "id", "version", "money", "date", "time", "number",
    "name", "quote". A span claimed by a more specific kind (e.g. the digits of "ORD-12345" or
    of "$40") is not counted again as a number. Pure and deterministic.
    """
    return {fact for _, _, fact in located_facts(text)}


def located_facts(text: str) -> list[Located]:
    """The facts of `text` with where each is written (what the admin highlights), in the
    order they were found. Quotes may overlap the facts inside them; nothing else overlaps."""
    located: list[Located] = [
        (match.start(), match.end(), Fact("quote", _normalise_quote(quoted)))
        for match, quoted in _iter_quotes(text)
    ]
    remaining = text
    for extractor in _EXTRACTORS:
        found, remaining = extractor(remaining)
        located += found
    return located + _extract_names(remaining)


def _iter_quotes(text: str) -> Iterator[tuple[re.Match[str], str]]:
    for match in _QUOTED_RE.finditer(text):
        yield match, match.group(1) or match.group(2)


def _normalise_quote(quoted: str) -> str:
    return " ".join(quoted.casefold().split()).strip(_TRAILING_PUNCTUATION + " ")


def _masking(
    patterns: Sequence[re.Pattern[str]], normalise: Callable[[re.Match[str]], Fact | None]
) -> Callable[[str], tuple[list[Located], str]]:
    """Build an extractor: find `patterns` in order, normalise each match, blank it out.

    Blanking keeps every character's position, so the spans are positions in the original.
    """

    def extract(text: str) -> tuple[list[Located], str]:
        found: list[Located] = []
        for pattern in patterns:

            def replace(match: re.Match[str]) -> str:
                fact = normalise(match)
                if fact is None:
                    return match.group(0)
                found.append((match.start(), match.end(), fact))
                # Keep a separator so the words either side do not join into a false name.
                return " " * len(match.group(0))

            text = pattern.sub(replace, text)
        return found, text

    return extract


def _url_fact(match: re.Match[str]) -> Fact:
    url = match.group(0)
    scheme, sep, rest = url.partition("://")
    if sep:
        host, slash, path = rest.partition("/")
        url = f"{scheme.lower()}://{host.lower()}{slash}{path}"
    return Fact("url", url.rstrip("/"))


def _email_fact(match: re.Match[str]) -> Fact:
    return Fact("email", match.group(0).lower())


def _id_fact(match: re.Match[str]) -> Fact | None:
    value = " ".join(match.group(0).upper().split())
    if not any(char.isdigit() for char in value):
        return None  # "COVID-FREE", "UTF-EIGHT": words with a hyphen, not identifiers
    return Fact("id", value)


def _loose_id_fact(match: re.Match[str]) -> Fact | None:
    """An id without the usual prefix: at least six digits, or one token of letters and
    digits mixed."""
    value = " ".join(match.group(0).split())
    digits = sum(char.isdigit() for char in value)
    one_mixed_token = value.isalnum() and any(char.isalpha() for char in value)
    if digits < 6 and not (digits and one_mixed_token):
        return None
    return Fact("id", value)


def _phone_fact(match: re.Match[str]) -> Fact:
    return Fact("phone", "+" + "".join(char for char in match.group(0) if char.isdigit()))


def _version_fact(match: re.Match[str]) -> Fact:
    return Fact("version", match.group(0).removeprefix("v"))


def _decimal(amount: str, scale: str | None = None) -> Decimal:
    """`amount` as matched by `_AMOUNT` (digits, thousands commas, a decimal point)."""
    value = Decimal(amount.replace(",", "").replace("'", ""))
    if scale:
        value *= _SCALES[scale.lower()]
    return value


def _format_decimal(value: Decimal) -> str:
    """1249.00 -> "1249", 1249.50 -> "1249.5", 2E+3 -> "2000"."""
    return format(value.normalize(), "f")


def _money_fact(match: re.Match[str]) -> Fact:
    groups = match.groupdict()
    if groups.get("symbol"):
        currency = _CURRENCY_SYMBOLS[groups["symbol"]]
    elif groups.get("code"):
        currency = groups["code"]
    else:
        currency = _CURRENCY_WORDS[groups["word"].lower()]
    if groups.get("eu"):
        value = Decimal(groups["eu"].replace(".", "").replace("'", "").replace(",", "."))
    else:
        value = _decimal(groups["amount"], groups.get("scale"))
    return Fact("money", f"{currency} {_format_decimal(value)}")


def _month_number(month: str) -> int | None:
    if month.isdigit():
        return int(month)
    return _MONTHS.get(month.lower())


def _date_fact(match: re.Match[str]) -> Fact | None:
    groups = match.groupdict()
    month = _month_number(groups["month"])
    day = int(groups["day"]) if groups.get("day") else None
    year = groups.get("year")
    if month is None or not 1 <= month <= 12 or (day is not None and not 1 <= day <= 31):
        return None
    if day is None:
        return Fact("date", f"{year}-{month:02d}")
    # ISO 8601 leaves the year out of a partial date as "--MM-DD".
    prefix = year if year else "-"
    return Fact("date", f"{prefix}-{month:02d}-{day:02d}")


def _time_fact(match: re.Match[str]) -> Fact | None:
    groups = match.groupdict()
    if groups["hour24"] is not None:
        hour, minute = int(groups["hour24"]), int(groups["minute24"])
    else:
        hour, minute = int(groups["hour"]), int(groups["minute"] or 0)
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if groups["meridiem"].lower() == "p" else 0)
    if hour > 23 or minute > 59:
        return None
    return Fact("time", f"{hour:02d}:{minute:02d}")


def _number_fact(match: re.Match[str]) -> Fact:
    value = _decimal(match.group("amount"))
    return Fact("number", _format_decimal(value) + (match.group("percent") or ""))


_EXTRACTORS = (
    _masking([_URL_RE], _url_fact),
    _masking([_EMAIL_RE], _email_fact),
    _masking([_PHONE_RE], _phone_fact),
    _masking([_ID_RE], _id_fact),
    _masking([_VERSION_RE], _version_fact),
    _masking(_MONEY_RES, _money_fact),
    _masking(_DATE_RES, _date_fact),
    _masking([_TIME_RE], _time_fact),
    _masking(_LOOSE_ID_RES, _loose_id_fact),
    _masking([_NUMBER_RE], _number_fact),
)


def _extract_names(text: str) -> list[Located]:
    names: list[Located] = []
    for match in _NAME_RE.finditer(text):
        # A run after a title ("Dr. Okafor") is a name wherever it stands.
        ambiguous_start = match.group("title") is None and _at_sentence_start(text, match.start())
        words = list(re.finditer(r"\S+", match.group("name")))
        offset = match.start("name")
        for first, last, starts_run in _split_common_words([word.group(0) for word in words]):
            # A single capitalised word opening a sentence ("Maria said", "Sure thing") may be
            # an ordinary word; only a multiword run ("Maria Lopez said") is trusted there.
            if ambiguous_start and starts_run and last == first:
                continue
            run = " ".join(word.group(0) for word in words[first : last + 1])
            start, end = offset + words[first].start(), offset + words[last].end()
            names.append((start, end, Fact("name", run)))
    return names


def _at_sentence_start(text: str, position: int) -> bool:
    # Walks back over blanks instead of slicing: long messages hold many names.
    index = position - 1
    while index >= 0 and text[index] in " \t":
        index -= 1
    return index < 0 or text[index] in _SENTENCE_ENDS


def _split_common_words(words: list[str]) -> Iterator[tuple[int, int, bool]]:
    """Split a run of capitalised words at words that are not names ("Thanks", "Monday").

    Yields each remaining run as (index of its first word, index of its last word, whether it
    begins the original run).
    """
    run_start = 0
    for index, word in enumerate([*words, "Thanks"]):  # a last common word ends the last run
        if _is_common(word):
            if index > run_start:
                yield run_start, index - 1, run_start == 0
            run_start = index + 1


def _is_common(word: str) -> bool:
    return word in _NOT_NAMES or word in _WEEKDAYS or word.lower() in _MONTHS


def fact_is_supported(fact: Fact, facts: set[Fact], text: str) -> bool:
    """Whether `fact` is stated by a text whose extracted facts are `facts`.

    Names also count when the text merely mentions them: the extractor skips sentence-initial
    single names, so "Maria" opening a memo line still supports "Maria" from a message. A
    date with and without its year is the same date.
    """
    if fact in facts:
        return True
    if fact.kind == "date":
        return _same_day(fact, facts)
    return fact.kind == "name" and re.search(rf"\b{re.escape(fact.value)}\b", text) is not None


def _same_day(date: Fact, facts: set[Fact]) -> bool:
    """A date written without its year ("--11-06") and one with it ("2024-11-06") state the
    same day: a memo may add the year the conversation implies, or leave it out."""
    days = [fact for fact in (date, *facts) if fact.kind == "date" and len(fact.value) in (7, 10)]
    if date not in days:
        return False
    return any(
        other.value[-6:] == date.value[-6:] and "--" in (date.value[:2], other.value[:2])
        for other in days[1:]
    )


# --- scores ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MemoScores:
    """Faithfulness and size of one memo against the messages it covers.

    fact_recall: share of the originals' facts the memo keeps (1.0 when there are none).
    unsupported_rate: share of the memo's facts found in no original (0.0 when it has none).
    compression: memo tokens / original tokens (0.0 when the originals are empty).
    found / missing / unsupported: the facts themselves, as sorted "kind:value" strings.
    """

    fact_recall: float
    unsupported_rate: float
    compression: float
    original_tokens: int
    memo_tokens: int
    found: list[str]
    missing: list[str]
    unsupported: list[str]

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dict, e.g. for a model's JSONField."""
        return asdict(self)


def score_memo(
    *,
    originals: Sequence[str],
    memo: str,
    original_tokens: int | None = None,
    memo_tokens: int | None = None,
) -> MemoScores:
    """Score `memo` against the `originals` it summarises.

    Token counts are computed with the default encoding unless given (callers holding stored
    per-message counts should pass their sum).
    """
    original_text = "\n".join(originals)
    original_facts = set().union(*(extract_facts(text) for text in originals))
    memo_facts = extract_facts(memo)
    found = {fact for fact in original_facts if fact_is_supported(fact, memo_facts, memo)}
    unsupported = {
        fact for fact in memo_facts if not fact_is_supported(fact, original_facts, original_text)
    }
    if original_tokens is None:
        original_tokens = sum(count_tokens(text) for text in originals)
    if memo_tokens is None:
        memo_tokens = count_tokens(memo)
    return MemoScores(
        fact_recall=_ratio(len(found), len(original_facts), empty=1.0),
        unsupported_rate=_ratio(len(unsupported), len(memo_facts), empty=0.0),
        compression=_ratio(memo_tokens, original_tokens, empty=0.0),
        original_tokens=original_tokens,
        memo_tokens=memo_tokens,
        found=_display(found),
        missing=_display(original_facts - found),
        unsupported=_display(unsupported),
    )


# How many facts of each list a memo's stored scores name (the counts are always whole).
STORED_LISTED_FACTS = 12


def scores_stored(scores: dict[str, Any], max_listed: int = STORED_LISTED_FACTS) -> dict[str, Any]:
    """``scores`` as a memo stores them: found, missing, unsupported and unsupported_values
    each cut to ``max_listed`` entries (in the order given), with its full size in
    ``*_count``.

    The whole lists cost about 2 KB a memo, more than the memo's text, kept for as long as the
    thread (issue 24); the admin's memo page highlights the facts listed and shows the counts.
    """
    stored = dict(scores)
    for key in ("found", "missing", "unsupported", "unsupported_values"):
        if key in stored:
            stored.setdefault(f"{key}_count", len(stored[key]))
            stored[key] = stored[key][:max_listed]
    return stored


def _ratio(part: int, whole: int, *, empty: float) -> float:
    return part / whole if whole else empty


def _display(facts: Iterable[Fact]) -> list[str]:
    return sorted(str(fact) for fact in facts)


# --- scores over a whole range, in bounded memory ------------------------------------------

SCORER_VERSION = "range/1"
# The facts a memo is judged by over a long range: what users come back for. Numbers, times,
# names and quotes are mostly small talk over hundreds of turns, and would drown the rest.
KEY_KINDS = frozenset({"id", "money", "date", "email", "phone", "url"})
MAX_LISTED_FACTS = 50
# The "recent" facts: last mentioned in the final quarter of the range's messages.
RECENT_SHARE = 0.25


def score_memo_over_range(
    memo: str,
    originals: Iterable[str],
    *,
    original_tokens: int | None = None,
    memo_tokens: int | None = None,
    max_listed: int = MAX_LISTED_FACTS,
) -> dict[str, Any]:
    """Score `memo` against every original text of the range it stands for (a stream, read
    once, in order; each text is dropped after it is read).

    Memory is bounded by the number of distinct key facts in the range, not by its length.
    Returns a JSON-ready dict:

    - fact_recall: share of the range's key facts (`KEY_KINDS`) the memo states (1.0 if none);
    - recent_fact_recall: the same for the facts last mentioned in the final quarter of the
      range's messages: open matters are mentioned again, so these are the ones a memo most
      needs (1.0 if none);
    - unsupported_rate: share of the memo's key facts stated by no original (0.0 if none);
    - compression: memo tokens / original tokens (counted here unless given);
    - found / missing / unsupported: at most `max_listed` "kind:value" strings each (missing
      ones most recently mentioned first), with their full sizes in *_count;
    - messages, original_tokens, memo_tokens, scorer (`SCORER_VERSION`).
    """
    memo_facts = {fact for fact in extract_facts(memo) if fact.kind in KEY_KINDS}
    last_seen: dict[Fact, int] = {}
    supported: set[Fact] = set()
    counted_tokens = 0
    messages = 0
    for position, text in enumerate(originals):
        messages = position + 1
        facts = extract_facts(text)
        for fact in facts:
            if fact.kind in KEY_KINDS:
                last_seen[fact] = position
        supported |= {
            fact for fact in memo_facts - supported if fact_is_supported(fact, facts, text)
        }
        if original_tokens is None:
            counted_tokens += count_tokens(text)
    if original_tokens is None:
        original_tokens = counted_tokens
    if memo_tokens is None:
        memo_tokens = count_tokens(memo)
    found = {fact for fact in last_seen if fact_is_supported(fact, memo_facts, memo)}
    missing = sorted(set(last_seen) - found, key=lambda fact: (-last_seen[fact], str(fact)))
    recent_from = messages - max(1, round(messages * RECENT_SHARE))
    recent = {fact for fact, position in last_seen.items() if position >= recent_from}
    unsupported = memo_facts - supported
    return {
        "scorer": SCORER_VERSION,
        "fact_recall": _ratio(len(found), len(last_seen), empty=1.0),
        "recent_fact_recall": _ratio(len(recent & found), len(recent), empty=1.0),
        "unsupported_rate": _ratio(len(unsupported), len(memo_facts), empty=0.0),
        "compression": _ratio(memo_tokens, original_tokens, empty=0.0),
        "messages": messages,
        "original_tokens": original_tokens,
        "memo_tokens": memo_tokens,
        "found_count": len(found),
        "missing_count": len(missing),
        "unsupported_count": len(unsupported),
        "found": _display(found)[:max_listed],
        "missing": [str(fact) for fact in missing[:max_listed]],
        "unsupported": _display(unsupported)[:max_listed],
    }


# --- values a writer states that its sources do not hold ---------------------------------------


def unsupported_values(memo: str, sources: Iterable[str], claimed: Iterable[str] = ()) -> list[str]:
    """The values of ``memo`` (its specific words: ``compaction.backends.salience.anchors``)
    and the values a writer ``claimed`` to keep that occur in none of ``sources`` (the previous
    memo and the messages it was written from), compared without regard to case or spacing.

    A memo that only copies from its sources has none; a model's reply that re-spells a value
    ("EUR 615.09" for "€615.09") or invents one has it listed here, in memo order.
    """
    haystack = _squeezed("\n".join(sources))
    values = [*anchors(memo), *claimed]
    unsupported = [value for value in values if _squeezed(value) not in haystack]
    return list(dict.fromkeys(unsupported))


def _squeezed(text: str) -> str:
    return " ".join(text.casefold().split())
