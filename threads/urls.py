from django.urls import path

from threads import views

# ``threads/<id>`` itself is routed by audit.urls, whose view adds DELETE to ThreadDetailView.
urlpatterns = [
    path("threads", views.ThreadListCreateView.as_view(), name="threads"),
    path(
        "threads/<str:thread_id>/messages",
        views.MessageListCreateView.as_view(),
        name="thread-messages",
    ),
    path(
        "threads/<str:thread_id>/messages:batch",
        views.MessageBatchCreateView.as_view(),
        name="thread-messages-batch",
    ),
    path(
        "threads/<str:thread_id>/messages/<str:message_id>/edit",
        views.MessageEditView.as_view(),
        name="message-edit",
    ),
    path("threads/<str:thread_id>/tree", views.ThreadTreeView.as_view(), name="thread-tree"),
]
