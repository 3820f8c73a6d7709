from django.urls import path

from audit import views

urlpatterns = [
    # The thread resource with DELETE; threads.urls routes everything else under threads/.
    path("threads/<str:thread_id>", views.ThreadDetailView.as_view(), name="thread"),
    path("threads/<str:thread_id>/export", views.ThreadExportView.as_view(), name="thread-export"),
    path("exports", views.UserExportView.as_view(), name="user-export"),
    path(
        "threads/<str:thread_id>/messages/<str:message_id>/redact",
        views.MessageRedactView.as_view(),
        name="message-redact",
    ),
    path(
        "deletion-requests",
        views.DeletionRequestCreateView.as_view(),
        name="deletion-request-create",
    ),
    path(
        "deletion-requests/<str:request_id>",
        views.DeletionRequestDetailView.as_view(),
        name="deletion-request-detail",
    ),
]
