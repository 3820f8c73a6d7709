"""The usage page's bar chart, laid out on the server as SVG geometry: one bar per period, a
y axis with round tick values, x labels spaced so they never overlap, and each bar's value
written above it when there is room. No script and nothing fetched from elsewhere: the page's
template only draws what this returns.
"""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal

from usage.currency import cost_amount
from usage.selectors import Rollup, Usage

PLOT_WIDTH = 800
PLOT_HEIGHT = 200
# Room around the plot, in the SVG's units: tick values on the left, dates below.
MARGIN_LEFT = 64
MARGIN_BOTTOM = 44
MARGIN_TOP = 22
# Half a date label on the right: the last period's label is centred under its bar.
MARGIN_RIGHT = 36
Y_TICKS = 4
# x labels: at most one per this many SVG units (a "2026-03-05" at 11 px is ~60 units).
X_LABEL_SPACING = 70
# Bars narrower than this get their value written upright (rotated), not across.
VALUE_LABEL_MIN_WIDTH = 34
# Room a value needs above its bar (across, upright); a taller bar carries it inside instead.
VALUE_ROOM = {False: 14, True: 48}
NICE_STEPS = (1, 2, 2.5, 5, 10)


@dataclass(frozen=True)
class Bar:
    period: date
    usage: Usage
    value: Decimal
    value_text: str
    x: float
    y: float
    width: float
    height: float

    @property
    def middle(self) -> float:
        return self.x + self.width / 2

    def value_inside(self, upright: bool) -> bool:
        """Whether the value is written inside the bar's top (no room above it)."""
        return self.y < VALUE_ROOM[upright]


@dataclass(frozen=True)
class Tick:
    y: float
    text: str


@dataclass(frozen=True)
class XLabel:
    x: float
    text: str


@dataclass(frozen=True)
class Chart:
    metric: str  # "cost" or "tokens"
    bars: list[Bar]
    y_ticks: list[Tick]
    x_labels: list[XLabel]
    # Values written upright (bars too narrow for them across).
    upright_values: bool
    width: int = PLOT_WIDTH
    height: int = PLOT_HEIGHT

    @property
    def labelled_bars(self) -> list[tuple[Bar, bool]]:
        """(bar, value inside it) for every bar with a value to write."""
        return [(b, b.value_inside(self.upright_values)) for b in self.bars if b.value > 0]

    @property
    def view_box(self) -> str:
        return (
            f"{-MARGIN_LEFT} {-MARGIN_TOP} {self.width + MARGIN_LEFT + MARGIN_RIGHT} "
            f"{self.height + MARGIN_TOP + MARGIN_BOTTOM}"
        )


def periods(start: date, end: date, group_by: str) -> list[date]:
    """Every day (or first day of a month) of the period: bars for empty periods too."""
    found, current = [], start if group_by == "day" else start.replace(day=1)
    while current <= end:
        found.append(current)
        if group_by == "day":
            current += timedelta(days=1)
        else:
            current = (current.replace(day=28) + timedelta(days=4)).replace(day=1)
    return found


def nice_top(peak: Decimal, ticks: int = Y_TICKS) -> Decimal:
    """The smallest round axis top over ``peak``: ``ticks`` steps of 1, 2, 2.5, 5 or 10 times
    a power of ten (so 4.0 → 4, 3.1 → 4, 0.0042 → 0.008, 1234 → 2000)."""
    if peak <= 0:
        return Decimal(ticks)
    raw = peak / ticks
    power = Decimal(10) ** raw.adjusted()
    # raw < 10 * power by the definition of ``adjusted``, so the last step always fits.
    step = next(Decimal(str(s)) for s in NICE_STEPS if Decimal(str(s)) * power >= raw)
    return step * power * ticks


def tokens_text(value: Decimal) -> str:
    """1234567 → "1.2M", 45000 → "45k", 812 → "812"."""
    number = float(value)
    for size, suffix in ((1e6, "M"), (1e3, "k")):
        if number >= size:
            return f"{number / size:.1f}".removesuffix(".0") + suffix
    return f"{number:g}"


def usage_chart(rollup: Rollup) -> Chart:
    """Bars of cost per period; of tokens when nothing has a price (every cost 0)."""
    by_cost = rollup.totals.cost > 0
    value: Callable[[Usage], Decimal] = (
        (lambda u: u.cost) if by_cost else (lambda u: Decimal(u.total_tokens))
    )
    text = cost_amount if by_cost else tokens_text
    shown = periods(rollup.start, rollup.end, rollup.group_by)
    peak = max((value(u) for u in rollup.periods.values()), default=Decimal(0))
    top = nice_top(peak)
    slot = PLOT_WIDTH / max(len(shown), 1)
    bars = []
    for index, period in enumerate(shown):
        usage = rollup.periods.get(period, Usage())
        amount = value(usage)
        height = float(amount / top) * PLOT_HEIGHT
        bars.append(
            Bar(
                period=period,
                usage=usage,
                value=amount,
                value_text=text(amount),
                x=index * slot + slot * 0.1,
                y=PLOT_HEIGHT - height,
                width=slot * 0.8,
                height=height,
            )
        )
    label_every = max(1, round(X_LABEL_SPACING / slot + 0.49))
    date_format = "%Y-%m-%d" if rollup.group_by == "day" else "%Y-%m"
    return Chart(
        metric="cost" if by_cost else "tokens",
        bars=bars,
        y_ticks=[
            Tick(y=PLOT_HEIGHT - PLOT_HEIGHT * i / Y_TICKS, text=text(top * i / Y_TICKS))
            for i in range(Y_TICKS + 1)
        ],
        x_labels=[
            XLabel(x=bar.middle, text=bar.period.strftime(date_format))
            for bar in bars[::label_every]
        ],
        upright_values=slot * 0.8 < VALUE_LABEL_MIN_WIDTH,
    )
