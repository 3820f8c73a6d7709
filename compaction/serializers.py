"""Request and response shapes of the context and summaries endpoints (names from DESIGN.md)."""

from typing import Any

from django.conf import settings
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from compaction.context import Assembly
from compaction.models import Summary
from compaction.rendering import FORMAT


def _storable(value: str) -> str:
    """Refuse text the database cannot store: NUL characters and lone surrogates."""
    if "\x00" in value:
        raise serializers.ValidationError("must not contain NUL characters.")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise serializers.ValidationError("must be valid Unicode text.") from None
    return value


class RetrievedItemSerializer(serializers.Serializer):
    ref = serializers.CharField(
        max_length=255,
        validators=[_storable],
        help_text="The caller's reference for the item (document id, URL…); recorded.",
    )
    content = serializers.CharField(
        max_length=settings.CONVMEM_MAX_CONTENT_CHARS,
        trim_whitespace=False,
        validators=[_storable],
        help_text="The text to splice in, as a system message after the task statement.",
    )


class ContextRequestSerializer(serializers.Serializer):
    window_tokens = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=settings.CONVMEM_MAX_WINDOW_TOKENS,
        help_text="The model's context window. Default: the thread's model profile.",
    )
    reserve_tokens = serializers.IntegerField(
        required=False,
        min_value=0,
        help_text="Tokens kept free for the answer; must be below window_tokens. "
        "Default: the thread's model profile.",
    )
    system = serializers.CharField(
        required=False,
        allow_blank=True,
        allow_null=True,
        trim_whitespace=False,
        max_length=settings.CONVMEM_MAX_CONTENT_CHARS,
        validators=[_storable],
        help_text="System prompt, placed first. Default (absent or null): the thread's "
        '`system`; "" for none.',
    )
    leaf_id = serializers.CharField(
        required=False,
        allow_null=True,
        max_length=40,
        validators=[_storable],
        help_text="Assemble the path ending at this message (default: the active leaf).",
    )
    retrieved = RetrievedItemSerializer(
        many=True,
        required=False,
        help_text="Items to splice in (at most CONVMEM_MAX_RETRIEVED_ITEMS, default 64).",
    )


@extend_schema_field(
    {
        "oneOf": [
            {"type": "string"},
            {"type": "array", "items": {"type": "object"}},
        ],
        "nullable": True,
    }
)
class ChatContentField(serializers.JSONField):
    """A chat message's content: text, content parts, or null beside tool calls."""


class ChatMessageSerializer(serializers.Serializer):
    """One OpenAI Chat Completions input message."""

    role = serializers.CharField()
    content = ChatContentField()
    tool_calls = serializers.ListField(
        child=serializers.DictField(), required=False, help_text="Assistant turns calling tools."
    )
    tool_call_id = serializers.CharField(
        required=False, help_text="Tool results: the call they answer."
    )


class SystemSectionSerializer(serializers.Serializer):
    hash = serializers.CharField(help_text="SHA-256 of the system prompt.")
    tokens = serializers.IntegerField()


class MemoSectionSerializer(serializers.Serializer):
    summary_id = serializers.CharField()
    first_id = serializers.CharField()
    last_id = serializers.CharField()
    status = serializers.ChoiceField(
        choices=["ready", "pending"],
        help_text="`ready`: the memo is in `messages`. `pending`: being written, not shown yet.",
    )
    chain_depth = serializers.IntegerField()
    superseded_lines = serializers.ListField(
        child=serializers.IntegerField(),
        required=False,
        help_text="Only when some are: the memo's lines (indices in its text split at line "
        "breaks) left out of `messages` because a user turn shown after the memo corrects them.",
    )


class SectionsSerializer(serializers.Serializer):
    system = SystemSectionSerializer(allow_null=True)
    memo = MemoSectionSerializer(
        allow_null=True,
        help_text="The memo shown for the older range, else the one being written, else null.",
    )
    anchor = serializers.ListField(
        child=serializers.CharField(),
        help_text="The task statement (the first user turn) kept verbatim, if it is neither "
        "recent nor covered by the memo.",
    )
    recalled = serializers.ListField(
        child=serializers.CharField(),
        help_text="Older message ids of this path matching the current user turn (found "
        "through the search index), quoted after the memo as excerpts, oldest first. Only "
        "when the history does not fit and the profile has recall on; a recalled message may "
        "also be listed in `dropped` (it lost its place, not its content).",
    )
    retrieved = serializers.ListField(child=serializers.CharField(), help_text="refs, in order")
    elided = serializers.ListField(
        child=serializers.CharField(),
        help_text="Recent tool results shown as a short marker (old and bulky, when the "
        "history did not fit).",
    )
    recent = serializers.ListField(
        child=serializers.CharField(),
        help_text="Message ids kept verbatim, oldest first; the last one is the current turn.",
    )
    dropped = serializers.ListField(
        child=serializers.CharField(),
        help_text="Message ids read but neither shown nor covered by the memo (only the ids "
        "the bounded read saw; older history is not listed). Empty whenever the history fits.",
    )


class TokensSerializer(serializers.Serializer):
    window = serializers.IntegerField()
    reserve = serializers.IntegerField()
    system = serializers.IntegerField(help_text="System prompt and reply priming.")
    memo = serializers.IntegerField()
    anchor = serializers.IntegerField()
    retrieved = serializers.IntegerField()
    recalled = serializers.IntegerField(help_text="Recalled messages, at most the profile's cap.")
    recent = serializers.IntegerField()
    total = serializers.IntegerField(help_text="Sum of the sections; total + reserve <= window.")
    free = serializers.IntegerField(help_text="window - reserve - total")


class MemoErrorSerializer(serializers.Serializer):
    summary_id = serializers.CharField()
    error = serializers.CharField()
    failures_in_a_row = serializers.IntegerField()
    retry_at = serializers.DateTimeField(help_text="When the curator asks for a memo again.")


class MemoLagSerializer(serializers.Serializer):
    turns = serializers.IntegerField(
        help_text="Messages newer than the memo shown (all dropped ones when no memo is shown) "
        "that the input leaves out: the middle of the conversation, lost because the memo "
        "that would stand for it is late. 0 when nothing was lost."
    )
    tokens = serializers.IntegerField(help_text="Their stored token counts, summed.")
    first_id = serializers.CharField(allow_null=True, help_text="The oldest one lost, or null.")
    last_id = serializers.CharField(allow_null=True, help_text="The newest one lost, or null.")


class PrefixSerializer(serializers.Serializer):
    messages = serializers.IntegerField(
        help_text="How many leading `messages` are the stable prefix: system prompt, memo or "
        "task statement, and the history before the current turn (retrieved items and the "
        "current turn come after it)."
    )
    tokens = serializers.IntegerField(help_text="What those messages cost.")
    hash = serializers.CharField(
        help_text="sha256 of the prefix's messages (canonical JSON). Until the next block "
        "boundary, the next input starts with this prefix plus this turn and its answer."
    )


class ContextResponseSerializer(serializers.Serializer):
    assembly_id = serializers.CharField(
        help_text="Pass it when appending the model's answer (links the two)."
    )
    assembler_version = serializers.CharField()
    format = serializers.ChoiceField(
        choices=[FORMAT],
        help_text="The shape of `messages`: OpenAI Chat Completions input (role/content, "
        "tool_calls on assistant turns, tool_call_id on tool results, content parts).",
    )
    messages = ChatMessageSerializer(many=True)
    prefix = PrefixSerializer(
        help_text="The part of `messages` a provider's prompt cache can serve on the next turn."
    )
    sections = SectionsSerializer()
    tokens = TokensSerializer()
    memo_status = serializers.ChoiceField(
        choices=["none", "not_shown", "ready", "pending", "failed"],
        help_text="`pending` whenever a memo for this path is being written; `failed` when "
        "the memo this path needs failed and the curator waits before asking again (see "
        "`memo_error`); else `ready` if a memo is shown, `not_shown` if a ready memo of this "
        "path exists but is not in `messages` (the history fit without it, or it did not fit), "
        "`none` if there is no memo.",
    )
    pending_memo = MemoSectionSerializer(allow_null=True)
    memo_error = MemoErrorSerializer(allow_null=True)
    memo_lag = MemoLagSerializer(
        help_text="What this input lost from the middle while the memo was late (the curator "
        "avoids it whenever the window can hold a memo and every turn after it)."
    )


class SummarySerializer(serializers.ModelSerializer):
    id = serializers.CharField(source="public_id", read_only=True)
    first_id = serializers.CharField(source="first.public_id", read_only=True)
    last_id = serializers.CharField(source="last.public_id", read_only=True)
    base_id = serializers.SerializerMethodField(help_text="The memo this one extended, if any.")
    covered_ids = serializers.ListField(child=serializers.CharField(), read_only=True)
    scores = serializers.JSONField(
        read_only=True,
        help_text="fact_recall, unsupported_rate, compression and the facts behind them.",
    )

    class Meta:
        model = Summary
        fields = [
            "id",
            "first_id",
            "last_id",
            "covered_ids",
            "status",
            "text",
            "token_count",
            "scores",
            "chain_depth",
            "base_id",
            "backend",
            "model",
            "prompt_version",
            "attempts",
            "error",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields

    def get_base_id(self, summary: Summary) -> str | None:
        return summary.base.public_id if summary.base_id else None


def context_body(assembly: Assembly) -> dict[str, Any]:
    """The response body of a context request."""
    return {
        "assembly_id": assembly.record.public_id,
        "assembler_version": assembly.record.assembler_version,
        "format": FORMAT,
        "messages": assembly.messages,
        "prefix": assembly.prefix,
        "sections": assembly.sections,
        "tokens": assembly.tokens,
        "memo_status": assembly.memo_status,
        "pending_memo": assembly.pending_memo,
        "memo_error": assembly.memo_error,
        "memo_lag": assembly.memo_lag,
    }


class ReplaySerializer(serializers.Serializer):
    assembly_id = serializers.CharField()
    messages = ChatMessageSerializer(many=True)
    rendered_hash = serializers.CharField(help_text="Hash recorded when it was assembled.")
    replayed_hash = serializers.CharField(help_text="Hash of the input rebuilt now.")
    matches = serializers.BooleanField()
    reason = serializers.CharField(
        allow_null=True, help_text="Why the rebuilt input differs (null when it matches)."
    )
