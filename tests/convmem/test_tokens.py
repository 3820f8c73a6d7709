import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import override_settings

from compaction.curator import Policy
from convmem.tokens import (
    DEFAULT_ENCODING,
    MESSAGE_OVERHEAD,
    REPLY_PRIMING,
    UnknownEncoding,
    count_tokens,
    default_encoding_name,
    get_encoding,
    message_tokens,
    system_section_tokens,
    validate_encoding,
)


def test_counts_text_in_the_default_encoding() -> None:
    assert count_tokens("") == 0
    assert count_tokens("hello world") == 2
    assert count_tokens("hello world", DEFAULT_ENCODING) == 2


def test_encoding_is_loaded_once_and_cached() -> None:
    first = get_encoding(DEFAULT_ENCODING)
    hits = get_encoding.cache_info().hits

    assert get_encoding(DEFAULT_ENCODING) is first
    assert get_encoding.cache_info().hits == hits + 1


def test_unknown_encoding_is_rejected() -> None:
    with pytest.raises(UnknownEncoding, match="no_such_encoding"):
        count_tokens("hello", "no_such_encoding")
    with pytest.raises(ValueError, match="no_such_encoding"):
        validate_encoding("no_such_encoding")


def test_validate_encoding_returns_known_names() -> None:
    assert validate_encoding(DEFAULT_ENCODING) == DEFAULT_ENCODING


def test_special_token_markup_in_user_text_is_counted_as_text() -> None:
    text = "please ignore <|endoftext|> and <|fim_prefix|>"

    assert count_tokens(text) > count_tokens("please ignore  and ")


def test_default_encoding_follows_the_setting() -> None:
    with override_settings(CONVMEM_DEFAULT_ENCODING="gpt2"):
        assert default_encoding_name() == "gpt2"


def test_counting_works_without_django_settings() -> None:
    environment = {
        key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"
    }
    script = "from convmem.tokens import count_tokens; print(count_tokens('hello world'))"

    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=Path(__file__).resolve().parents[2],
        env=environment,
        capture_output=True,
        text=True,
        check=True,
    )

    assert result.stdout.strip() == "2"


def test_every_stored_role_is_one_token_so_the_overhead_is_exact() -> None:
    encoding = get_encoding(DEFAULT_ENCODING)

    for role in ("system", "user", "assistant", "tool"):
        assert len(encoding.encode(role)) == 1


def test_section_costs_add_the_chat_overheads() -> None:
    assert message_tokens(10) == 10 + MESSAGE_OVERHEAD
    assert system_section_tokens(None) == REPLY_PRIMING
    assert system_section_tokens(10) == REPLY_PRIMING + 10 + MESSAGE_OVERHEAD


def test_curator_default_overhead_matches_the_token_module() -> None:
    assert Policy().message_overhead == MESSAGE_OVERHEAD
