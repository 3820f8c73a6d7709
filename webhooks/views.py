"""The webhook endpoints API: thin, tenant-scoped (another tenant's endpoint is a 404)."""

from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from convmem.api import tenant_of
from convmem.pagination import LIMIT_DESCRIPTION, LIMIT_SCHEMA, NewestFirstPagination
from webhooks import selectors, services
from webhooks.models import WebhookEndpoint
from webhooks.serializers import (
    WebhookDeliverySerializer,
    WebhookEndpointCreateSerializer,
    WebhookEndpointSerializer,
    WebhookEndpointUpdateSerializer,
    WebhookEndpointWithSecretSerializer,
)


class WebhookEndpointListView(APIView):
    @extend_schema(
        operation_id="webhook_endpoints_list", responses={200: WebhookEndpointSerializer(many=True)}
    )
    def get(self, request: Request) -> Response:
        endpoints = selectors.webhook_endpoints(tenant=tenant_of(request))
        return Response(WebhookEndpointSerializer(endpoints, many=True).data)

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
        selectors.webhook_endpoints(tenant=tenant_of(request)), public_id=endpoint_id
    )


class WebhookEndpointView(APIView):
    @extend_schema(
        operation_id="webhook_endpoints_retrieve", responses={200: WebhookEndpointSerializer}
    )
    def get(self, request: Request, endpoint_id: str) -> Response:
        return Response(WebhookEndpointSerializer(_endpoint(request, endpoint_id)).data)

    @extend_schema(
        operation_id="webhook_endpoints_update",
        description="Change the `url` or the `events` (checked as at creation); the secret "
        "stays. Events already recorded go to the endpoint's new URL.",
        request=WebhookEndpointUpdateSerializer,
        responses={200: WebhookEndpointSerializer},
    )
    def patch(self, request: Request, endpoint_id: str) -> Response:
        data = WebhookEndpointUpdateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        endpoint = services.webhook_endpoint_update(
            endpoint=_endpoint(request, endpoint_id), **data.validated_data
        )
        return Response(WebhookEndpointSerializer(endpoint).data)

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


class WebhookDeliveryListView(APIView):
    pagination_class = NewestFirstPagination

    @extend_schema(
        operation_id="webhook_endpoints_deliveries",
        description="The endpoint's delivery log, newest first: each event's id (the "
        "`webhook-id` header), type, status (`pending`, `delivered`, `failed`), attempts and "
        "the last answer. Payloads are not repeated here.",
        parameters=[
            OpenApiParameter("limit", LIMIT_SCHEMA, description=LIMIT_DESCRIPTION),
            OpenApiParameter("cursor", OpenApiTypes.STR, description="Opaque cursor from `next`."),
        ],
        responses=inline_serializer(
            name="WebhookDeliveryPage",
            fields={
                "results": WebhookDeliverySerializer(many=True),
                "next": serializers.URLField(allow_null=True),
            },
        ),
    )
    def get(self, request: Request, endpoint_id: str) -> Response:
        deliveries = selectors.webhook_deliveries(endpoint=_endpoint(request, endpoint_id))
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(deliveries, request, view=self)
        return Response(
            {
                "results": WebhookDeliverySerializer(page, many=True).data,
                "next": paginator.get_next_link(),
            }
        )
