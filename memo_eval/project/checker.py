"""Is a planted fact in a text, and does the text answer a probe? The evaluation's own reader.

This module knows the facts it looks for (the generator planted them) and searches for each one
with its own tolerant matching; it never asks a fact extractor what a text contains, and shares
no code with a summarizer or with ``compaction.evals``:

- ids match with any (or no) space, hyphen or slash between their characters, in any case
  ("JD01 5523 5435" = "JD0155235435"), never as part of a longer token;
- amounts are read in every notation the generator writes and more ("615,09 €", "€615.09",
  "EUR 615.09", "615.09 euros", "CHF 1'249.50", "1.249,50 EUR") and compared as currency +
  cents;
- dates are read as ISO, dotted, written ("6 November 2024", "Nov 6", "the 6th of November")
  and compared as year-month-day; a date written without its year matches on month and day;
- emails case-insensitively; phone numbers by their digits; names as the whole name.

A probe is answered when one unit of the text (a line, or a paragraph: lines between blank
lines, such as a list of fields) states both its cue and its answer (or, for a status probe,
the case's id and a word for its current status), and that unit names at most
``MAX_CANDIDATES_PER_UNIT`` of the values the answer could be confused with (a line listing
every order of the conversation answers nothing).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from decimal import Decimal, InvalidOperation
from functools import lru_cache

from memo_eval.project.generator import PlantedFact, Probe

MAX_CANDIDATES_PER_UNIT = 3

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
_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>\d{4})"
_DATE_PATTERNS = (
    re.compile(r"(?<!\d)" + _YEAR + r"-(?P<month>\d{2})-(?P<day>\d{2})(?!\d)"),
    re.compile(r"(?<!\d)(?P<day>\d{1,2})\.(?P<month>\d{1,2})\.(?P<year>\d{4})(?!\d)"),
    re.compile(
        r"(?<!\w)" + _DAY + r"\s+(?:of\s+)?" + _MONTH + r"(?:,?\s+" + _YEAR + r")?(?!\w)",
        re.IGNORECASE,
    ),
    re.compile(
        r"(?<!\w)" + _MONTH + r"\s+" + _DAY + r"(?:,?\s+" + _YEAR + r")?(?!\w)", re.IGNORECASE
    ),
)

_CURRENCY_WORDS = {
    "€": "EUR",
    "eur": "EUR",
    "euro": "EUR",
    "euros": "EUR",
    "$": "USD",
    "us$": "USD",
    "usd": "USD",
    "dollar": "USD",
    "dollars": "USD",
    "£": "GBP",
    "gbp": "GBP",
    "pound": "GBP",
    "pounds": "GBP",
    "chf": "CHF",
    "francs": "CHF",
}
_CURRENCY = r"(?P<{name}>US\$|[€$£]|EUR|USD|GBP|CHF)"
_CURRENCY_AFTER = r"(?P<after>[€$£]|EUR|USD|GBP|CHF|euros?|dollars?|pounds?|francs)"
# Digits with optional thousands separators (, . or ') and optional decimals.
_NUMBER = r"(?P<number>\d{1,3}(?:[,.']\d{3})+(?:[.,]\d{1,2})?|\d+(?:[.,]\d{1,2})?)"
_AMOUNT_PATTERNS = (
    re.compile(
        r"(?<![\w$€£])" + _CURRENCY.format(name="before") + r"\s?" + _NUMBER + r"(?![\d])",
        re.IGNORECASE,
    ),
    re.compile(r"(?<![\w.,'])" + _NUMBER + r"\s?" + _CURRENCY_AFTER + r"(?!\w)", re.IGNORECASE),
)

STATUS_WORDS: dict[str, str] = {
    "shipped": r"shipped|dispatched|in transit|on (?:its|the) way|handed (?:over )?to",
    "delayed": r"delay|stuck|late\b|investigat|\btrace\b|no movement|not moved|mis-?sorted",
    "lost": r"\blost\b|missing",
    "refunded": r"refunded|refund (?:\S+ )?(?:issued|processed|paid|sent|done)|reimburs",
    "delivered": r"delivered|arrived|received|landed",
    "replacement shipped": r"replacement|resen[dt]|re-?shipped",
    "return authorised": r"return (?:authori[sz]ed|approved|accepted)|\bRMA\b|authori[sz]ation",
    "open": r"\bopen(?:ed)?\b|logged|new\b",
    "escalated": r"escalat|second[- ]line|level[- ](?:2|two)|technician|visit",
    "resolved": r"resolved|fixed|solved|closed",
    "disputed": r"disput|query|queried|review|wrong|incorrect|overcharg|checking",
    "corrected": r"correct(?:ed|ion)|credit note|credited|adjusted",
    "paid": r"\bpaid\b|settled|cleared",
    "registered": r"registered|submitted|open(?:ed)?\b|logged|created",
    "waiting for parts": r"\bparts?\b|back-?order|component|awaiting|waiting",
    "repair scheduled": r"repair (?:is )?(?:scheduled|booked|planned|on|date)|scheduled|booked",
    "changed": r"changed|switched|moved|upgraded|downgraded|\bnow on\b|live\b",
}


def _id_pattern(value: str) -> re.Pattern[str]:
    chars = [char for char in value if char.isalnum()]
    body = r"[\s\-/]?".join(re.escape(char) for char in chars)
    return re.compile(r"(?<![A-Za-z0-9])" + body + r"(?![A-Za-z0-9])", re.IGNORECASE)


def _parse_number(number: str) -> Decimal | None:
    """ "1,249.50", "1.249,50", "1'249.50", "615,09", "1249" -> Decimal."""
    decimals = re.search(r"[.,](\d{1,2})$", number)
    whole = number[: decimals.start()] if decimals else number
    digits = re.sub(r"[,.']", "", whole)
    try:
        value = Decimal(digits)
    except InvalidOperation:
        return None
    if decimals:
        value += Decimal(decimals.group(1)) / (10 ** len(decimals.group(1)))
    return value


@lru_cache(maxsize=4096)
def amounts_in(text: str) -> frozenset[tuple[str, Decimal]]:
    """Every (currency, value) written in `text`."""
    found = set()
    for pattern in _AMOUNT_PATTERNS:
        for match in pattern.finditer(text):
            word = (match.groupdict().get("before") or match.group("after")).lower()
            value = _parse_number(match.group("number"))
            if value is not None:
                found.add((_CURRENCY_WORDS[word], value.quantize(Decimal("0.01"))))
    return frozenset(found)


@lru_cache(maxsize=4096)
def dates_in(text: str) -> frozenset[tuple[int | None, int, int]]:
    """Every (year or None, month, day) written in `text`."""
    found = set()
    for pattern in _DATE_PATTERNS:
        for match in pattern.finditer(text):
            month_text = match.group("month")
            month = int(month_text) if month_text.isdigit() else _MONTHS[month_text.lower()]
            day = int(match.group("day"))
            year = int(match.group("year")) if match.group("year") else None
            if 1 <= month <= 12 and 1 <= day <= 31:
                found.add((year, month, day))
    return frozenset(found)


def _amount_of(fact: PlantedFact) -> tuple[str, Decimal]:
    currency, number = fact.value.split()
    return currency, Decimal(number)


def fact_present(fact: PlantedFact, text: str) -> bool:
    """Whether `text` states `fact` (in any of the notations described above)."""
    if fact.kind == "id":
        return _id_pattern(fact.value).search(text) is not None
    if fact.kind == "amount":
        return _amount_of(fact) in amounts_in(text)
    if fact.kind == "date":
        year, month, day = (int(part) for part in fact.value.split("-"))
        found = dates_in(text)
        return (year, month, day) in found or (None, month, day) in found
    if fact.kind == "phone":
        digits = [char for char in fact.value if char.isdigit()]
        pattern = r"[\s\-()./]{0,2}".join(digits)
        return re.search(r"(?<!\d)" + pattern + r"(?!\d)", text) is not None
    if fact.kind in ("email", "name"):
        return re.search(r"(?<!\w)" + re.escape(fact.value) + r"(?!\w)", text, re.I) is not None
    raise ValueError(f"unknown fact kind {fact.kind!r}")


def status_stated(status: str, text: str) -> bool:
    return re.search(STATUS_WORDS[status], text, re.IGNORECASE) is not None


def units_of(text: str) -> list[str]:
    """The lines of `text`, then its paragraphs of more than one line."""
    lines = [line for line in text.splitlines() if line.strip()]
    paragraphs = [
        paragraph
        for paragraph in re.split(r"\n\s*\n", text)
        if paragraph.strip() and "\n" in paragraph.strip()
    ]
    return lines + paragraphs


def probe_answered(
    probe: Probe, expected: str, units: Iterable[str], candidates: Iterable[PlantedFact]
) -> bool:
    """Whether a unit states the probe's cue and `expected` (a status word for status probes,
    else the answer fact), naming at most `MAX_CANDIDATES_PER_UNIT` of `candidates` (the facts
    the answer could be confused with, the answer among them)."""
    candidates = list(candidates)
    for line in units:
        if not fact_present(probe.cue, line):
            continue
        if probe.answer is None:
            if status_stated(expected, line):
                return True
            continue
        if not fact_present(probe.answer, line):
            continue
        named = sum(1 for candidate in candidates if fact_present(candidate, line))
        if named <= MAX_CANDIDATES_PER_UNIT:
            return True
    return False
