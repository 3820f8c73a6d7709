"""Usage and cost rollups: tokens the model reported for assistant turns and for memos, and the
costs stored with them, summed per day or month in the database.

Two aggregate queries per rollup (turns, memos), each bounded by the period: turns are read
through the partial index on ``Message.created_at`` where ``usage`` is set, memos by their
threads. Each cost was worked out when its row was stored, at the thread's profile prices of
that moment (``convmem.pricing``): changing a price never re-prices past periods. Memos are
priced like the turns of their thread, whatever model wrote them; a memo written by the
embedded backend reports no tokens and costs nothing.
"""

from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from decimal import Decimal

from django.db.models import (
    Count,
    DateTimeField,
    DecimalField,
    Q,
    QuerySet,
    Sum,
    Value,
)
from django.db.models.fields.json import KT
from django.db.models.functions import Cast, Coalesce, Trunc
from django.utils import timezone

from compaction.models import Summary
from convmem.models import Tenant
from convmem.pricing import COST_PLACES, tenant_currency
from threads.models import Message

GROUPINGS = ("day", "month")
# The longest period one rollup covers, per grouping (bounds the rows and the work).
MAX_DAYS = {"day": 366, "month": 3660}
TOP_USERS = 10
# The days a rollup may name: the end of the calendar is refused, not reached by the date
# arithmetic (the day after the last day, 29 days before it) where it would overflow.
FIRST_DAY = date(1970, 1, 1)
LAST_DAY = date(9998, 12, 31)
_MONEY = DecimalField(max_digits=30, decimal_places=12)


@dataclass
class Usage:
    """Tokens and cost of one period (or one end user, or the whole rollup)."""

    turns: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # Of the turns' prompt tokens: served from and written to the provider's prompt cache.
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    memos: int = 0
    memo_prompt_tokens: int = 0
    memo_completion_tokens: int = 0
    cost: Decimal = Decimal(0)

    @property
    def total_tokens(self) -> int:
        return (
            self.prompt_tokens
            + self.completion_tokens
            + self.memo_prompt_tokens
            + self.memo_completion_tokens
        )

    def add(self, other: "Usage") -> None:
        for name in (
            "turns",
            "prompt_tokens",
            "completion_tokens",
            "cached_tokens",
            "cache_write_tokens",
            "memos",
            "memo_prompt_tokens",
            "memo_completion_tokens",
            "cost",
        ):
            setattr(self, name, getattr(self, name) + getattr(other, name))


@dataclass
class Rollup:
    start: date
    end: date
    group_by: str
    user_ref: str | None
    currency: str
    periods: dict[date, Usage] = field(default_factory=dict)
    totals: Usage = field(default_factory=Usage)

    @property
    def period_items(self) -> list[tuple[date, Usage]]:
        return list(self.periods.items())


class InvalidPeriod(ValueError):
    """``str()`` says what is wrong with the period or grouping."""


def period_check(*, start: date, end: date, group_by: str) -> None:
    if group_by not in GROUPINGS:
        raise InvalidPeriod(f"group_by must be one of {', '.join(GROUPINGS)}.")
    if not FIRST_DAY <= start <= LAST_DAY or not FIRST_DAY <= end <= LAST_DAY:
        raise InvalidPeriod(f"the days of a rollup must be from {FIRST_DAY} to {LAST_DAY}.")
    if end < start:
        raise InvalidPeriod("to must not be before from.")
    if (end - start).days + 1 > MAX_DAYS[group_by]:
        raise InvalidPeriod(
            f"a rollup by {group_by} covers at most {MAX_DAYS[group_by]} days; "
            "narrow the period or group by month."
        )


def _bounds(start: date, end: date) -> tuple[datetime, datetime]:
    """[start 00:00, the day after end 00:00) in the current time zone."""
    zone = timezone.get_current_timezone()
    return (
        datetime.combine(start, time.min, tzinfo=zone),
        datetime.combine(end + timedelta(days=1), time.min, tzinfo=zone),
    )


def _cost() -> Coalesce:
    """The sum of the costs stored with the rows (each at the prices of its moment)."""
    return Coalesce(Sum("cost"), Value(0, output_field=_MONEY), output_field=_MONEY)


def _turns(tenant: Tenant, start: datetime, end: datetime) -> QuerySet[Message]:
    return Message.objects.filter(
        usage__isnull=False, created_at__gte=start, created_at__lt=end, thread__tenant=tenant
    )


def _memos(tenant: Tenant, start: datetime, end: datetime) -> QuerySet[Summary]:
    return Summary.objects.filter(
        Q(prompt_tokens__gt=0) | Q(completion_tokens__gt=0),
        thread__tenant=tenant,
        created_at__gte=start,
        created_at__lt=end,
    )


# Read as decimals, not bigints: a count stored before usage was bounded (10^19 and more) must
# not overflow the cast or the sum; PostgreSQL sums numerics without a limit.
_TOKENS = DecimalField(max_digits=40, decimal_places=0)
_PROMPT = Cast(KT("usage__prompt_tokens"), _TOKENS)
_COMPLETION = Cast(KT("usage__completion_tokens"), _TOKENS)
_CACHED = Cast(KT("usage__cached_tokens"), _TOKENS)
_CACHE_WRITE = Cast(KT("usage__cache_write_tokens"), _TOKENS)


def _turn_sums(turns: QuerySet[Message], key: str) -> dict[object, Usage]:
    rows = turns.values(key).annotate(
        n=Count("id"),
        prompt=Sum(_PROMPT),
        completion=Sum(_COMPLETION),
        cached=Sum(_CACHED),
        cache_write=Sum(_CACHE_WRITE),
        money=_cost(),
    )
    return {
        row[key]: Usage(
            turns=row["n"],
            prompt_tokens=int(row["prompt"] or 0),
            completion_tokens=int(row["completion"] or 0),
            cached_tokens=int(row["cached"] or 0),
            cache_write_tokens=int(row["cache_write"] or 0),
            cost=Decimal(row["money"] or 0),
        )
        for row in rows
    }


def _memo_sums(memos: QuerySet[Summary], key: str) -> dict[object, Usage]:
    rows = memos.values(key).annotate(
        n=Count("id"),
        prompt=Sum("prompt_tokens"),
        completion=Sum("completion_tokens"),
        money=_cost(),
    )
    return {
        row[key]: Usage(
            memos=row["n"],
            memo_prompt_tokens=row["prompt"] or 0,
            memo_completion_tokens=row["completion"] or 0,
            cost=Decimal(row["money"] or 0),
        )
        for row in rows
    }


def _as_date(value: date | datetime) -> date:
    return value.date() if isinstance(value, datetime) else value


def usage_rollup(
    *, tenant: Tenant, start: date, end: date, group_by: str = "day", user_ref: str | None = None
) -> Rollup:
    """The tenant's usage from ``start`` to ``end`` (dates, both included), per ``group_by``
    period, optionally for one end user; periods without usage are left out. Raises
    ``InvalidPeriod``."""
    period_check(start=start, end=end, group_by=group_by)
    since, until = _bounds(start, end)
    turns, memos = _turns(tenant, since, until), _memos(tenant, since, until)
    if user_ref is not None:
        turns, memos = (
            turns.filter(thread__user_ref=user_ref),
            memos.filter(thread__user_ref=user_ref),
        )
    period = Trunc("created_at", group_by, output_field=DateTimeField())
    rollup = Rollup(
        start=start,
        end=end,
        group_by=group_by,
        user_ref=user_ref,
        currency=tenant_currency(tenant.pk),
    )
    for sums in (
        _turn_sums(turns.annotate(period=period), "period"),
        _memo_sums(memos.annotate(period=period), "period"),
    ):
        for when, usage in sums.items():
            rollup.periods.setdefault(_as_date(when), Usage()).add(usage)
    rollup.periods = dict(sorted(rollup.periods.items()))
    for usage in rollup.periods.values():
        usage.cost = usage.cost.quantize(COST_PLACES)
        rollup.totals.add(usage)
    return rollup


def top_users(
    *, tenant: Tenant, start: date, end: date, limit: int = TOP_USERS
) -> list[tuple[str, Usage]]:
    """The end users whose turns cost most in the period (with their memos' usage added)."""
    since, until = _bounds(start, end)
    ranked = (
        _turns(tenant, since, until)
        .values("thread__user_ref")
        .annotate(money=_cost())
        .order_by("-money", "thread__user_ref")
        .values_list("thread__user_ref", flat=True)[:limit]
    )
    refs = list(ranked)
    turns = _turn_sums(
        _turns(tenant, since, until).filter(thread__user_ref__in=refs), "thread__user_ref"
    )
    memos = _memo_sums(
        _memos(tenant, since, until).filter(thread__user_ref__in=refs), "thread__user_ref"
    )
    users = []
    for ref in refs:
        usage = Usage()
        usage.add(turns.get(ref, Usage()))
        usage.add(memos.get(ref, Usage()))
        usage.cost = usage.cost.quantize(COST_PLACES)
        users.append((ref, usage))
    return users
