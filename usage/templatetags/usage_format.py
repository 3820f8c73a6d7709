"""``{{ amount|cost:currency }}`` → "USD 4.00" (``usage.currency.cost_text``); in a column
whose heading names the currency, ``{{ amount|amount }}`` → "4.00"."""

from decimal import Decimal

from django import template

from usage.currency import cost_amount, cost_text

register = template.Library()


@register.filter
def cost(amount: Decimal, currency: str) -> str:
    return cost_text(Decimal(amount), currency)


@register.filter
def amount(value: Decimal) -> str:
    return cost_amount(Decimal(value))
