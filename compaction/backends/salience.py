"""What a statement carries that later turns may need, read from the shape of its words alone.

No vocabulary of a domain is used: a word is *specific* when its shape says it is not ordinary
prose, in any script — it holds a digit (numbers, amounts, dates, times, codes, phone numbers),
letters of mixed case inside it ("iPhone", "getUser"), an upper-case run ("QXHZPM", "SEK"),
punctuation between letters or digits ("foo_bar.py", "a-b-c", "x.y"), "@" (an e-mail, a
handle), "/" or "\\" (a path, a date, a fraction), "://" (a URL), or it is a capitalised word
that does not merely open a sentence (a name, also "Joaquín", "Łódź", "Ельцин"), or it stands in
quotes or backticks. A statement is a sentence or a line; its specific words are its
*anchors*: the values a later turn may ask back for, and what ties a later statement to it.

The few words that signal that a statement corrects an earlier one, closes something or states
a preference or a decision are general English connectives ("actually", "instead", "resolved",
"prefer", "decided"), never a domain's terms.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass

from compaction.backends.text_caches import text_cache

# Sentences end at . ! ? (and their full-width forms) followed by a blank, or at a line break;
# not at a dot that is part of what it ends, told by shape: a word of one to three letters
# before a number ("No. 70", "pp. 281"), letters between dots ("e.g.", "i.e."), a number of one
# or two digits before a word and a number: an ordinal ("24. Juni 2026", "3. OG, 61995").
_SENTENCE_END = re.compile(
    r"(?<=[.!?。！？])"  # noqa: RUF001
    r"(?<!\b[^\W\d_]\.[^\W\d_]\.)"
    r"(?!(?<=\b[^\W\d_]\.)\s+\d|(?<=\b[^\W\d_]{2}\.)\s+\d|(?<=\b[^\W\d_]{3}\.)\s+\d)"
    r"(?!(?<=\b\d\.)\s+[^\W\d_]+,?\s+\d|(?<=\b\d\d\.)\s+[^\W\d_]+,?\s+\d)"
    r"\s+(?=\S)"
    r"|\n+"
)
_WORD = re.compile(r"\S+")
EDGE_PUNCTUATION = "\"'`“”‘’«»„()[]{}<>,.;:!?¿¡…*_~|"  # noqa: RUF001
_QUOTED = re.compile(r"\"([^\"\n]{2,120})\"|“([^”\n]{2,120})”|`([^`\n]{1,160})`|«([^»\n]{2,120})»")
_INNER_PUNCTUATION = re.compile(r"\w[-_.:#+=@/\\]\w|\w[(\[{]")

CORRECTION = re.compile(
    r"\b(?:actually|correction|corrected|instead|changed|changing|updated?|new|now|no longer|"
    r"rather than|moved|switch(?:ed)?|replaced?|wrong|mistake|typo|scratch that|not .{1,30} but|"
    r"overwrite|disregard|forget (?:the|what|that|about)|ignore (?:the|what|that)|going forward|"
    r"from now on|reassigned|renamed|re(?:booked|scheduled|vised)|revised|postponed)\b",
    re.IGNORECASE,
)
# "wrong" where nothing said earlier is taken back: negated ("none of them is wrong", "nothing
# is wrong with it"), what went wrong, or what was delivered ("it arrived with the wrong colour",
# "they sent me the wrong size"): a complaint or a reassurance, not a correction.
# (Within a sentence: the words between are not read across its end.)
_WRONG_TAKES_NOTHING_BACK = re.compile(
    r"(?:\b(?:none|nothing|not|never)|n't)[^\w.!?]+(?:\w+[^\w.!?]+){0,3}?wrong\b"
    r"|\b(?:went|go|goes|gone|going)\s+wrong\b"
    r"|\b(?:arrived|came|received|delivered|shipped|sent (?:me|us)|packed)[^\w.!?]+"
    r"(?:\w+[^\w.!?]+){0,3}?wrong\b",
    re.IGNORECASE,
)
CLOSURE = re.compile(
    r"\b(?:resolved|closed?|closing|fixed|cancel+ed|completed?|solved|settled|all set|finished|"
    r"done with|wrapped up|no longer need(?:ed)?|not needed any more|taken care of|sorted)\b",
    re.IGNORECASE,
)
_NEGATED_CLOSURE = re.compile(
    r"\b(?:not|n't|never|still|yet|un)\W*(?:\w+\W+){0,2}"
    r"(?:resolved|closed|fixed|cancel+ed|completed|solved|settled|all set)\b",
    re.IGNORECASE,
)
PREFERENCE = re.compile(
    r"\b(?:prefer(?:s|red|ences?)?|rather|always|never|don'?t|do not|avoid|only|must|like|"
    r"wants?|wish|matters?|important|allerg\w*|decided?|decision|agreed?|let'?s|we'?ll|we will|"
    r"i'?ll|i will|going to|go with|choose|chose|plan(?:ned)? to|remember|mind)\b",
    re.IGNORECASE,
)
# The pronoun "I" and its contractions are capitalised everywhere, and name no one.
_PRONOUN_I = re.compile(r"^I(?:['’][a-z]{1,2})?$")  # noqa: RUF001
STRONG, MEDIUM, WEAK = 3, 2, 1
# Numbers written out ("in two weeks", "three twin rooms"): weak values of their own.
NUMBER_WORDS = frozenset(
    [
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "fifteen",
        "twenty",
        "thirty",
        "forty",
        "fifty",
        "hundred",
        "thousand",
        "dozen",
    ]
)


@dataclass(frozen=True)
class Statement:
    """One sentence or line of a message, with its anchors (specific words, as written)."""

    role: str
    text: str
    anchors: tuple[str, ...]
    # The whole sentence when ``text`` was trimmed: its cue words still count.
    said: str = ""

    @property
    def whole(self) -> str:
        return self.said or self.text

    @property
    def weight(self) -> int:
        """How much the statement carries: its anchors' strengths, summed (at most 8)."""
        return min(8, sum(strength(anchor) for anchor in self.anchors))

    @property
    def asks(self) -> bool:
        return self.whole.rstrip().endswith(("?", "？"))  # noqa: RUF001

    @property
    def corrects(self) -> bool:
        return says(CORRECTION, self.whole)

    @property
    def closes(self) -> bool:
        text = self.whole.rstrip()
        if text.endswith("?") or _NEGATED_CLOSURE.search(text):
            return False
        return CLOSURE.search(text) is not None

    @property
    def prefers(self) -> bool:
        return PREFERENCE.search(self.whole) is not None


def says(words: re.Pattern[str], text: str) -> bool:
    """Whether ``text`` has one of ``words`` (a correction's), not counting a "wrong" that takes
    nothing back (``_WRONG_TAKES_NOTHING_BACK``)."""
    if words.search(text) is None:
        return False
    if "wrong" not in text.casefold():
        return True
    return words.search(_WRONG_TAKES_NOTHING_BACK.sub(" ", text)) is not None


def statements(role: str, text: str) -> Iterator[Statement]:
    """The statements of one message, in order, each with its anchors (maybe none)."""
    for piece in _sentences(text):
        yield Statement(role=role, text=piece, anchors=_anchors(piece))


@text_cache(4096)  # recall asks it of the same candidates turn after turn
def gives_correction(text: str) -> bool:
    """Whether a statement of ``text`` gives a value with a correction's words ("actually",
    "changed to", "instead"…) and asks nothing: ``Statement.corrects`` with anchors and not
    ``asks``, the cheap tests first (finding anchors is the costly part, and recall asks this
    of every candidate on the hot path)."""
    if not _has_correction_words(text):
        return False
    return any(
        says(CORRECTION, piece) and not piece.endswith(("?", "？")) and _anchors(piece)  # noqa: RUF001
        for piece in _sentences(text)
    )


def _has_correction_words(text: str) -> bool:
    """Whether any statement of ``text`` could have a correction's words: each statement is a
    span of ``text`` with its blanks collapsed, so one regex search over the whole answers a
    no for all of them (the usual answer) without splitting ``text`` into statements. (A
    "wrong" that takes nothing back is told apart statement by statement, after.)"""
    return CORRECTION.search(" ".join(text.split())) is not None


def _sentences(text: str) -> Iterator[str]:
    for piece in _SENTENCE_END.split(text):
        piece = " ".join(piece.split()).strip("-*•> ")
        if piece:
            yield piece


def anchors(text: str) -> list[str]:
    """The specific words and quoted strings of ``text``, as written, in order, no repeats."""
    return list(_anchors(text))


# A pure function of its text, asked again for the same statements at every memo write of a
# thread (the base memo's lines are read anew each time) and for the same messages by later
# folds: remembered, as the costliest step of a write. The caches keyed by text hold a few
# thousand statements (a memo's lines and a segment's are a few hundred), so a worker's memory
# stays bounded however long the statements; they are conversation text, so they are dropped
# after an erasure and on a timer (``compaction.backends.text_caches``).
@text_cache(4096)
def _anchors(text: str) -> tuple[str, ...]:
    found: list[str] = []
    for match in _QUOTED.finditer(text):
        quoted = next(group for group in match.groups() if group is not None).strip()
        # A key of a JSON object or a single quoted word is not a value by itself.
        if quoted and text[match.end() : match.end() + 1] != ":" and not quoted.isalpha():
            found.append(quoted)
    words = list(_WORD.finditer(text))
    for index, match in enumerate(words):
        word = match.group(0).strip(EDGE_PUNCTUATION)
        if not word:
            continue
        opens = index == 0 or words[index - 1].group(0)[-1:] in ".!?:;\"'“(-•*>"
        follower = (
            words[index + 1].group(0).strip(EDGE_PUNCTUATION) if index + 1 < len(words) else ""
        )
        if is_specific(word, opens_sentence=opens, next_word=follower):
            found.append(word)
    return tuple(dict.fromkeys(found))


@text_cache(16384)  # asked of every anchor of every line at each fold
def strength(anchor: str) -> int:
    """How telling an anchor is: ``STRONG`` for long codes, dates, amounts, e-mail, URLs and
    paths; ``MEDIUM`` for names, words in capitals, numbers of three digits or more, dotted or
    joined words; ``WEAK`` for short numbers, two capitals and quotes of plain words."""
    digits = sum(char.isdigit() for char in anchor)
    letters = sum(char.isalpha() for char in anchor)
    others = len(anchor) - digits - letters
    if "@" in anchor[1:] or "://" in anchor or (re.search(r"\w/\w", anchor) and letters > 1):
        return STRONG
    if digits:
        if len(anchor.replace(" ", "")) >= 4 and (letters or others):
            return STRONG
        return MEDIUM if digits >= 3 else WEAK
    if anchor.casefold() in NUMBER_WORDS:
        return WEAK
    if " " in anchor:  # a quoted string
        return MEDIUM if any(char.isupper() for char in anchor) else WEAK
    if letters == 2 and anchor.isupper():
        return WEAK
    return MEDIUM


@text_cache(4096)  # asked of every line and statement at each write
def skeleton(text: str) -> str:
    """``text`` with its numbers reduced to their shape: lines of one template (log lines, list
    items, table rows) share a skeleton, and so do repeats of one sentence."""
    return " ".join(
        shape(word) if any(char.isdigit() for char in word) else word.casefold()
        for word in text.split()
    )


# A run of hexadecimal digits holding a digit (a hash, a trace or request id, a timestamp's
# digits): random ids differ in their mix of digits and letters, not in what they are.
_HEX_RUN = re.compile(r"[0-9a-fA-F]*[0-9][0-9a-fA-F]*")


@text_cache(4096)  # asked of every line and statement at each write
def form(text: str) -> str:
    """``text`` with every word reduced to its shape class, hexadecimal runs of four characters
    or more to one digit: the lines of one log or listing template ("<time> INFO [worker]
    done job id=<hex> took=<n>ms", "<path>:<n>: <key>: <hex>") share a form whatever words and
    ids fill them, while the line that breaks the pattern (an exception, a changed setting)
    has one of its own."""
    out = []
    for word in text.split():
        word = _HEX_RUN.sub(lambda m: "0" if len(m.group(0)) >= 4 else m.group(0), word)
        out.append(shape(word))
    return " ".join(out)


def is_specific(word: str, *, opens_sentence: bool = False, next_word: str = "") -> bool:
    """Whether ``word`` (edge punctuation stripped) is a value rather than ordinary prose."""
    if _PRONOUN_I.match(word):
        return False
    if any(char.isdigit() for char in word):
        return True
    if len(word) == 1:
        return False
    if word.casefold() in NUMBER_WORDS:
        return True
    if "@" in word[1:] or "://" in word or _INNER_PUNCTUATION.search(word):
        return not _is_plain_compound(word)
    letters = [char for char in word if char.isalpha()]
    if not letters:
        return False
    if len(letters) >= 2 and all(char.isupper() for char in letters):
        return True
    if any(char.isupper() for char in word[1:]) and any(char.islower() for char in word):
        return True
    if word[0].isupper():
        if not opens_sentence:
            return True
        # A capitalised word opening a sentence is a name when a name follows it, or when it is
        # written in letters beyond plain ASCII ("Joaquín", "Łukasz").
        return (next_word[:1].isupper() and next_word[1:2].islower()) or not word.isascii()
    if _caseless_script(word) and len(word) >= 2:
        return True
    return _unpronounceable(word)


def _unpronounceable(word: str) -> bool:
    """A lower-case Latin word that no language writes: four letters or more without a vowel
    ("qxzplm"), or five consonants in a row, not counting h ("bcdfkt"). Letter codes that
    happen to read like words are not told apart from words."""
    if len(word) < 4 or not word.isascii() or not word.isalpha():
        return False
    lowered = word.casefold()
    if not any(char in "aeiouy" for char in lowered):
        return True
    return re.search(r"[b-df-gj-np-tv-xz]{5,}", lowered) is not None


def _is_plain_compound(word: str) -> bool:
    """ "well-known", "e.g.", "and/or": joined ordinary words, not a value."""
    parts = re.split(r"[-/.]", word)
    return all(part.isalpha() and part.islower() for part in parts) and (
        "-" in word or (len(parts) == 2 and all(len(part) <= 3 for part in parts))
    )


def _caseless_script(word: str) -> bool:
    """Letters of a script without case (CJK, Arabic, Hebrew, Thai, Devanagari…): their names
    cannot be told by a capital, so such words count as specific only in short runs."""
    return any(char.isalpha() and unicodedata.category(char) == "Lo" for char in word)


@text_cache(8192)  # asked again for every kept line at each fold
def topic_words(text: str, anchors_of_text: tuple[str, ...]) -> frozenset[str]:
    """Lower-case content words of ``text`` (four letters or more; no anchors, except those of
    letters alone, which are anchors by their case): what a later statement about the same
    thing is likely to repeat ("address", "delivery", "flight", "Endpoint Address:")."""
    # A capitalised word of letters alone ("Endpoint Address:" in a tool's output) is an
    # anchor by its case only: it names the matter as the word written in lower case would.
    skip = {anchor.casefold() for anchor in anchors_of_text if not anchor.isalpha()}
    words = set()
    for match in _WORD.finditer(text):
        word = match.group(0).strip(EDGE_PUNCTUATION)
        if word.casefold() in skip and not _joined_words(word):
            continue
        for part in _joined_words(word) or [word]:
            part = part.casefold()
            if len(part) >= 4 and part.isalpha() and part not in skip:
                words.add(_stem(part))
    return frozenset(words)


# Where a key or identifier joins words: "flight_no", "quizScore", "test-count", "user.email".
_JOINS = re.compile(r"[_\-.]+|(?<=[a-z])(?=[A-Z])")


def _joined_words(word: str) -> list[str]:
    """The words a joined key is made of ("flight_no" -> flight, no; "quizScore" -> quiz,
    Score), when it is made of two or more words of letters; [] otherwise. A key in a tool's
    output names its value as the words written apart name it in prose."""
    parts = [part for part in _JOINS.split(word) if part]
    if len(parts) < 2 or not all(part.isalpha() for part in parts):
        return []
    return parts


def _stem(word: str) -> str:
    """A crude stem: the first six letters of the word without a plural "s" ("delivered" and
    "delivery" meet at "delive", "tests" and "test" at "test")."""
    if word.endswith("s") and not word.endswith("ss") and len(word) > 4:
        word = word[:-1]
    return word[:6]


@text_cache(16384)  # asked of every anchor of every line at each fold
def shape(word: str) -> str:
    """The shape class of an anchor: "9" digits, "a" letters, other characters as they are,
    runs collapsed ("12/03/2026" -> "9/9/9", "ABC-123" -> "a-9"). Two values of one shape
    class are likely two values of the same thing."""
    out: list[str] = []
    for char in word:
        kind = "9" if char.isdigit() else "a" if char.isalpha() else char
        if not out or out[-1] != kind:
            out.append(kind)
    return "".join(out)
