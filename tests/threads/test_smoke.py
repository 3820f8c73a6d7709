def test_it_works(acme, idem):
    r = acme.client.post("/api/v1/threads", {"user_ref": "u1"}, format="json")
    assert r.status_code == 201, r.data
    tid = r.data["id"]
    r = acme.client.post(
        f"/api/v1/threads/{tid}/messages",
        {"role": "user", "content": "hi"},
        format="json",
        **idem(),
    )
    assert r.status_code == 201, r.data
    assert r.data["parent_id"] is None
    r2 = acme.client.post(
        f"/api/v1/threads/{tid}/messages",
        {"role": "assistant", "content": "hello"},
        format="json",
        **idem(),
    )
    assert r2.data["parent_id"] == r.data["id"]
    r = acme.client.get(f"/api/v1/threads/{tid}/messages")
    assert [m["content"] for m in r.data["results"]] == ["hi", "hello"], r.data
    r = acme.client.get(f"/api/v1/threads/{tid}/tree")
    assert len(r.data["results"]) == 2, r.data
    r = acme.client.get("/api/v1/schema/")
    assert r.status_code == 200
