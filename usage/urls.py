from django.urls import path

from usage import views

urlpatterns = [path("usage", views.UsageView.as_view(), name="usage")]
