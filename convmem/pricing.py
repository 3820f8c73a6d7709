"""Prices per million tokens: a thread's model profile's, else the settings' defaults."""

from dataclasses import dataclass
from decimal import Decimal

from django.conf import settings

from convmem.models import ModelProfile

MILLION = Decimal(1_000_000)
# Costs are shown to the millionth of a currency unit (the profile prices' precision).
COST_PLACES = Decimal("0.000001")


@dataclass(frozen=True)
class Prices:
    prompt: Decimal
    completion: Decimal


def default_prices() -> Prices:
    return Prices(
        prompt=Decimal(settings.CONVMEM_DEFAULT_PROMPT_PRICE),
        completion=Decimal(settings.CONVMEM_DEFAULT_COMPLETION_PRICE),
    )


def profile_prices(profile: ModelProfile | None) -> Prices:
    if profile is None:
        return default_prices()
    return Prices(prompt=profile.prompt_price, completion=profile.completion_price)


def tokens_cost(*, prices: Prices, prompt_tokens: int, completion_tokens: int) -> Decimal:
    """What the tokens cost at these prices, rounded to ``COST_PLACES``."""
    cost = (prompt_tokens * prices.prompt + completion_tokens * prices.completion) / MILLION
    return cost.quantize(COST_PLACES)
