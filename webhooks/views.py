"""The webhook endpoints API: thin, tenant-scoped (another tenant's endpoint is a 404)."""

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from convmem.api import tenant_of
from webhooks import services
from webhooks.models import WebhookEndpoint
from webhooks.serializers import (
    WebhookEndpointCreateSerializer,
    WebhookEndpointSerializer,
    WebhookEndpointWithSecretSerializer,
)


class WebhookEndpointListView(APIView):
    @extend_schema(
        operation_id="webhook_endpoints_list", responses={200: WebhookEndpointSerializer(many=True)}
    )
    def get(self, request: Request) -> Response:
        endpoints = WebhookEndpoint.objects.filter(tenant=tenant_of(request), active=True)
        return Response(WebhookEndpointSerializer(endpoints.order_by("pk"), many=True).data)

    @extend_schema(
        operation_id="webhook_endpoints_create",
        description="Subscribe a URL to events (`response.completed`, `response.failed`, "
        "`memo.ready`, `deletion.completed`). Answers the endpoint with its signing `secret` "
        "(shown once). URLs resolving to loopback or private addresses are refused (400 "
        "`webhook_url_refused`) unless the deployment allows them.",
        request=WebhookEndpointCreateSerializer,
        responses={201: WebhookEndpointWithSecretSerializer},
    )
    def post(self, request: Request) -> Response:
        data = WebhookEndpointCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        endpoint = services.webhook_endpoint_create(
            tenant=tenant_of(request), **data.validated_data
        )
        return Response(WebhookEndpointWithSecretSerializer(endpoint).data, status=201)


def _endpoint(request: Request, endpoint_id: str) -> WebhookEndpoint:
    return get_object_or_404(
        WebhookEndpoint, tenant=tenant_of(request), public_id=endpoint_id, active=True
    )


class WebhookEndpointView(APIView):
    @extend_schema(
        operation_id="webhook_endpoints_retrieve", responses={200: WebhookEndpointSerializer}
    )
    def get(self, request: Request, endpoint_id: str) -> Response:
        return Response(WebhookEndpointSerializer(_endpoint(request, endpoint_id)).data)

    @extend_schema(operation_id="webhook_endpoints_destroy", responses={204: None})
    def delete(self, request: Request, endpoint_id: str) -> Response:
        endpoint = _endpoint(request, endpoint_id)
        endpoint.active = False
        endpoint.save(update_fields=["active"])
        return Response(status=204)


class WebhookSecretRotateView(APIView):
    @extend_schema(
        operation_id="webhook_endpoints_rotate_secret",
        request=None,
        description="A new signing secret; the previous one keeps signing beside it (two "
        "`v1,` signatures) for `CONVMEM_WEBHOOKS_ROTATION_HOURS`.",
        responses={200: WebhookEndpointWithSecretSerializer},
    )
    def post(self, request: Request, endpoint_id: str) -> Response:
        endpoint = services.webhook_secret_rotate(endpoint=_endpoint(request, endpoint_id))
        return Response(WebhookEndpointWithSecretSerializer(endpoint).data)
