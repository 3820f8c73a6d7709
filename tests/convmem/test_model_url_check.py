"""``convmem.E002``: a model server's base URL that holds credentials stops ``manage.py check``.

httpx (``/respond``) and the OpenAI SDK's httpx2 (the memo writer) turn a URL's user and
password into Basic authentication, which replaces the API key's bearer token.
"""

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError


@pytest.mark.parametrize("name", ["CONVMEM_CHAT_BASE_URL", "CONVMEM_OPENAI_BASE_URL"])
@pytest.mark.parametrize(
    "url", ["https://bob:s3cret@llm.example/v1", "http://token@127.0.0.1:8001/v1"]
)
def test_a_base_url_with_credentials_is_refused_with_the_setting_named(settings, name, url):
    setattr(settings, name, url)

    with pytest.raises(SystemCheckError) as refused:
        call_command("check")

    message = str(refused.value)
    assert "convmem.E002" in message
    assert name in message
    assert name.replace("BASE_URL", "API_KEY") in message
    assert "s3cret" not in message


def test_base_urls_without_credentials_pass(settings):
    settings.CONVMEM_CHAT_BASE_URL = "https://llm.example:8443/v1"
    settings.CONVMEM_OPENAI_BASE_URL = "http://127.0.0.1:11434/v1"

    call_command("check")
