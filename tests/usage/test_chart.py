"""The usage chart's axis and labels (``usage.chart``), as pure arithmetic."""

from decimal import Decimal

import pytest

from usage.chart import nice_top, tokens_text
from usage.currency import cost_amount, cost_text


@pytest.mark.parametrize(
    ("peak", "top"),
    [
        ("3", "4"),
        ("4", "4"),
        ("3.1", "4"),
        ("5", "8"),
        ("0.0042", "0.008"),
        ("1234", "2000"),
        ("0", "4"),
    ],
)
def test_the_axis_ends_at_a_round_number_over_the_peak(peak, top):
    assert nice_top(Decimal(peak)) == Decimal(top)


def test_token_counts_read_short():
    assert [tokens_text(Decimal(n)) for n in (812, 45_000, 1_234_567)] == ["812", "45k", "1.2M"]


def test_costs_read_to_the_cent_and_small_ones_keep_two_digits():
    assert cost_amount(Decimal("4.000000")) == "4.00"
    assert cost_amount(Decimal("1234.5")) == "1,234.50"
    assert cost_amount(Decimal("0.000420")) == "0.00042"
    assert cost_amount(Decimal(0)) == "0.00"
    assert cost_text(Decimal("2.5"), "USD") == "USD 2.50"
