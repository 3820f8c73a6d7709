"""Checkable facts in words people read: "money:EUR 615.09" is shown as "Amount: EUR 615.09".

The scores store facts as ``kind:value`` strings (``compaction.evals``); staff see them through
``fact_label``. An identifier is named by its shape when the shape is telling (a tracking number,
an order or ticket id), else called a reference.
"""

import re
from datetime import date

_KIND_NAMES = {
    "money": "Amount",
    "date": "Date",
    "time": "Time",
    "email": "Email",
    "phone": "Phone",
    "url": "Link",
    "name": "Name",
    "number": "Number",
    "version": "Version",
    "quote": "Quote",
}
# (pattern on the id, what it is), first match wins.
_ID_SHAPES = (
    (
        re.compile(r"^1Z[0-9A-Z]{16}$|^JD\d|^\d{10,}$|^[A-Z]{2}\d{9}[A-Z]{2}$|^3S[A-Z]{4}\d"),
        "Tracking number",
    ),
    (re.compile(r"^(?:ORD|PO)\b|^\d{3}-\d{7}-\d{7}$"), "Order number"),
    (re.compile(r"^(?:TCK|TKT|CS|CASE)\b|^INC\d|^#\d+$"), "Ticket id"),
    (re.compile(r"^INV\b"), "Invoice number"),
    (re.compile(r"^RMA\b|^RT\d{8}$"), "Return authorisation"),
    (re.compile(r"^(?:CN|CR)\b"), "Credit note"),
    (re.compile(r"^(?:RFD|RF)\b"), "Refund reference"),
    (re.compile(r"^(?:WC|CLM)\b"), "Claim number"),
)
MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]


def fact_label(fact: str) -> str:
    """``"kind:value"`` as "What: value", e.g. "Ticket id: TCK-5521", "Date: 6 Nov 2024".

    Unknown kinds keep their kind's name, capitalised; a string without a kind is returned
    as it is.
    """
    kind, separator, value = fact.partition(":")
    if not separator:
        return fact
    if kind == "id":
        return f"{_id_name(value)}: {value}"
    if kind == "date":
        return f"Date: {_readable_date(value)}"
    if kind == "quote":
        return f"Quote: \u201c{value}\u201d"
    return f"{_KIND_NAMES.get(kind, kind.capitalize())}: {value}"


def _id_name(value: str) -> str:
    for pattern, name in _ID_SHAPES:
        if pattern.search(value):
            return name
    return "Reference"


def _readable_date(value: str) -> str:
    """ "2024-11-06" -> "6 Nov 2024", "--11-06" -> "6 Nov", "2024-11" -> "Nov 2024"."""
    try:
        if value.startswith("--"):
            month, day = (int(part) for part in value[2:].split("-"))
            return f"{day} {MONTHS[month - 1]}"
        if len(value) == 7:
            year, month = (int(part) for part in value.split("-"))
            return f"{MONTHS[month - 1]} {year}"
        day_value = date.fromisoformat(value)
    except (ValueError, IndexError):
        return value
    return f"{day_value.day} {MONTHS[day_value.month - 1]} {day_value.year}"
