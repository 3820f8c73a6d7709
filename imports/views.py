"""The import API: thin, parse and call the service."""

from dataclasses import asdict

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from auditlog.events import actor_of
from convmem.api import tenant_of
from imports.serializers import ImportReportSerializer, ImportRequestSerializer
from imports.services import FAILED, IMPORTED, SKIPPED, conversations_import


class ImportView(APIView):
    @extend_schema(
        operation_id="imports_create",
        description="Import conversations: a ChatGPT or Claude data export's "
        "`conversations.json`, or a convmem JSON export, each conversation into a new thread "
        "(branches kept, the current branch active). Idempotent: a conversation imported "
        "before is `skipped`. A conversation that cannot be read is `failed`, with the "
        "reason, and the others are imported. Files over the request size limit go through "
        "`manage.py import_conversations`.",
        request=ImportRequestSerializer,
        responses={200: ImportReportSerializer},
    )
    def post(self, request: Request) -> Response:
        body = ImportRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        fields = body.validated_data
        report = conversations_import(
            tenant=tenant_of(request),
            actor=actor_of(request),
            data=fields["data"],
            fmt=fields.get("format"),
            user_ref=fields.get("user_ref"),
        )
        return Response(
            {
                "format": report.format,
                "imported": report.count(IMPORTED),
                "skipped": report.count(SKIPPED),
                "failed": report.count(FAILED),
                "results": [asdict(result) for result in report.results],
            }
        )
