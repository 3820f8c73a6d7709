from django.urls import path

from imports import views

urlpatterns = [path("imports", views.ImportView.as_view(), name="imports")]
