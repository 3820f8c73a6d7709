"""/respond with a thread-level system prompt: every turn reaches the model with it."""

PROMPT = "You are the shop's support assistant."


def test_every_respond_call_reaches_the_model_with_it(acme, chat):
    thread_id = acme.client.post(
        "/api/v1/threads", {"user_ref": "u1", "system": PROMPT}, format="json"
    ).data["id"]
    url = f"/api/v1/threads/{thread_id}/respond"

    for key, content in (("r1", "Where is my order?"), ("r2", "And the invoice?")):
        response = acme.client.post(
            url, {"content": content}, format="json", HTTP_IDEMPOTENCY_KEY=key
        )
        assert response.status_code == 201, response.data

    sent = [request.body["messages"] for request in chat.requests]
    assert [messages[0] for messages in sent] == [{"role": "system", "content": PROMPT}] * 2
