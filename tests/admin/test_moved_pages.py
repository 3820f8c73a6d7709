"""Admin pages of models that moved app in the December 2026 split answer their old URLs with a
permanent redirect to the new ones, query string kept."""

import pytest

from tests.conftest import make_thread


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("/admin/audit/auditevent/?action=thread.created", "/admin/auditlog/auditevent/"),
        ("/admin/audit/assemblyrecord/", "/admin/compaction/assemblyrecord/"),
        ("/admin/audit/contentblob/", "/admin/compaction/contentblob/"),
        ("/admin/compaction/modelprofile/1/change/", "/admin/convmem/modelprofile/1/change/"),
    ],
)
def test_old_admin_urls_redirect_to_the_new_app(admin_client, old, new):
    r = admin_client.get(old)

    assert r.status_code == 301
    query = old.partition("?")[2]
    assert r["Location"] == new + (f"?{query}" if query else "")


def test_the_redirect_lands_on_a_working_page(acme, admin_client):
    make_thread(acme.tenant, turns=1)

    r = admin_client.get("/admin/audit/auditevent/", follow=True)

    assert r.status_code == 200
    assert r.redirect_chain == [("/admin/auditlog/auditevent/", 301)]
    assert b"thread.created" in r.content
