from django.urls import path

from respond import views

urlpatterns = [
    path("threads/<str:thread_id>/respond", views.RespondView.as_view(), name="thread-respond"),
    path("threads/<str:thread_id>/runs/<str:run_id>", views.RunView.as_view(), name="thread-run"),
    path(
        "threads/<str:thread_id>/runs/<str:run_id>/events",
        views.RunEventsView.as_view(),
        name="thread-run-events",
    ),
    path(
        "threads/<str:thread_id>/runs/<str:run_id>/cancel",
        views.RunCancelView.as_view(),
        name="thread-run-cancel",
    ),
]
