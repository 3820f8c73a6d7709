"""``{{ amount|cost:currency }}`` → "USD 4.00" (``usage.currency.cost_text``)."""

from decimal import Decimal

from django import template

from usage.currency import cost_text

register = template.Library()


@register.filter
def cost(amount: Decimal, currency: str) -> str:
    return cost_text(Decimal(amount), currency)
