"""The currency that costs are shown in, and how a cost reads on a staff page.

Costs are stored as plain decimals (``convmem.pricing``): the prices of a model profile are
"per million tokens, in the tenant's currency", and no currency is stored yet. Every page that
shows a cost names its currency through :func:`cost_currency`, so when model profiles gain a
``currency`` field the switch is this one function (return the tenant's default profile's
currency), not a hunt through templates.
"""

from decimal import ROUND_HALF_UP, Decimal

from convmem.models import Tenant

DEFAULT_CURRENCY = "USD"
CENT = Decimal("0.01")
# Below a cent, costs keep this many significant digits ("USD 0.00042") rather than read 0.00.
SMALL_COST_DIGITS = 2


def cost_currency(tenant: Tenant) -> str:
    """The ISO 4217 code ``tenant``'s costs are in. Every profile prices in USD for now."""
    return DEFAULT_CURRENCY


def cost_amount(amount: Decimal) -> str:
    """``Decimal("4.000000")`` → "4.00"; ``Decimal("0.000420")`` → "0.00042"; 0 → "0.00".

    To the cent, except amounts under a cent, which keep two significant digits: a page of
    cheap memo calls should not read as free.
    """
    if amount == 0 or abs(amount) >= CENT:
        return f"{amount.quantize(CENT, rounding=ROUND_HALF_UP):,}"
    exponent = amount.adjusted() - SMALL_COST_DIGITS + 1
    small = amount.quantize(Decimal(1).scaleb(exponent), rounding=ROUND_HALF_UP)
    return f"{small:f}"


def cost_text(amount: Decimal, currency: str) -> str:
    """ "USD 4.00": the amount with its currency code (codes read the same in every locale)."""
    return f"{currency} {cost_amount(amount)}"
