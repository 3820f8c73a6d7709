"""With sealing on, search, recall and the admin's message search find sealed messages through
the blind index (``convmem.blind_index``: keyed hashes of the words under the subject's key),
never another tenant's or subject's, and nothing once erased. Runs on SQLite and PostgreSQL."""

import hmac
import re
from typing import Any

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.db import connection
from django.urls import reverse

from audit.erasure import message_content_erase
from convmem import blind_index, crypto
from convmem.key_providers import key_provider
from convmem.models import DataKey
from tests.admin.conftest import client_for, staff_user
from tests.compaction.helpers import post_context
from tests.compaction.test_recall import BUDGET, long_thread, recalled_texts
from tests.conftest import SYSTEM, TenantKit, make_thread
from threads import search, services
from threads.models import Message, Thread

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def sealed(settings: Any) -> None:
    settings.CONVMEM_ENCRYPT_CONTENT = True


def append(thread: Thread, role: str, content: Any, **fields: Any) -> Message:
    return services.message_append(
        thread=thread, actor=SYSTEM, role=role, content=content, **fields
    )


def hit_ids(kit: TenantKit, q: str, url: str = "/api/v1/search", **params: Any) -> list[str]:
    response = kit.client.get(url, {"q": q, **params})
    assert response.status_code == 200, response.content
    return [hit["message_id"] for hit in response.json()["results"]]


def stored(message: Message) -> tuple[str, str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT content, search_terms FROM threads_message WHERE id = %s", [message.pk]
        )
        return cursor.fetchone()


def test_the_row_holds_ciphertext_and_keyed_hashes_never_the_words(acme: TenantKit) -> None:
    thread = make_thread(acme.tenant, user_ref="ana")
    message = append(thread, "user", "My locker code is 4471-QZ at Malmö gym")

    content, terms = stored(message)
    assert content.startswith("enc1:")
    tokens = terms.split()
    assert tokens[0] == blind_index.key_token(thread.data_key_id)
    # Distinct words only, as hashes: no order, no counts, no word in clear.
    words = blind_index.index_words(message.content)
    assert len(tokens) == 1 + len(words)
    assert tokens[1:] == sorted(tokens[1:])
    # After the key's token, each token is the prefix and a hex hash of fixed length: no word
    # of the message ("locker", "4471", "malmö"…) is there in clear. (Looking for the words as
    # substrings was flaky: "4471" turns up inside a random hash now and then.)
    hex_digits = 2 * crypto.SEARCH_TOKEN_BYTES
    hashed = re.compile(re.escape(blind_index.WORD_TOKEN_PREFIX) + f"[0-9a-f]{{{hex_digits}}}")
    assert all(hashed.fullmatch(token) for token in tokens[1:])
    assert not set(tokens) & {"locker", "4471", "qz", "malmo", "malmö", "gym"}
    assert set(blind_index.word_tokens(words, thread.data_key_id)) == set(tokens[1:])


def test_thread_and_tenant_search_find_sealed_messages_with_snippets_in_clear(
    acme: TenantKit,
) -> None:
    thread = make_thread(acme.tenant, user_ref="ana")
    first = append(thread, "user", "My locker code is 4471-QZ, please note it.")
    second = append(thread, "assistant", "Noted: locker 4471-QZ <b>safe</b>.")

    response = acme.client.get("/api/v1/search", {"q": "LOCKER 4471-qz"})

    assert response.status_code == 200
    hits = response.json()["results"]
    assert [hit["message_id"] for hit in hits] == [second.public_id, first.public_id]
    assert hits[0]["snippet"] == (
        "Noted: <mark>locker</mark> <mark>4471</mark>-<mark>QZ</mark> &lt;b&gt;safe&lt;/b&gt;."
    )
    thread_url = f"/api/v1/threads/{thread.public_id}/search"
    assert hit_ids(acme, "note", url=thread_url) == [first.public_id]
    assert hit_ids(acme, "locker nowhere", url=thread_url) == []


def test_tenant_search_uses_each_subjects_own_key(acme: TenantKit, globex: TenantKit) -> None:
    ana = make_thread(acme.tenant, user_ref="ana")
    bo = make_thread(acme.tenant, user_ref="bo")
    loose = make_thread(acme.tenant, user_ref="")  # a subject of its own
    theirs = make_thread(globex.tenant, user_ref="ana")
    ana_hit = append(ana, "user", "refund for parcel zanzibar")
    bo_hit = append(bo, "user", "zanzibar refund too")
    loose_hit = append(loose, "user", "zanzibar again")
    append(theirs, "user", "globex zanzibar refund secret")
    assert len({ana.data_key_id, bo.data_key_id, loose.data_key_id, theirs.data_key_id}) == 4

    assert set(hit_ids(acme, "zanzibar")) == {
        ana_hit.public_id,
        bo_hit.public_id,
        loose_hit.public_id,
    }
    assert hit_ids(acme, "zanzibar", user_ref="ana") == [ana_hit.public_id]
    assert hit_ids(acme, "zanzibar", user_ref="bo") == [bo_hit.public_id]
    assert hit_ids(acme, "parcel", user_ref="bo") == []
    assert hit_ids(acme, "secret") == []
    assert hit_ids(acme, "zanzibar", thread=bo.public_id) == [bo_hit.public_id]


def test_a_hash_is_matched_only_with_its_own_key_token(acme: TenantKit) -> None:
    """Bo's document forged to carry Ana's hashes of a word is still not found as Ana's:
    a query under Ana's key asks for Ana's key token as well."""
    ana = make_thread(acme.tenant, user_ref="ana")
    bo = make_thread(acme.tenant, user_ref="bo")
    append(ana, "user", "hello")
    forged = append(bo, "user", "hello")
    ana_hashes = blind_index.word_tokens(["kumquat"], ana.data_key_id)
    Message.objects.filter(pk=forged.pk).update(
        search_terms=" ".join([blind_index.key_token(bo.data_key_id), *ana_hashes])
    )

    assert hit_ids(acme, "kumquat", user_ref="ana") == []
    assert hit_ids(acme, "kumquat") == []


def test_tool_calls_content_parts_and_edits_are_found(acme: TenantKit) -> None:
    thread = make_thread(acme.tenant)
    parts = append(
        thread,
        "user",
        [
            {"type": "text", "text": "see the attached invoice 77-ab"},
            {"type": "image_url", "image_url": {"url": "https://example.com/i.png"}},
        ],
    )
    call = append(
        thread,
        "assistant",
        "",
        tool_calls=[
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Kraków"}'},
            }
        ],
    )
    result = append(thread, "tool", "Sunny in Kraków", tool_call_id="call_1")
    edit = services.message_edit(
        thread=thread, actor=SYSTEM, message_public_id=parts.public_id, content="invoice 88-cd"
    )

    def found(text: str) -> set[str]:
        hits, _ = search.message_search(Message.objects.all(), text)
        return set(hits.values_list("public_id", flat=True))

    assert found("invoice 77-ab") == {parts.public_id}
    assert found("krakow") == {call.public_id, result.public_id}
    assert found("get_weather") == {call.public_id}
    assert found("invoice") == {parts.public_id, edit.public_id}


def test_the_admins_message_search_finds_sealed_messages(acme: TenantKit) -> None:
    thread = make_thread(acme.tenant, user_ref="ana")
    message = append(thread, "user", "the passport number is pz4471")
    other = append(thread, "assistant", "noted")
    support = client_for(staff_user("sam-support", "Support"))

    response = support.get(reverse("admin:threads_message_changelist"), {"q": "PZ4471"})

    assert response.status_code == 200
    page = response.content.decode()
    assert message.public_id in page
    assert other.public_id not in page
    assert "the passport number is pz4471" in page  # the preview, opened
    assert "enc1:" not in page


def test_recall_brings_back_a_sealed_fact(acme: TenantKit) -> None:
    thread, fact, _ = long_thread(acme, filler=60)
    assert stored(fact)[0].startswith("enc1:")

    response = post_context(acme.client, thread, **BUDGET)

    assert response.status_code == 200, response.data
    assert response.data["sections"]["recalled"] == [fact.public_id]
    assert [t for t in recalled_texts(response) if "4471-QZ" in t]


def test_messages_written_before_sealing_are_found_beside_sealed_ones(
    acme: TenantKit, settings: Any
) -> None:
    settings.CONVMEM_ENCRYPT_CONTENT = False
    thread = make_thread(acme.tenant, user_ref="ana")
    before = append(thread, "user", "plain zanzibar note")
    settings.CONVMEM_ENCRYPT_CONTENT = True
    after = append(thread, "user", "sealed zanzibar note")
    assert stored(before) == ("plain zanzibar note", "")

    assert set(hit_ids(acme, "zanzibar note")) == {before.public_id, after.public_id}
    url = f"/api/v1/threads/{thread.public_id}/search"
    assert hit_ids(acme, "sealed", url=url) == [after.public_id]


def test_a_redacted_message_leaves_the_index_and_its_hashes_leave_the_row(
    acme: TenantKit,
) -> None:
    thread = make_thread(acme.tenant, user_ref="ana")
    secret = append(thread, "user", "my passport number is pz4471")
    kept = append(thread, "assistant", "noted, passport received")

    message_content_erase(message=secret, actor=SYSTEM)

    assert stored(secret) == ("[erased]", "")
    assert hit_ids(acme, "pz4471") == []
    assert hit_ids(acme, "passport") == [kept.public_id]


def test_after_the_subject_is_erased_nothing_is_found_and_no_word_can_be_hashed(
    acme: TenantKit,
) -> None:
    thread = make_thread(acme.tenant, user_ref="ana")
    append(thread, "user", "my passport number is pz4471")
    key_id = thread.data_key_id

    response = acme.client.delete(f"/api/v1/threads/{thread.public_id}")
    assert response.status_code == 200, response.content
    crypto.search_key_cache.clear()  # as any other process, once its cache expired

    assert hit_ids(acme, "pz4471") == []
    assert hit_ids(acme, "passport", user_ref="ana") == []
    assert blind_index.blind_query(["pz4471"], key_id) is None
    with pytest.raises(crypto.KeyUnavailable):
        blind_index.word_tokens(["pz4471"], key_id)
    assert not Message.objects.filter(thread=thread).exclude(search_terms="").exists()


def _indexed_lexemes(message: Message) -> set[str]:
    """What the full-text index holds for ``message``: PostgreSQL's indexed expression's
    lexemes, SQLite's FTS5 row."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            document = f"SELECT {search.SEARCH_DOCUMENT} FROM threads_message"
            cursor.execute(
                f"SELECT word FROM ts_stat($q${document} WHERE id = {int(message.pk)}$q$)"
            )
            return {row[0] for row in cursor.fetchall()}
        cursor.execute(
            f"SELECT body, blind, thread FROM {search.FTS_TABLE} WHERE rowid = %s", [message.pk]
        )
        body, blind, thread = cursor.fetchone()
        assert body == ""
        return {thread, *blind.split()}


def test_the_index_holds_the_key_token_and_hashes_only(acme: TenantKit) -> None:
    thread = make_thread(acme.tenant, user_ref="ana")
    message = append(thread, "user", "my passport number is pz4471")

    lexemes = _indexed_lexemes(message)

    assert not {"my", "passport", "number", "is", "pz4471"} & lexemes
    expected = set(stored(message)[1].split())
    assert expected <= lexemes
    assert len(lexemes - expected) == 1  # the thread's own lexeme / token


def test_a_words_hash_is_the_hmac_of_the_word_under_the_subjects_search_key(
    acme: TenantKit,
) -> None:
    """The keyed HMAC the cache holds is copied per word: each hash is the word's own
    HMAC-SHA256 under the HKDF-derived search key (the stored documents stay valid), however
    many words came before it."""
    thread = make_thread(acme.tenant, user_ref="ana")
    key_id = thread.data_key_id
    row = DataKey.objects.get(key_id=key_id)
    material = key_provider().unwrap(key_id, bytes(row.wrapped), row.kek_id)
    search_key = HKDF(
        algorithm=hashes.SHA256(), length=32, salt=None, info=crypto.SEARCH_KEY_INFO
    ).derive(material)

    tokens = crypto.search_tokens(["kumquat", "malmo", "kumquat"], key_id=key_id)

    expected = [
        hmac.digest(search_key, w.encode(), "sha256")[:8].hex() for w in ("kumquat", "malmo")
    ]
    assert tokens == [expected[0], expected[1], expected[0]]
    assert crypto.search_tokens(["malmo"], key_id=key_id) == [expected[1]]


def test_erasing_the_subject_drops_its_search_key_from_this_process_at_once(
    acme: TenantKit,
) -> None:
    thread = make_thread(acme.tenant, user_ref="ana")
    append(thread, "user", "my passport number is pz4471")
    key_id = thread.data_key_id
    assert crypto.search_key_cache.get(key_id) is not None  # loaded to index the message

    response = acme.client.delete(f"/api/v1/threads/{thread.public_id}")
    assert response.status_code == 200, response.content

    # No cache clearing here: the erasure itself forgot the derived key in this process.
    assert crypto.search_key_cache.get(key_id) is None
    assert crypto.key_cache.get(key_id) is None
    with pytest.raises(crypto.KeyUnavailable):
        blind_index.word_tokens(["pz4471"], key_id)
    assert blind_index.blind_query_each(["pz4471"], key_id) == {}


def test_recall_hashes_each_term_alone_under_the_threads_key(acme: TenantKit) -> None:
    thread = make_thread(acme.tenant, user_ref="ana")
    key_id = thread.data_key_id
    terms = ["ORD-30010", "Malmö", "--", "kumquat"]

    each = blind_index.blind_query_each(terms, key_id)

    assert each == {t: blind_index.blind_query([t], key_id) for t in terms if t != "--"}
    assert blind_index.blind_query_each(terms, "") == {}
