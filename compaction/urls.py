from django.urls import path

from compaction import views

urlpatterns = [
    path("threads/<str:thread_id>/context", views.ContextView.as_view(), name="thread-context"),
    path(
        "threads/<str:thread_id>/summaries",
        views.SummaryListView.as_view(),
        name="thread-summaries",
    ),
    path(
        "assemblies/<str:assembly_id>/replay",
        views.AssemblyReplayView.as_view(),
        name="assembly-replay",
    ),
]
