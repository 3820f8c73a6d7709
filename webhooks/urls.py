from django.urls import path

from webhooks import views

urlpatterns = [
    path("webhook-endpoints", views.WebhookEndpointListView.as_view(), name="webhook-endpoints"),
    path(
        "webhook-endpoints/<str:endpoint_id>",
        views.WebhookEndpointView.as_view(),
        name="webhook-endpoint",
    ),
    path(
        "webhook-endpoints/<str:endpoint_id>/rotate-secret",
        views.WebhookSecretRotateView.as_view(),
        name="webhook-endpoint-rotate",
    ),
    path(
        "webhook-endpoints/<str:endpoint_id>/deliveries",
        views.WebhookDeliveryListView.as_view(),
        name="webhook-endpoint-deliveries",
    ),
]
