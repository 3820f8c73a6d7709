"""A thread's own system prompt: stored on the thread, versioned, used when a request gives none."""

import json
from pathlib import Path

import jsonschema

from compaction.models import AssemblyRecord
from compaction.rendering import sha256_hex
from compaction.selectors import assembly_items
from tests.conftest import make_thread
from tests.threads.helpers import messages_url, post
from threads.models import SystemPrompt

PROMPT = "You are the shop's support assistant."
EXPORT_SCHEMA = json.loads((Path(__file__).parents[2] / "audit" / "export_schema.json").read_text())


def create(kit, **body):
    return kit.client.post("/api/v1/threads", {"user_ref": "u1", **body}, format="json")


def context(kit, thread_id, **body):
    url = f"/api/v1/threads/{thread_id}/context"
    return kit.client.post(
        url, {"window_tokens": 4096, "reserve_tokens": 256, **body}, format="json"
    )


def test_a_thread_is_created_with_its_system_prompt(acme):
    response = create(acme, system=PROMPT)

    assert response.status_code == 201
    assert response.data["system"] == PROMPT
    assert response.data["system_version"] == 1
    assert acme.client.get(f"/api/v1/threads/{response.data['id']}").data["system"] == PROMPT


def test_a_thread_without_one_says_null(acme):
    response = create(acme)

    assert response.data["system"] is None
    assert response.data["system_version"] is None


def test_changing_it_keeps_the_older_versions(acme):
    thread_id = create(acme, system=PROMPT).data["id"]
    url = f"/api/v1/threads/{thread_id}"

    second = acme.client.patch(url, {"system": "Answer in French."}, format="json")
    same = acme.client.patch(url, {"system": "Answer in French."}, format="json")
    cleared = acme.client.patch(url, {"system": ""}, format="json")

    assert (second.data["system"], second.data["system_version"]) == ("Answer in French.", 2)
    assert same.data["system_version"] == 2
    assert (cleared.data["system"], cleared.data["system_version"]) == (None, 3)
    texts = SystemPrompt.objects.filter(thread__public_id=thread_id).values_list("text", flat=True)
    assert list(texts) == [PROMPT, "Answer in French.", ""]


def test_context_uses_it_when_the_request_gives_none_and_records_its_hash(acme):
    thread_id = create(acme, system=PROMPT).data["id"]
    post(acme.client, messages_url(thread_id), {"role": "user", "content": "hi"}, "k1")

    response = context(acme, thread_id)

    assert response.status_code == 200
    assert response.data["messages"][0] == {"role": "system", "content": PROMPT}
    assert response.data["sections"]["system"]["hash"] == sha256_hex(PROMPT)
    record = AssemblyRecord.objects.get(public_id=response.data["assembly_id"])
    assert assembly_items(record)[0] == {
        "kind": "system",
        "hash": sha256_hex(PROMPT),
        "tokens": response.data["sections"]["system"]["tokens"],
    }
    assert PROMPT not in str(assembly_items(record))


def test_a_request_prompt_wins_and_an_empty_one_means_none(acme):
    thread_id = create(acme, system=PROMPT).data["id"]
    post(acme.client, messages_url(thread_id), {"role": "user", "content": "hi"}, "k1")

    given = context(acme, thread_id, system="Be brief.")
    none = context(acme, thread_id, system="")
    null = context(acme, thread_id, system=None)

    assert given.data["messages"][0] == {"role": "system", "content": "Be brief."}
    assert none.data["sections"]["system"] is None
    assert none.data["messages"][0]["role"] == "user"
    assert null.data["messages"][0] == {"role": "system", "content": PROMPT}


def test_erasing_the_thread_erases_its_prompts(acme, acme_exporter):
    thread = make_thread(acme.tenant)
    acme.client.patch(f"/api/v1/threads/{thread.public_id}", {"system": PROMPT}, format="json")

    response = acme.client.delete(f"/api/v1/threads/{thread.public_id}")

    assert response.status_code in (200, 202, 204), response.content
    assert not SystemPrompt.objects.filter(thread=thread).exists()


def test_the_thread_export_carries_every_version(acme, acme_exporter):
    thread_id = create(acme, system=PROMPT).data["id"]
    acme.client.patch(f"/api/v1/threads/{thread_id}", {"system": "Be brief."}, format="json")

    response = acme_exporter.client.get(f"/api/v1/threads/{thread_id}/export")
    document = json.loads(b"".join(response.streaming_content))

    jsonschema.validate(document, EXPORT_SCHEMA)
    prompts = document["threads"][0]["system_prompts"]
    assert [(p["version"], p["text"]) for p in prompts] == [(1, PROMPT), (2, "Be brief.")]
