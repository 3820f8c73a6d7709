"""Prices per million tokens: a model profile's, else the settings' defaults.

A cost is worked out once, when the tokens are stored (an assistant turn with usage, a memo the
writer reported tokens for), at the prices of that moment, and kept exactly (12 decimal places:
integer tokens times 6-place prices over a million); a later price change never re-prices the
past. Reports round to ``COST_PLACES``.
"""

from dataclasses import dataclass
from decimal import Decimal

from convmem.models import ModelProfile
from convmem.profiles import profile_setting

MILLION = Decimal(1_000_000)
# Costs are shown to the millionth of a currency unit (the profile prices' precision).
COST_PLACES = Decimal("0.000001")
# Stored costs are exact: this many decimal places, this many digits in all.
STORED_COST_PLACES = 12
STORED_COST_DIGITS = 30


@dataclass(frozen=True)
class Prices:
    """Per million tokens. ``cached``: prompt tokens served from the provider's prompt cache;
    ``cache_write``: prompt tokens written to it (both default to the prompt price)."""

    prompt: Decimal
    completion: Decimal
    cached: Decimal | None = None
    cache_write: Decimal | None = None


def tenant_currency(tenant_id: int) -> str:
    """The currency of a tenant's costs: its profiles' (they share one), else the default."""
    profile = ModelProfile.objects.filter(tenant_id=tenant_id).only("currency").first()
    return profile_currency(profile)


def profile_currency(profile: ModelProfile | None) -> str:
    return profile_setting(profile, "currency")


def profile_prices(profile: ModelProfile | None) -> Prices:
    return Prices(
        prompt=profile_setting(profile, "prompt_price"),
        completion=profile_setting(profile, "completion_price"),
        cached=profile_setting(profile, "cached_prompt_price"),
        cache_write=profile_setting(profile, "cache_write_price"),
    )


def exact_cost(
    *,
    prices: Prices,
    prompt_tokens: int,
    completion_tokens: int,
    cached_tokens: int = 0,
    cache_write_tokens: int = 0,
) -> Decimal:
    """What the tokens cost at these prices, exactly (the value stored). ``cached_tokens`` and
    ``cache_write_tokens`` are part of ``prompt_tokens``, priced at their own prices."""
    plain = prompt_tokens - cached_tokens - cache_write_tokens
    cached = prices.prompt if prices.cached is None else prices.cached
    write = prices.prompt if prices.cache_write is None else prices.cache_write
    return (
        plain * prices.prompt
        + cached_tokens * cached
        + cache_write_tokens * write
        + completion_tokens * prices.completion
    ) / MILLION


def usage_cost(profile: ModelProfile | None, usage: dict) -> Decimal:
    """The stored cost of a model's usage report (``prompt_tokens``, ``completion_tokens``,
    ``cached_tokens``, ``cache_write_tokens``) at the profile's current prices."""
    return exact_cost(
        prices=profile_prices(profile),
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
        cached_tokens=int(usage.get("cached_tokens") or 0),
        cache_write_tokens=int(usage.get("cache_write_tokens") or 0),
    )


def shown_cost(cost: Decimal | None) -> Decimal:
    """A stored cost (or a sum of them) as reports show it."""
    return Decimal(cost or 0).quantize(COST_PLACES)
