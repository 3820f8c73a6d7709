"""Model profiles: the budget and curation policy a thread is assembled with.

A thread uses its own profile (chosen at creation: named, or the tenant's default) or, without
one, the built-in defaults from settings (``CONVMEM_DEFAULT_*``). A context request may
override the window and the output reserve, within ``CONVMEM_MAX_WINDOW_TOKENS``.
"""

from dataclasses import asdict, dataclass
from typing import Any

from django.conf import settings

from compaction.backends import summarizer_context_tokens
from compaction.curator import Policy
from compaction.memo_input import input_budget
from convmem.errors import InvalidRequest
from convmem.profiles import profile_setting
from convmem.tokens import MESSAGE_OVERHEAD, UnknownEncoding, validate_encoding
from threads.models import Thread

MIN_SEGMENT_TOKENS = 256


def writer_segment_tokens(*, context_tokens: int, memo_max_tokens: int) -> int:
    """How many tokens of new turns one memo request may cover: the memo writer's own input
    budget (``compaction.memo_input.input_budget``: the summarizer's context less the memo it
    writes, the previous memo and the prompt's fixed text) with a previous memo as big as the
    memo, so a segment the curator asks for fits the writer with the same allowance."""
    budget = input_budget(
        context_tokens=context_tokens,
        max_tokens=memo_max_tokens,
        previous_memo_tokens=memo_max_tokens,
    )
    return max(MIN_SEGMENT_TOKENS, budget)


@dataclass(frozen=True)
class EffectiveProfile:
    """What a thread is curated with: its profile's values, or the built-in defaults."""

    name: str | None
    window_tokens: int
    reserve_tokens: int
    encoding: str
    tool_result_elide_tokens: int
    policy: Policy
    keep_rendered: bool = False

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def thread_profile(thread: Thread) -> EffectiveProfile:
    """The effective profile of ``thread`` (reads ``thread.profile``: select it with the thread).

    Raises ``InvalidRequest`` (400, ``unknown_encoding``) if the profile names an encoding
    tiktoken does not know, so a misconfigured profile fails clearly instead of with a 500.
    """
    profile = thread.profile
    memo_max = profile_setting(profile, "memo_max_tokens")
    segment = writer_segment_tokens(
        context_tokens=summarizer_context_tokens(), memo_max_tokens=memo_max
    )
    keep_rendered = settings.CONVMEM_KEEP_RENDERED_INPUTS or bool(
        profile and profile.keep_rendered_inputs
    )
    effective = EffectiveProfile(
        name=profile.name if profile else None,
        window_tokens=profile_setting(profile, "window_tokens"),
        reserve_tokens=profile_setting(profile, "reserve_tokens"),
        encoding=profile_setting(profile, "encoding"),
        tool_result_elide_tokens=profile_setting(profile, "tool_result_elide_tokens"),
        policy=Policy(
            min_recent_turns=max(1, profile_setting(profile, "min_recent_turns")),
            memo_max_tokens=memo_max,
            high_water=profile_setting(profile, "high_water"),
            low_water=profile_setting(profile, "low_water"),
            message_overhead=MESSAGE_OVERHEAD,
            segment_tokens=segment,
            recall_max_tokens=(
                profile_setting(profile, "recall_max_tokens")
                if profile_setting(profile, "recall")
                else 0
            ),
        ),
        keep_rendered=keep_rendered,
    )
    try:
        validate_encoding(effective.encoding)
    except UnknownEncoding:
        raise InvalidRequest(
            f"The thread's model profile names an unknown encoding {effective.encoding!r}.",
            code="unknown_encoding",
        ) from None
    return effective


def request_budget(
    profile: EffectiveProfile, *, window_tokens: int | None, reserve_tokens: int | None
) -> tuple[int, int]:
    """(window, reserve) for one context request: the request's values over the profile's.

    Raises ``InvalidRequest`` (400) for a window outside 1 … ``CONVMEM_MAX_WINDOW_TOKENS``, a
    negative reserve, or a reserve that leaves nothing of the window.
    """
    window = profile.window_tokens if window_tokens is None else window_tokens
    reserve = profile.reserve_tokens if reserve_tokens is None else reserve_tokens
    limit = settings.CONVMEM_MAX_WINDOW_TOKENS
    if not 1 <= window <= limit:
        raise InvalidRequest(
            f"window_tokens must be between 1 and {limit}, got {window}.", code="invalid_budget"
        )
    if reserve < 0:
        raise InvalidRequest(
            f"reserve_tokens must not be negative, got {reserve}.", code="invalid_budget"
        )
    if reserve >= window:
        raise InvalidRequest(
            f"reserve_tokens ({reserve}) must be smaller than window_tokens ({window}).",
            code="reserve_exceeds_window",
        )
    return window, reserve
