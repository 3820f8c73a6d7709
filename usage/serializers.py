"""Shapes of the usage API."""

from typing import Any

from rest_framework import serializers

from convmem.errors import InvalidRequest
from usage.selectors import FIRST_DAY, GROUPINGS, LAST_DAY


class UsageQuerySerializer(serializers.Serializer):
    """``from`` / ``to`` (dates, both included; default: the last 30 days), ``group_by``,
    ``user_ref``. (``from`` is a Python keyword, hence ``get_fields``.)"""

    def get_fields(self) -> dict[str, serializers.Field]:
        return {
            "from": serializers.DateField(required=False),
            "to": serializers.DateField(required=False),
            "group_by": serializers.ChoiceField(choices=GROUPINGS, default="day"),
            "user_ref": serializers.CharField(required=False, max_length=255),
        }

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        # A query parameter given empty (`?from=`) is malformed, not absent (DRF skips it).
        empty = [name for name in self.fields if self.initial_data.get(name) == ""]
        if empty:
            raise serializers.ValidationError({name: "must not be empty." for name in empty})
        # Checked here, before the view counts 29 days back from `to` (which would overflow
        # near year 1), with the code `usage_rollup` gives every bad period.
        if any(
            name in attrs and not FIRST_DAY <= attrs[name] <= LAST_DAY for name in ("from", "to")
        ):
            raise InvalidRequest(
                f"the days of a rollup must be from {FIRST_DAY} to {LAST_DAY}.",
                code="invalid_period",
            )
        return attrs


class UsageSerializer(serializers.Serializer):
    turns = serializers.IntegerField(help_text="Assistant turns with usage (respond or append).")
    prompt_tokens = serializers.IntegerField()
    completion_tokens = serializers.IntegerField()
    cached_tokens = serializers.IntegerField(
        help_text="Of prompt_tokens, those the provider served from its prompt cache."
    )
    cache_write_tokens = serializers.IntegerField(
        help_text="Of prompt_tokens, those the provider wrote to its prompt cache."
    )
    memos = serializers.IntegerField(help_text="Memos whose writer reported tokens.")
    memo_prompt_tokens = serializers.IntegerField()
    memo_completion_tokens = serializers.IntegerField()
    total_tokens = serializers.IntegerField()
    cost = serializers.DecimalField(
        max_digits=30,
        decimal_places=6,
        help_text="At the threads' model profile prices (per million tokens), in `currency`.",
    )


class UsagePeriodSerializer(UsageSerializer):
    period = serializers.DateField(help_text="The day, or the first day of the month.")

    def to_representation(self, instance: Any) -> dict[str, Any]:
        period, usage = instance
        return {"period": period.isoformat(), **UsageSerializer(usage).data}


class UsageRollupSerializer(serializers.Serializer):
    def get_fields(self) -> dict[str, serializers.Field]:
        return {
            "from": serializers.DateField(source="start"),
            "to": serializers.DateField(source="end"),
            "group_by": serializers.CharField(),
            "user_ref": serializers.CharField(allow_null=True),
            "currency": serializers.CharField(
                help_text="ISO 4217 code of the costs (the tenant's model profiles')."
            ),
            "totals": UsageSerializer(),
            "results": UsagePeriodSerializer(many=True, source="period_items"),
        }
