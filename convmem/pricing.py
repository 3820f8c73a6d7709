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
    prompt: Decimal
    completion: Decimal


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
    )


def exact_cost(*, prices: Prices, prompt_tokens: int, completion_tokens: int) -> Decimal:
    """What the tokens cost at these prices, exactly (the value stored)."""
    return (prompt_tokens * prices.prompt + completion_tokens * prices.completion) / MILLION


def usage_cost(profile: ModelProfile | None, usage: dict) -> Decimal:
    """The stored cost of a model's usage report (``prompt_tokens``, ``completion_tokens``) at
    the profile's current prices."""
    return exact_cost(
        prices=profile_prices(profile),
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
    )


def shown_cost(cost: Decimal | None) -> Decimal:
    """A stored cost (or a sum of them) as reports show it."""
    return Decimal(cost or 0).quantize(COST_PLACES)
