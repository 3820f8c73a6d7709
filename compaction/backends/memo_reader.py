"""Reading messages into a memo state: which case each sentence is about, and what it says.

The embedded summarizer's own reader (the memo evaluation uses none of it). A message is read
line by line, sentence by sentence:

1. values are found and normalised: email addresses, phone numbers, amounts ("615,09 €" →
   "EUR 615.09"), dates ("the 6th of November" → "6 Nov 2024", the year taken from the dates
   seen so far), and identifiers, including ones written in several pieces ("JD01 5523 5435",
   "K7 4QX 92");
2. each identifier gets a role from the words around it ("order ORD-1", "tracking number …",
   "… is your return authorisation") or, failing that, from a few well-known prefixes: a case
   of its own (order, ticket, claim, invoice, subscription), a fact of a case (tracking,
   serial, booking, return authorisation, refund or credit note reference, a replacement
   order), the customer's number, or noise (help articles, error codes);
3. the sentence's case is the case one of its identifiers already names; otherwise a new case
   is opened for its first case identifier; otherwise it is the case in focus (the last one
   named), but only in the first line of a message or in a line that names a case, and only
   if that case was named in this message or the one before: long general answers do not
   leak their amounts and dates into a case;
4. the amounts, dates, fact identifiers, status words and decisions of the sentence are added
   to that case, each with a label from the words next to it ("refund EUR 89.00", "due
   12 Nov 2024").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from decimal import Decimal, InvalidOperation

from compaction.backends.memo_state import Case, MemoState, linked_id_slot

MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
_MONTH_NUMBERS = {name.lower(): index for index, name in enumerate(MONTHS, start=1)}
_MONTH_NUMBERS["sept"] = 9
_MONTH_WORD = r"(?P<month>(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sept?|Oct|Nov|Dec)[a-z]*)\.?"
_DATE_RES = (
    re.compile(r"\b(?P<year>\d{4})-(?P<monthnum>\d{2})-(?P<day>\d{2})\b"),
    re.compile(r"\b(?P<day>\d{1,2})\.(?P<monthnum>\d{1,2})\.(?P<year>\d{4})\b"),
    re.compile(
        r"\b(?P<day>\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?"
        + _MONTH_WORD
        + r"(?:,?\s+(?P<year>\d{4}))?\b"
    ),
    re.compile(
        r"\b" + _MONTH_WORD + r"\s+(?P<day>\d{1,2})(?:st|nd|rd|th)?\b(?:,?\s+(?P<year>\d{4})\b)?"
    ),
)
_CURRENCIES = {
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
    "franc": "CHF",
    "francs": "CHF",
}
_FIGURE = r"(?P<figure>\d{1,3}(?:[,.']\d{3})+(?:[.,]\d{2})?|\d+(?:[.,]\d{1,2})?)"
_AMOUNT_RES = (
    re.compile(r"(?P<unit>US\$|[€$£]|\b(?:EUR|USD|GBP|CHF))\s?" + _FIGURE + r"(?!\d)"),
    re.compile(
        r"(?<![\d.,])"
        + _FIGURE
        + r"\s?(?P<unit>[€$£]|(?:EUR|USD|GBP|CHF|euros?|dollars?|pounds?|francs?)\b)",
        re.IGNORECASE,
    ),
)
_EMAIL_RE = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)*\.[A-Za-z]{2,}\b")
_PHONE_RE = re.compile(r"\+\d{1,3}(?:[ -]?\d{2,5}){2,4}\b")
_URL_RE = re.compile(r"\bhttps?://\S+")
_VERSION_RE = re.compile(r"\b\d+\.\d+\.\d+\b")
# An identifier: pieces of capitals and digits (with - / #), separated by single spaces; a
# leading piece may be letters only ("CU 0899 5727"); at least 5 letters and digits in all.
_PIECE = r"#?[A-Z0-9][A-Z0-9/-]*"
_ID_RE = re.compile(r"(?<![\w#/-])" + _PIECE + r"(?: " + _PIECE + r")*(?![\w/-])")
_PREFIXED_ID = re.compile(r"[A-Z]{2,5}-\d+$")  # "ORD-1": short, but plainly an identifier
_SENTENCE_END = re.compile(r"(?<=[.!?])(?<!\bno\.)(?<!\bNo\.)(?<!\bnr\.)\s+(?=[\"'(A-Z0-9#€$£])")

# Words that say what an identifier is, looked for just before it (nearest first), then just
# after ("… is your return authorisation").
_ROLE_WORDS = {
    "order": "order",
    "orders": "order",
    "purchase": "order",
    "ticket": "ticket",
    "case": "ticket",
    "incident": "ticket",
    "claim": "claim",
    "invoice": "invoice",
    "bill": "invoice",
    "subscription": "subscription",
    "contract": "subscription",
    "tracking": "tracking",
    "parcel": "tracking",
    "shipment": "tracking",
    "consignment": "tracking",
    "serial": "serial",
    "device": "serial",
    "unit": "serial",
    "booking": "booking",
    "appointment": "booking",
    "rma": "rma",
    "authorisation": "rma",
    "authorization": "rma",
    "return": "rma",
    "refund": "refund ref",
    "reimbursement": "refund ref",
    "replacement": "replacement",
    "credit": "credit note",
    "note": "credit note",
    "customer": "customer",
    "cust": "customer",
    "account": "customer",
    "article": "noise",
    "kb": "noise",
    "version": "noise",
    "firmware": "noise",
    "error": "noise",
    "code": "noise",
    "model": "noise",
}
_ROLE_PREFIXES = (
    ("ORD", "order"),
    ("INV", "invoice"),
    ("RMA", "rma"),
    ("TCK", "ticket"),
    ("TKT", "ticket"),
    ("INC", "ticket"),
    ("1Z", "tracking"),
)
CASE_KINDS = ("order", "ticket", "claim", "invoice", "subscription")
# Which kinds of case a fact identifier can belong to: a serial number is not an order's.
_FITS = {
    "tracking": ("order",),
    "replacement": ("order",),
    "rma": ("order",),
    "refund ref": ("order", "ticket", "subscription"),
    "serial": ("ticket", "claim"),
    "booking": ("ticket", "claim"),
    "credit note": ("invoice",),
}
_PENDING_MESSAGES = 2
# A case of unknown kind takes the statuses of these kinds (an invoice's "paid" is too easily
# read into "I paid EUR 80 for it").
_GENERIC_KINDS = frozenset({"order", "ticket", "claim", "subscription"})
_WARRANTY_RE = re.compile(r"warranty\s+(?:case|ticket)\s*$", re.IGNORECASE)
_REPLACEMENT_RE = re.compile(r"\breplacement\b|\bnew one\b|\bresen[dt]\b", re.IGNORECASE)
_CARRIER_CONTEXT = re.compile(
    r"\b(?:DHL|UPS|DPD|GLS|FedEx|PostNL|Royal Mail|USPS|courier|carrier|parcel|consignment|"
    r"trace|tracing|investigat\w*|delivery)\b",
    re.IGNORECASE,
)
_CHOICE_OR_REPLACEMENT = re.compile(
    r"\breplacement\b|\bnew one\b|\bresen[dt]\b|\brefund\b|\bmoney back\b", re.IGNORECASE
)


@dataclass(frozen=True)
class _Status:
    pattern: re.Pattern[str]
    status: str
    kinds: frozenset[str]


def _status(pattern: str, status: str, *kinds: str) -> _Status:
    return _Status(re.compile(pattern, re.IGNORECASE), status, frozenset(kinds or CASE_KINDS))


# Checked in order; the first that matches a sentence sets its case's status (a status only
# applies to the kinds listed: a part that "arrived" does not deliver a claim).
_STATUSES = (
    _status(
        r"\brefunded\b|\breimbursed\b|refund\w*\b.{0,80}?\b(?:was|were|been|is|has been)\s+"
        r"(?:issued|processed|paid|sent|made)|refund\w*\b.{0,80}?\bissued\b|\b(?:issued|"
        r"processed|paid out)\b.{0,40}?\b(?:refund|back to your)|reimbursement\b.{0,40}\b(?:went "
        r"out|issued|paid|settles)|\brefund processed\b",
        "refunded",
        "order",
        "ticket",
        "subscription",
    ),
    _status(
        r"\breplacement\b.{0,60}\b(?:shipped|dispatched|despatched|sent|on its way|created|in "
        r"transit)|\b(?:created|dispatched|despatched|sent|shipped)\b.{0,40}\breplacement\b|"
        r"\bresent\b",
        "replacement shipped",
        "order",
    ),
    _status(
        r"\blost\b(?! (?:patience|track|count|interest))|\bwent missing\b|\bwill not arrive\b|"
        r"\bwon't arrive\b|\bparcel is gone\b|\bcould(?:n't| not) find\b|\bcan(?:not|'t) be "
        r"found\b",
        "lost",
        "order",
    ),
    _status(
        r"\bdelivered\b|\barrived\b|\bcame (?:this|today|yesterday)|\b(?:it's|is) here\b|"
        r"\blanded\b|\bgot the new\b|\bturned up\b|\bshown up\b|\bshowed up\b|\breached me\b",
        "delivered",
        "order",
    ),
    _status(
        r"\bresolved\b|\bfixed\b|\bsolved\b|\bsorted\b|\bworks (?:now|again)\b|"
        r"\bworking again\b|\brunning again\b|\bfunctions correctly\b|\brepair was successful\b",
        "resolved",
        "ticket",
    ),
    _status(r"\bpaid\b|\bsettled\b|\bpayment received\b|\bcleared\b", "paid", "invoice"),
    _status(
        r"\bcredit note\b|\bcorrected\b|\bcorrection\b|\bcredits you\b", "corrected", "invoice"
    ),
    _status(
        r"\bdisput\w*|\breview\w*|\bcheck\w*|\bquer(?:y|ied)\b|\blooking into\b|\bexamin\w*|"
        r"\bwrong\b|\bincorrect\b|\bmistake\b",
        "disputed",
        "invoice",
    ),
    _status(
        r"\bescalat\w*|\bsecond[- ]line\b|\blevel[- ](?:2|two)\b|\btechnician\b|\bengineers?\b|"
        r"\bvisit\b.{0,30}\b(?:booked|arranged)\b",
        "escalated",
        "ticket",
    ),
    _status(
        r"\brepair\b.{0,50}\b(?:scheduled|booked|planned|arranged|take place)\b|\brepair (?:on|for|"
        r"appointment|date)\b|\bfix happens\b",
        "repair scheduled",
        "claim",
    ),
    _status(
        r"\bback-?order\b|\bspare part\b|\b(?:waiting for|awaiting) (?:a|the) part\b|"
        r"\bpart\b.{0,50}\b(?:delayed|expected|slipped|until|says|required|on order)\b|"
        r"\bcomponent\b",
        "waiting for parts",
        "claim",
    ),
    _status(r"\bregistered\b|\bin our system\b|\bcreated\b|\baccepted\b", "registered", "claim"),
    _status(
        r"\blogged\b|\bopened\b|\bis open\b|\braised\b|\bopen for\b|\bcreated\b",
        "open",
        "ticket",
        "claim",
    ),
    _status(
        r"\binvestigat\w*|\btrace\b|\benquiry\b|\bhasn't updated\b|\bsame status\b|\breroute\w*|"
        r"\b(?:hasn't|has not|nothing has|not) (?:moved|changed)\b|\bno movement\b|\bfrozen\b|"
        r"\bstuck\b|\bstalled\b|\bmis-?sorted\b|\bdelay\w*|\bchase\b",
        "delayed",
        "order",
    ),
    _status(
        r"\bshipped\b|\bhanded over\b|\bwent out\b|\bleft our warehouse\b|\bin transit\b|"
        r"\b(?:dispatched|despatched)\b|\bon (?:its|the) way\b|\bon the road\b|"
        r"\bout for delivery\b",
        "shipped",
        "order",
    ),
    _status(
        r"\breturns? (?:approved|authori[sz]ed|accepted)\b|\bauthori[sz]ed the return\b|"
        r"\breturns? authori[sz]ation\b|\breturn\b.{0,40}\b(?:approved|authori[sz]ed|accepted)\b",
        "return authorised",
        "order",
    ),
    _status(
        r"\bswitched\b|\bmoved to\b|\bchange[ds]?\b|\b(?:now on|is on)\b|\bis live\b",
        "changed",
        "subscription",
    ),
    _status(r"\bcancell?ed\b", "cancelled"),
    _status(
        r"\bclosed\b|\b(?:is|are|now) complete\b|\bis done\b|\bwrapping up\b|\barchived\b",
        "closed",
    ),
)
# How far along a case is: a status may be set by a sentence that does not name its case only
# if it is further along than the current one.
_STAGES = {
    "open": 0,
    "registered": 0,
    "disputed": 0,
    "shipped": 0,
    "return authorised": 0,
    "delayed": 1,
    "escalated": 1,
    "corrected": 1,
    "waiting for parts": 1,
    "lost": 1,
    "replacement shipped": 2,
    "repair scheduled": 2,
}
_FINAL_STAGE = 3


def _stage(status: str) -> int:
    return _STAGES.get(status, _FINAL_STAGE)


_NEGATION = re.compile(
    r"\b(?:not|never|nothing|nobody|no longer|isn't|hasn't|haven't|didn't|won't|wasn't|still)"
    r"\W+(?:\w+\W+)?$",
    re.IGNORECASE,
)
# Words after which a final status is a promise or a condition, not a fact.
_NOT_YET = re.compile(
    r"\b(?:will|would|shall|to be|once|upon|after|when|if|until|can|could)\b[^.;:]*$", re.I
)
_NAME_IN_INTRO = re.compile(r"(?<=[a-z,;:] )(?P<name>[A-Z][a-z]+ [A-Z][a-z]+)\b")
_CHOICE_RE = re.compile(
    r"\b(?:please|rather|prefer|i'll take|i want|just|send)\b.{0,40}?\b(?P<choice>refund|money "
    r"back|replacement|new one|another one|resend)",
    re.IGNORECASE,
)
_DECIDED_RE = re.compile(r"\b(?:decided|agreed) (?:to |that |on )?(?P<what>[^.;!?]{3,80})", re.I)
_NAME_RES = (
    re.compile(r"\b(?:my name is|this is|I'm|I am)\s+(?P<name>[A-Z][a-z]+(?: [A-Z][a-z]+)+)"),
    re.compile(r"\b(?P<name>[A-Z][a-z]+ [A-Z][a-z]+) (?:here|writing)\b"),
    re.compile(
        r"(?<!\w)(?i:hi|hello|hey|dear|good \w+)(?i: there)?[,!]?\s+"
        r"(?P<name>[A-Z][a-z]+ [A-Z][a-z]+)(?:[.,!]|\s\()"
    ),
    re.compile(r"\bName:\s*(?P<name>[A-Z][a-z]+ [A-Z][a-z]+)\b"),
)

# (pattern, label) in priority order: the label of an amount is that of the first pattern
# found in the words just before it (or just after it, for "a month").
_AMOUNT_LABELS = (
    (re.compile(r"refund|reimburs|\bback\b", re.I), "refund"),
    (re.compile(r"credit", re.I), "credit"),
    (re.compile(r"charge|billed|\bbill\b|invoice|says", re.I), "billed"),
    (re.compile(r"plan|per month|a month|/month|monthly|tier", re.I), "monthly"),
    (re.compile(r"paid|pay|total|cost|price|\bfor\b|bought", re.I), "paid"),
)
_DATE_LABELS = (
    (re.compile(r"refund|processed|issued|reimburs", re.I), "issued"),
    (re.compile(r"repair|\bfix", re.I), "repair"),
    (re.compile(r"\bpart\b|back-?order|supplier|component", re.I), "part due"),
    (re.compile(r"visit|technician|appointment|sending someone", re.I), "visit"),
    (re.compile(r"ordered|placed", re.I), "ordered"),
    (re.compile(r"bought|purchased|receipt", re.I), "bought"),
    (re.compile(r"start|from\b", re.I), "from"),
    (re.compile(r"due|pay by|deliver|expect|arriv|estimat|new date|\bETA\b|by\b", re.I), "due"),
)
_LABEL_WINDOW = 80
_ROLE_LOOKBACK = 6  # words before an identifier that may say what it is
_ITEM_FOR_STATUS = {
    "shipped": ("awaiting delivery", "due"),
    "delayed": ("carrier investigating", "ticket"),
    "lost": ("customer to choose refund or replacement", None),
    "replacement shipped": ("awaiting the replacement", "due"),
    "return authorised": ("awaiting the returned item, then refund", "refund"),
    "open": ("technical team reviewing", None),
    "escalated": ("technician visit", "visit"),
    "disputed": ("billing reviewing", None),
    "corrected": ("customer to pay", "due"),
    "registered": ("repair centre assessing", None),
    "waiting for parts": ("waiting for the spare part", "part due"),
    "repair scheduled": ("repair booked", "repair"),
}


@dataclass(frozen=True)
class _Found:
    start: int
    end: int
    kind: str  # "amount", "date", "email", "phone", "id"
    value: str


def format_date(day: date) -> str:
    return f"{day.day} {MONTHS[day.month - 1]} {day.year}"


class MemoReader:
    """Folds messages into a `MemoState` (see the module docstring)."""

    def __init__(self, state: MemoState) -> None:
        self.state = state
        self.focus: str | None = state.focus if state.focus in state.cases else None
        # Messages since the focus case was last named: the previous memo's last case counts
        # as named just before this range.
        self.focus_age = 0 if self.focus else 99
        self.reference = _latest_date(state)
        self.touched: set[str] = set()
        # Sentences about a case not named yet ("My desk broke, serial 4X7-99A-201"), kept
        # for the case the next message opens; `holding` while this message introduces one.
        self.pending: list[tuple[str, list[_Found], str]] = []
        self.pending_age = 0
        self.holding = False

    # messages ----------------------------------------------------------------------------------

    def read(self, *, role: str, text: str) -> None:
        self.focus_age += 1
        self.holding = False
        self.pending_age += 1
        if self.pending_age > _PENDING_MESSAGES:
            self.pending = []
        for number, line in enumerate(_records(text)):
            self._read_line(line, role=role, lead=number == 0 or role != "assistant")

    def _read_line(self, line: str, *, role: str, lead: bool) -> None:
        sentences = [part for part in _SENTENCE_END.split(line) if part.strip()]
        found_per_sentence = [_find_values(sentence, self.reference) for sentence in sentences]
        ids_per_sentence = [
            bool(self._resolve_ids(sentence, found))
            for sentence, found in zip(sentences, found_per_sentence, strict=True)
        ]
        names_a_case = any(ids_per_sentence)
        # Sentences before the line names its case ("On 3 May I paid EUR 80. Order ORD-1.")
        # wait for that case instead of going to the previous one.
        waiting: list[tuple[str, list[_Found]]] = []
        for index, (sentence, found) in enumerate(zip(sentences, found_per_sentence, strict=True)):
            self._note_dates(found)
            self._read_customer(sentence, found, role=role)
            if not ids_per_sentence[index] and any(ids_per_sentence[index:]):
                waiting.append((sentence, found))
                continue
            case, named = self._case_of(
                sentence, found, role=role, may_use_focus=lead or names_a_case
            )
            if case is None:
                continue
            self._read_into(case, sentence, found, role=role, named=named)
            if named:
                for earlier, earlier_found in waiting:
                    self._read_into(case, earlier, earlier_found, role=role, named=False)
                waiting = []
        for sentence, found in waiting:
            case, named = self._case_of(sentence, found, role=role, may_use_focus=lead)
            if case is not None:
                self._read_into(case, sentence, found, role=role, named=named)
        # A line giving the customer's email address introduces them: a capitalised pair of
        # words inside a sentence there is their name ("… on behalf of Dana Whitfield").
        introduction = role == "user" and not self.state.customer.name and _EMAIL_RE.search(line)
        if introduction and (match := _NAME_IN_INTRO.search(line)):
            self.state.customer.name = match.group("name")

    def _note_dates(self, found: list[_Found]) -> None:
        for value in found:
            if value.kind == "date" and value.value.count(" ") == 2:
                self.reference = max(self.reference or date.min, _parse_rendered_date(value.value))

    # which case ------------------------------------------------------------------------------

    def _resolve_ids(self, sentence: str, found: list[_Found]) -> list[tuple[_Found, str]]:
        """The identifiers of the sentence with their roles (noise and customer left out)."""
        ids = []
        previous_end = 0
        for value in found:
            start_after, previous_end = previous_end, value.end
            if value.kind != "id":
                continue
            role = _role_of(sentence, value, start_after)
            if role in ("noise", "customer"):
                continue
            if role is None and self.state.case_for(value.value) is None:
                role = "unknown"
            ids.append((value, role or "known"))
        return ids

    def _case_of(
        self, sentence: str, found: list[_Found], *, role: str, may_use_focus: bool
    ) -> tuple[Case | None, bool]:
        """The case the sentence is about, and whether the sentence names it."""
        replacement = _REPLACEMENT_RE.search(sentence) is not None
        ids = []
        for value, kind in self._resolve_ids(sentence, found):
            if (
                kind in ("order", "unknown")
                and replacement
                and self.state.case_for(value.value) is None
            ):
                kind = "replacement"
            ids.append((value, kind))
        known = [self.state.case_for(value.value) for value, _ in ids]
        case = next((case for case in known if case is not None), None)
        if case is None:
            case = self._new_case(ids, sentence)
        if case is None:
            case = self._unnamed_case(sentence, found, ids, role=role, lead=may_use_focus)
        if case is None:
            return None, False
        for value, kind in ids:
            self._link(case, value.value, kind)
        if ids:
            self.focus, self.focus_age = case.key, 0
        elif self.focus == case.key:
            self.focus_age = 0
        return case, bool(ids)

    def _unnamed_case(
        self,
        sentence: str,
        found: list[_Found],
        ids: list[tuple[_Found, str]],
        *,
        role: str,
        lead: bool,
    ) -> Case | None:
        """For a sentence naming no known case and opening none: the case in focus, if what
        the sentence states fits it; a new case of unknown kind for an unknown identifier with
        facts ("S84942390 moved to Plus: EUR 12.00 a month"); else nothing, and the sentence
        is held for the case the next message opens."""
        focus = self._focus_case() if lead else None
        if (
            lead
            and (focus is None or focus.status != "lost")
            and _CHOICE_OR_REPLACEMENT.search(sentence)
        ):
            focus = self._awaiting_choice() or focus
        facts = [(value, kind) for value, kind in ids if kind in _FITS]
        unknown = [value for value, kind in ids if kind not in _FITS]
        fitting = all(_fits(focus, kind, value.value) for value, kind in facts)
        if (
            unknown
            and (facts or self._states_something(found, sentence))
            and not (facts and fitting)
        ):
            context = " ".join([*(held for held, _, _ in self.pending), sentence])
            return self._open_with_pending(unknown[0].value, _kind_from_words(context))
        misfits = unknown or (facts and not fitting)
        orphan = (
            lead
            and focus is None
            and not ids
            and any(value.kind in ("amount", "date") for value in found)
        )
        if misfits or orphan or (self.holding and lead and not ids):
            self._hold(sentence, found, role)
            return None
        return focus

    def _awaiting_choice(self) -> Case | None:
        """The one open case waiting for the customer to choose refund or replacement."""
        waiting = [case for case in self.state.cases.values() if case.status == "lost"]
        return waiting[0] if len(waiting) == 1 else None

    def _focus_case(self) -> Case | None:
        if self.focus is None or self.focus_age > 1:
            return None
        return self.state.cases.get(self.focus)

    def _hold(self, sentence: str, found: list[_Found], role: str) -> None:
        self.holding = True
        self.pending.append((sentence, found, role))
        self.pending_age = 0

    def _new_case(self, ids: list[tuple[_Found, str]], sentence: str) -> Case | None:
        """A case for the first case identifier of the sentence; but a ticket raised with the
        carrier while an order is in focus ("I opened ticket TCK-7731 with DHL") is that
        order's."""
        for value, kind in ids:
            if kind not in CASE_KINDS:
                continue
            focus = self._focus_case()
            if (
                kind == "ticket"
                and not self.pending
                and focus is not None
                and focus.kind == "order"
                and _CARRIER_CONTEXT.search(sentence)
            ):
                return focus
            return self._open_with_pending(value.value, kind)
        return None

    def _open_with_pending(self, key: str, kind: str) -> Case:
        """Open a case, and give it the sentences held for the next new case."""
        case = self._open(key, kind)
        pending, self.pending, self.holding = self.pending, [], False
        for sentence, found, role in pending:
            for held, held_kind in self._resolve_ids(sentence, found):
                self._link(case, held.value, held_kind)
            self._read_into(case, sentence, found, role=role, named=False)
        return case

    def _open(self, key: str, kind: str) -> Case:
        existing = self.state.case_for(key)
        if existing is not None:
            return existing
        case = self.state.open_case(key, kind)
        self.touched.add(key)
        return case

    def _link(self, case: Case, identifier: str, role: str) -> None:
        """Record `identifier` on `case` (unless it is the case's own id) and remember that it
        names the case."""
        owner = self.state.case_for(identifier)
        if owner is not None:
            return
        slot = "ref" if role in ("unknown", "known") else role
        if case.add(slot, identifier):
            self.touched.add(case.key)
            if slot == "tracking" and case.status == "open":
                case.status = "shipped"  # a tracking number means it has left
        if linked_id_slot(slot) or slot == "ref":
            self.state.alias(identifier, case.key)

    @staticmethod
    def _states_something(found: list[_Found], sentence: str) -> bool:
        return any(value.kind in ("amount", "date") for value in found) or any(
            status.pattern.search(sentence) for status in _STATUSES
        )

    # what it says ----------------------------------------------------------------------------

    def _read_into(
        self, case: Case, sentence: str, found: list[_Found], *, role: str, named: bool
    ) -> None:
        changed = False
        for value in found:
            if value.kind == "amount":
                changed |= case.add(_label(sentence, value, _AMOUNT_LABELS, "amount"), value.value)
            elif value.kind == "date":
                changed |= case.add(_label(sentence, value, _DATE_LABELS, "date"), value.value)
        changed |= self._read_status(case, sentence, named=named)
        changed |= self._read_decision(case, sentence, role=role)
        if changed:
            self.touched.add(case.key)

    def _read_status(self, case: Case, sentence: str, *, named: bool) -> bool:
        """Set the case's status from the first status phrase of the sentence that fits its
        kind. A sentence that does not name the case (small talk after it, "is the shop open
        on Sundays?", "all fixed after the visit" about another ticket) may only move the
        status on, never back, and never to a final status: closing a case takes its name."""
        for candidate in _STATUSES:
            if case.kind not in candidate.kinds and not (
                case.kind == "case" and candidate.kinds & _GENERIC_KINDS
            ):
                continue
            match = candidate.pattern.search(sentence)
            if match is None or _NEGATION.search(sentence[: match.start()]):
                continue
            status = candidate.status
            if _stage(status) == _FINAL_STAGE and _NOT_YET.search(sentence[: match.start()]):
                continue  # "… will be refunded once we receive it" has not happened yet
            if status == case.status or (status == "closed" and case.closed):
                return False  # "closed" does not hide how it ended (delivered, refunded …)
            if not named and (
                _stage(status) <= _stage(case.status) or _stage(status) == _FINAL_STAGE
            ):
                return False
            case.status = status
            return True
        return False

    @staticmethod
    def _read_decision(case: Case, sentence: str, *, role: str) -> bool:
        if role == "user" and (choice := _CHOICE_RE.search(sentence)):
            word = choice.group("choice").lower()
            decided = "refund" if word in ("refund", "money back") else "replacement"
            return case.add("decided", decided)
        if decided_match := _DECIDED_RE.search(sentence):
            return case.add("decided", " ".join(decided_match.group("what").split()[:10]))
        return False

    def _read_customer(self, sentence: str, found: list[_Found], *, role: str) -> None:
        customer = self.state.customer
        if role == "user" and not customer.name:
            for pattern in _NAME_RES:
                if match := pattern.search(sentence):
                    customer.name = match.group("name")
                    break
        for value in found:
            if value.kind == "email" and role == "user" and not customer.email:
                customer.email = value.value
            elif value.kind == "phone" and customer.phone != value.value:
                customer.phone = value.value
            elif (
                value.kind == "id"
                and not customer.number
                and _role_of(sentence, value) == ("customer")
            ):
                customer.number = value.value

    # after a segment -------------------------------------------------------------------------

    def refresh_items(self) -> None:
        """Each open case's open item, from its status and its latest relevant fact."""
        for case in self.state.cases.values():
            case.item = "" if case.closed else _item(case)


_KIND_WORDS = (
    (re.compile(r"\b(?:warranty|claim)\b", re.I), "claim"),
    (re.compile(r"\b(?:invoice|billed|bill)\b", re.I), "invoice"),
    (re.compile(r"\b(?:subscription|plan|tier|monthly)\b", re.I), "subscription"),
    (re.compile(r"\b(?:error|device|serial|support|technician)\b", re.I), "ticket"),
    (
        re.compile(
            r"\b(?:order\w*|placed|parcel|deliver\w*|shipped|tracking|shown up|arriv\w*|"
            r"return\w*|send back|sent back)\b",
            re.I,
        ),
        "order",
    ),
)


def _kind_from_words(sentence: str) -> str:
    """The kind of case an identifier without a word for it belongs to, from the sentence."""
    for pattern, kind in _KIND_WORDS:
        if pattern.search(sentence):
            return kind
    return "case"


_RECORD_LINE = re.compile(r"^\s*(?:[-*•]\s+|[A-Z][\w /.'-]{0,30}:\s)")


def _records(text: str) -> list[str]:
    """The text's lines, with a list of fields ("- Order: ORD-1", "Tracking: 1Z…") joined to
    the line that introduces it, so a case named in one field owns the others."""
    records: list[list[str]] = []
    for line in (line.strip() for line in text.splitlines()):
        if not line:
            continue
        previous = records[-1][-1] if records else ""
        if (
            records
            and _RECORD_LINE.match(line)
            and (previous.endswith(":") or _RECORD_LINE.match(previous))
        ):
            records[-1].append(line.lstrip("-*• "))
        else:
            records.append([line])
    return ["; ".join(record) for record in records]


def _fits(case: Case | None, kind: str, identifier: str) -> bool:
    """Whether `case` can hold the fact identifier: the right kind of case, and not a second
    serial number (a second device is a second case)."""
    if case is None:
        return False
    if case.kind != "case" and case.kind not in _FITS[kind]:
        return False
    return kind != "serial" or not case.values("serial") or identifier in case.values("serial")


def _item(case: Case) -> str:
    what, slot = _ITEM_FOR_STATUS.get(case.status, ("", None))
    if not what:
        return ""
    values = case.values(slot) if slot else []
    return f"{what} ({values[-1]})" if values else what


def _latest_date(state: MemoState) -> date | None:
    latest = None
    for case in state.cases.values():
        for fact in case.facts:
            if _RENDERED_DATE.fullmatch(fact.value):
                day = _parse_rendered_date(fact.value)
                latest = max(latest or day, day)
    return latest


_RENDERED_DATE = re.compile(r"\d{1,2} [A-Z][a-z]{2} \d{4}")


def _parse_rendered_date(text: str) -> date:
    day, month, year = text.split()
    return date(int(year), _MONTH_NUMBERS[month.lower()], int(day))


def _label(
    sentence: str, value: _Found, labels: tuple[tuple[re.Pattern[str], str], ...], default: str
) -> str:
    """The label whose word stands nearest before the value in its sentence ("… refund of
    EUR 80 issued on 6 May": "refund" for the amount, "issued" for the date); "monthly" also
    when "a month" follows the amount."""
    before = sentence[max(0, value.start - _LABEL_WINDOW) : value.start]
    after = sentence[value.end : value.end + 12]
    best: tuple[int, str] | None = None
    for pattern, label in labels:
        if label == "monthly" and pattern.search(after):
            return label
        ends = [match.end() for match in pattern.finditer(before)]
        if ends and (best is None or ends[-1] > best[0]):
            best = (ends[-1], label)
    return best[1] if best else default


def _role_of(sentence: str, value: _Found, after_position: int = 0) -> str | None:
    """What an identifier is, from the words around it (see `_ROLE_WORDS`) or its prefix.

    The words looked at start after `after_position` (the end of the value before it), so
    "serial 4X7-99A-201; its number is TCK-1" does not make the ticket a serial number.
    """
    before = sentence[max(after_position, value.start - 40) : value.start]
    if _WARRANTY_RE.search(before):
        return "claim"
    for word in reversed(re.findall(r"[A-Za-z]+", before)[-_ROLE_LOOKBACK:]):
        role = _ROLE_WORDS.get(word.lower())
        if role:
            return role
    after = sentence[value.end : value.end + 40]
    follows = re.match(
        r"\s+(?:is|was)\s+(?:your|the|our)\s+(?P<words>(?:[A-Za-z]+\s*){1,3})", after
    )
    if follows:
        for word in follows.group("words").split():
            role = _ROLE_WORDS.get(word.lower())
            if role:
                return role
    for prefix, role in _ROLE_PREFIXES:
        if value.value.upper().startswith(prefix):
            return role
    return None


# --- values ----------------------------------------------------------------------------------


def _find_values(sentence: str, reference: date | None) -> list[_Found]:
    """The values of `sentence` in text order; each character belongs to one value at most
    (emails and URLs first, then phones, amounts, dates, versions, identifiers)."""
    taken: list[tuple[int, int]] = []
    found: list[_Found] = []

    def free(start: int, end: int) -> bool:
        return all(end <= s or start >= e for s, e in taken)

    def claim(match: re.Match[str], kind: str, value: str | None) -> None:
        taken.append(match.span())
        if value is not None:
            found.append(_Found(match.start(), match.end(), kind, value))

    for match in _URL_RE.finditer(sentence):
        claim(match, "url", None)
    for match in _EMAIL_RE.finditer(sentence):
        if free(*match.span()):
            claim(match, "email", match.group(0).lower())
    for match in _PHONE_RE.finditer(sentence):
        if free(*match.span()):
            claim(match, "phone", match.group(0))
    for pattern in _AMOUNT_RES:
        for match in pattern.finditer(sentence):
            amount = _amount(match)
            if amount and free(*match.span()):
                claim(match, "amount", amount)
    for pattern in _DATE_RES:
        for match in pattern.finditer(sentence):
            day = _date(match, reference)
            if day and free(*match.span()):
                claim(match, "date", day)
    for match in _VERSION_RE.finditer(sentence):
        if free(*match.span()):
            claim(match, "version", None)
    for match in _ID_RE.finditer(sentence):
        identifier = _identifier(match, free)
        if identifier is not None:
            start, text = identifier
            found.append(_Found(start, start + len(text), "id", text.rstrip(".")))
    return sorted(found, key=lambda value: value.start)


def _identifier(match: re.Match[str], free) -> tuple[int, str] | None:
    """The identifier in an `_ID_RE` match, without pieces claimed by other values and
    without a leading all-letter word that is not a prefix (a carrier name, "OK")."""
    pieces = []
    position = match.start()
    for piece in match.group(0).split(" "):
        if free(position, position + len(piece)):
            pieces.append((position, piece))
        elif pieces:
            break
        position += len(piece) + 1
    while pieces and pieces[-1][1].isalpha():
        pieces.pop()
    if not pieces:
        return None
    text = " ".join(piece for _, piece in pieces).rstrip(".")
    alnum = sum(char.isalnum() for char in text)
    has_digit = any(char.isdigit() for char in text)
    if not has_digit or (alnum < 5 and not _PREFIXED_ID.match(text)):
        return None
    if text.isdigit() and len(text) < 6:
        return None  # a quantity or a year, not an identifier
    return pieces[0][0], text


def _amount(match: re.Match[str]) -> str | None:
    currency = _CURRENCIES.get(match.group("unit").lower())
    figure = match.group("figure")
    decimals = re.search(r"[.,](\d{1,2})$", figure)
    whole = figure[: decimals.start()] if decimals else figure
    try:
        value = Decimal(re.sub(r"[,.']", "", whole))
    except InvalidOperation:
        return None
    if decimals:
        value += Decimal(decimals.group(1)) / 10 ** len(decimals.group(1))
    if currency is None:
        return None
    return f"{currency} {value:.2f}"


def _date(match: re.Match[str], reference: date | None) -> str | None:
    groups = match.groupdict()
    if groups.get("monthnum"):
        month = int(groups["monthnum"])
    else:
        month = _MONTH_NUMBERS.get(groups["month"][:3].lower(), 0)
    day = int(groups["day"])
    if not 1 <= month <= 12 or not 1 <= day <= 31:
        return None
    year = int(groups["year"]) if groups.get("year") else _nearest_year(month, day, reference)
    try:
        value = date(year, month, day) if year else None
    except ValueError:
        return None
    if value is None:
        return f"{day} {MONTHS[month - 1]}"
    return format_date(value)


def _nearest_year(month: int, day: int, reference: date | None) -> int | None:
    """The year that puts month/day closest to `reference` (None without a reference)."""
    if reference is None:
        return None
    best = None
    for year in (reference.year - 1, reference.year, reference.year + 1):
        try:
            distance = abs((date(year, month, day) - reference).days)
        except ValueError:
            continue
        if best is None or distance < best[0]:
            best = (distance, year)
    return best[1] if best else None
