"""Admin: summaries (read-only; written by the memo task) and assembly records (view only: what
the model was given, with a replay)."""

from typing import Any

from django.contrib import admin

from compaction.admin_assembly import AssemblyAdminMixin
from compaction.admin_views import SummaryAdminMixin
from compaction.models import AssemblyRecord, ContentBlob, Summary
from compaction.replay import assembly_replay
from convmem.admin_changelist import ViewOnlyAdmin
from threads import admin as threads_admin
from threads.models import Message, Thread


@admin.register(Summary)
class SummaryAdmin(SummaryAdminMixin, ViewOnlyAdmin):
    list_display = ["public_id", "thread", "status", "chain_depth", "token_count", "created_at"]
    list_filter = ["status"]
    search_fields = ["=public_id", "=thread__public_id"]
    list_select_related = ["thread"]
    show_full_result_count = False
    readonly_fields = [
        "public_id",
        "thread",
        "first",
        "last",
        "covered_ids",
        "base",
        "chain_depth",
        "status",
        "text",
        "token_count",
        "max_tokens",
        "backend",
        "model",
        "prompt_version",
        "fingerprint",
        "scores",
        "attempts",
        "error",
        "enqueued_at",
        "leased_until",
        "created_at",
        "updated_at",
    ]


@admin.register(AssemblyRecord)
class AssemblyRecordAdmin(AssemblyAdminMixin, ViewOnlyAdmin):
    list_display = ["public_id", "thread", "assembler_version", "created_at", "rendered_purged_at"]
    search_fields = ["=public_id", "=thread__public_id"]
    list_select_related = ["thread"]
    show_full_result_count = False
    exclude = ["rendered_pieces"]
    readonly_fields = ["replay"]

    @admin.display(description="Replay")
    def replay(self, obj: AssemblyRecord) -> str:
        result = assembly_replay(assembly=obj)
        return "matches the recorded hash" if result.matches else f"differs: {result.reason}"


@admin.register(ContentBlob)
class ContentBlobAdmin(ViewOnlyAdmin):
    list_display = ["sha256", "tenant", "created_at", "erased_at"]
    search_fields = ["=sha256"]


class ElidedResults:
    """Marks the tool results the thread's latest model input elided (``MessageBodyHooks``)."""

    def elided_in_latest_input(self, thread: Thread) -> set[str]:
        latest = AssemblyRecord.objects.filter(thread=thread).only("plan").order_by("-id").first()
        return set((latest.plan or {}).get("elided", [])) if latest else set()


class ThreadAdmin(ElidedResults, threads_admin.ThreadAdmin):
    """Threads' admin, with the memos that end at each message of the conversation page."""

    def memos_ending_at(self, thread: Thread, message_pks: list[int]) -> dict[int, list[Any]]:
        by_last: dict[int, list[Any]] = {}
        summaries = (
            Summary.objects.filter(thread=thread, last_id__in=message_pks)
            .select_related("first")
            .only("public_id", "status", "token_count", "last_id", "first__public_id")
            .order_by("id")
        )
        for summary in summaries:
            by_last.setdefault(summary.last_id, []).append(summary)
        return by_last


class MessageAdmin(ElidedResults, threads_admin.MessageAdmin):
    """Messages' admin, with the memos that cover the message on its page."""

    def memos_covering(self, message: Message) -> list[Any]:
        return [
            summary
            for summary in Summary.objects.filter(
                thread=message.thread,
                segment_first__depth__lte=message.depth,
                last__depth__gte=message.depth,
            ).order_by("id")
            if message.public_id in summary.covered_ids
        ]


admin.site.unregister([Thread, Message])
admin.site.register(Thread, ThreadAdmin)
admin.site.register(Message, MessageAdmin)
