"""Usage API. Thin: parse the period, call the rollup selector, serialize."""

from datetime import timedelta

from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from convmem.api import tenant_of
from convmem.errors import InvalidRequest
from usage.selectors import FIRST_DAY, GROUPINGS, LAST_DAY, InvalidPeriod, usage_rollup
from usage.serializers import UsageQuerySerializer, UsageRollupSerializer

DEFAULT_DAYS = 30


class UsageView(APIView):
    @extend_schema(
        operation_id="usage_rollup",
        description="Tokens and cost of the caller's tenant over a period, per day or month: "
        "assistant turns with usage (stored by `/respond`, or appended with `usage`) and "
        "memos whose writer reported tokens, priced at each thread's model profile prices "
        "(per million tokens; the `CONVMEM_DEFAULT_*_PRICE` settings without a profile). "
        "`user_ref` narrows it to one end user. Periods without usage are left out. A rollup "
        "by day covers at most 366 days.",
        parameters=[
            OpenApiParameter(
                "from",
                OpenApiTypes.DATE,
                description="First day (default: 29 days before `to`). Days from "
                f"{FIRST_DAY} to {LAST_DAY}; others are a 400.",
            ),
            OpenApiParameter(
                "to",
                OpenApiTypes.DATE,
                description=f"Last day (default: today), from {FIRST_DAY} to {LAST_DAY}.",
            ),
            OpenApiParameter("group_by", OpenApiTypes.STR, enum=list(GROUPINGS)),
            OpenApiParameter("user_ref", {"type": "string", "minLength": 1, "maxLength": 255}),
        ],
        responses=UsageRollupSerializer,
    )
    def get(self, request: Request) -> Response:
        query = UsageQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        fields = query.validated_data
        end = fields.get("to") or timezone.localdate()
        start = fields.get("from") or end - timedelta(days=DEFAULT_DAYS - 1)
        try:
            rollup = usage_rollup(
                tenant=tenant_of(request),
                start=start,
                end=end,
                group_by=fields["group_by"],
                user_ref=fields.get("user_ref"),
            )
        except InvalidPeriod as error:
            raise InvalidRequest(str(error), code="invalid_period") from None
        return Response(UsageRollupSerializer(rollup).data)
