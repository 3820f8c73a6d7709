"""How an assembly record's plan, budget and token counts are stored, and how they are shown.

A record is written once per turn and kept as long as the thread, so what it repeats every turn
is most of what it costs (issue 24: a 5,000-turn conversation stored four times its message
content). It stores only what differs from what every record would say, and readers put the
rest back, so the admin, the export and ``/respond`` see the same shapes as before:

- the plan without its entries at their defaults (no dropped or elided ids, no memo range, no
  memo asked for, nothing lost from the middle, the one input format);
- the budget's curator policy without the values equal to the policy its assembler version
  starts from (``POLICY_DEFAULTS``, pinned per version: a record of an older version is shown
  with the defaults that version had);
- the token counts without ``window`` and ``reserve``, which the budget holds, and — when they
  add up, as the curator writes them — without the sections at zero, the ``total`` (their sum)
  and ``free`` (what the window leaves after the reserve and the total).

Rows written before this form keep their full JSON; showing them is the identity.
"""

import json
from typing import Any

# The default of each plan entry; an entry equal to its default is not stored.
PLAN_DEFAULTS: dict[str, Any] = {
    "format": "openai.chat_completions",
    "dropped": [],
    "elided": [],
    "covered": None,
    "memo_requested": None,
    "memo_lag": {"turns": 0, "tokens": 0, "first_id": None, "last_id": None},
}

# ``compaction.curator.Policy()`` as each assembler version knew it. Pinned here, not read from
# the class: a later default must not change what an older record says it ran with
# (tests/compaction/test_record_form.py checks the current version against the class).
_CURATOR4_POLICY: dict[str, Any] = {
    "min_recent_turns": 4,
    "memo_max_tokens": 512,
    "high_water": 0.85,
    "low_water": 0.1,
    "message_overhead": 4,
    "segment_tokens": 8192,
    "min_memo_tokens": 96,
    "recall_max_tokens": 0,
}
POLICY_DEFAULTS: dict[str, dict[str, Any]] = {
    "curator/4": _CURATOR4_POLICY,
    # curator/5 changed when tool results are elided and which memo a block boundary moves to,
    # not the policy's fields or defaults.
    "curator/5": dict(_CURATOR4_POLICY),
}

_BUDGET_IN_TOKENS = ("window", "reserve")


def _copy(value: Any) -> Any:
    return json.loads(json.dumps(value))


def plan_stored(plan: dict[str, Any]) -> dict[str, Any]:
    """``plan`` without the entries at their defaults."""
    return {key: value for key, value in plan.items() if PLAN_DEFAULTS.get(key, ...) != value}


def plan_shown(stored: dict[str, Any] | None) -> dict[str, Any]:
    """The whole plan of a stored one; ``{}`` (a record from before plans were kept) stays
    empty."""
    if not stored:
        return {}
    return {**_copy(PLAN_DEFAULTS), **stored}


def budget_stored(budget: dict[str, Any], version: str) -> dict[str, Any]:
    """``budget`` with only the policy values that differ from ``version``'s defaults."""
    defaults = POLICY_DEFAULTS.get(version)
    if defaults is None or "policy" not in budget:
        return budget
    policy = {k: v for k, v in budget["policy"].items() if defaults.get(k, ...) != v}
    return {**budget, "policy": policy}


def budget_shown(stored: dict[str, Any] | None, version: str) -> dict[str, Any]:
    """The whole budget of a stored one, its policy filled from ``version``'s defaults."""
    if not stored:
        return {}
    defaults = POLICY_DEFAULTS.get(version)
    if defaults is None or "policy" not in stored:
        return stored
    return {**stored, "policy": {**defaults, **stored["policy"]}}


# The per-section counts in the order the curator writes them; ``total`` is their sum.
_SECTIONS = ("system", "memo", "anchor", "retrieved", "recent", "recalled")
_TOKEN_ORDER = ("window", "reserve", "system", "memo", "anchor", "retrieved", "recent", "total")


def tokens_stored(tokens: dict[str, Any]) -> dict[str, Any]:
    """The per-section counts without what the budget holds (window, reserve); without the
    zero sections, the total and the free tokens too when those follow from the sections."""
    stored = {key: value for key, value in tokens.items() if key not in _BUDGET_IN_TOKENS}
    if not _derivable(tokens):
        return stored
    return {key: stored[key] for key in _SECTIONS if stored.get(key)}


def _derivable(tokens: dict[str, Any]) -> bool:
    known = set(_SECTIONS) | {"total", "free", *_BUDGET_IN_TOKENS}
    if tokens.keys() - known or not {"total", "free", *_BUDGET_IN_TOKENS} <= tokens.keys():
        return False
    total = sum(tokens.get(key, 0) for key in _SECTIONS)
    return tokens["total"] == total and tokens["free"] == (
        tokens["window"] - tokens["reserve"] - total
    )


def tokens_shown(stored: dict[str, Any] | None, budget: dict[str, Any] | None) -> dict[str, Any]:
    """The counts with the budget's window and reserve back in (first, as they were written),
    and, for counts stored without their total, the zero sections, the total and the free
    tokens."""
    stored = stored or {}
    budget = budget or {}
    restored = {key: budget[key] for key in _BUDGET_IN_TOKENS if key in budget}
    if not stored or "total" in stored:
        return {**restored, **stored}
    sections = {key: stored.get(key, 0) for key in _SECTIONS}
    total = sum(sections.values())
    whole = {**restored, **sections, "total": total}
    shown = {key: whole[key] for key in _TOKEN_ORDER if key in whole}
    shown["recalled"] = sections["recalled"]
    shown["free"] = restored.get("window", 0) - restored.get("reserve", 0) - total
    return shown
