from django.urls import path

from respond import views

urlpatterns = [
    path("threads/<str:thread_id>/respond", views.RespondView.as_view(), name="thread-respond"),
]
