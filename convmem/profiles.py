"""One rule for "the thread's model profile, else the settings default": every app asks here.

A thread without a profile (or a profile that leaves ``model`` blank) runs on the settings'
defaults; ``profile_setting`` is the one place that knows which setting backs which field.
"""

from decimal import Decimal
from typing import Any

from django.conf import settings

from convmem.models import ModelProfile

# Profile field -> the setting used without a profile.
DEFAULT_SETTINGS = {
    "window_tokens": "CONVMEM_DEFAULT_WINDOW_TOKENS",
    "reserve_tokens": "CONVMEM_DEFAULT_RESERVE_TOKENS",
    "encoding": "CONVMEM_DEFAULT_ENCODING",
    "min_recent_turns": "CONVMEM_DEFAULT_MIN_RECENT_TURNS",
    "memo_max_tokens": "CONVMEM_DEFAULT_MEMO_MAX_TOKENS",
    "high_water": "CONVMEM_DEFAULT_HIGH_WATER",
    "low_water": "CONVMEM_DEFAULT_LOW_WATER",
    "tool_result_elide_tokens": "CONVMEM_DEFAULT_TOOL_RESULT_ELIDE_TOKENS",
    "model": "CONVMEM_CHAT_MODEL",
    "prompt_price": "CONVMEM_DEFAULT_PROMPT_PRICE",
    "completion_price": "CONVMEM_DEFAULT_COMPLETION_PRICE",
    "currency": "CONVMEM_DEFAULT_CURRENCY",
    "recall": "CONVMEM_DEFAULT_RECALL",
    "recall_max_tokens": "CONVMEM_DEFAULT_RECALL_MAX_TOKENS",
    "cached_prompt_price": "CONVMEM_DEFAULT_CACHED_PROMPT_PRICE",
    "cache_write_price": "CONVMEM_DEFAULT_CACHE_WRITE_PRICE",
    "cache_breakpoints": "CONVMEM_DEFAULT_CACHE_BREAKPOINTS",
}
# Settings given as text that the profile field holds as a number.
_DECIMALS = {"prompt_price", "completion_price", "cached_prompt_price", "cache_write_price"}
# Fields a profile may leave empty (None) to mean "the prompt price".
_OPTIONAL_PRICES = {"cached_prompt_price", "cache_write_price"}


def profile_setting(profile: ModelProfile | None, name: str) -> Any:
    """``profile``'s value of field ``name``; without a profile (or with a blank ``model``),
    the setting in ``DEFAULT_SETTINGS``. An optional price left empty (on the profile, or in
    the setting without one) is None."""
    if profile is not None:
        value = getattr(profile, name)
        if value != "" or name in _OPTIONAL_PRICES:
            return value
    value = getattr(settings, DEFAULT_SETTINGS[name])
    if name in _OPTIONAL_PRICES and value in ("", None):
        return None
    return Decimal(value) if name in _DECIMALS else value
