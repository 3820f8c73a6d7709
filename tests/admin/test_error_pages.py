"""The 403, 404 and 500 pages fit the admin, and the 403 page names the missing permission
(and the group that has it) wherever that can be told."""

import pytest
from django.test import Client, RequestFactory
from django.urls import reverse

from audit.deletion import deletion_request_file
from convmem.error_pages import server_error
from tests.admin.conftest import Branched
from tests.conftest import SYSTEM


def page(response) -> str:
    assert response["Content-Type"].startswith("text/html")
    return response.content.decode()


def test_a_staff_member_without_a_group_is_told_which_permission_a_list_needs(
    plain_staff: Client,
):
    r = plain_staff.get(reverse("admin:threads_thread_changelist"))

    assert r.status_code == 403
    html = page(r)
    assert "“Can view thread” permission (threads.view_thread)" in html
    assert "Staff in the Compliance or Support group have it." in html
    assert "pat-plain" in html  # the admin's user tools: the page is an admin page
    assert 'id="user-tools"' in html
    assert "Back to the admin home" in html


def test_support_is_told_deletion_requests_need_the_compliance_role(
    support: Client, branched: Branched
):
    request = deletion_request_file(tenant=branched.thread.tenant, actor=SYSTEM, user_ref="u")

    listing = page(support.get(reverse("admin:audit_deletionrequest_changelist")))
    review = page(support.get(reverse("admin:audit_deletionrequest_change", args=[request.pk])))

    for html in (listing, review):
        assert "(audit.view_deletionrequest)" in html
        assert "Staff in the Compliance group have it." in html


def test_support_is_told_exports_need_the_export_permission(support: Client, branched: Branched):
    r = support.get(reverse("admin:threads_thread_export", args=[branched.thread.public_id]))

    assert r.status_code == 403
    assert "(audit.export_history). Staff in the Compliance group have it." in page(r)


def test_a_step_asked_for_by_get_says_where_the_buttons_are(compliance: Client, branched: Branched):
    request = deletion_request_file(tenant=branched.thread.tenant, actor=SYSTEM, user_ref="u")
    url = reverse(
        "admin:audit_deletionrequest_step",
        kwargs={"object_id": request.public_id, "step": "approve"},
    )

    r = compliance.get(url)

    assert r.status_code == 403
    assert "Approve, Reject and Execute are buttons on the review page." in page(r)


def test_a_missing_object_gets_the_404_page_in_the_admin(support: Client):
    r = support.get(reverse("admin:threads_thread_change", args=["thr_nothing"]))

    assert r.status_code == 404
    html = page(r)
    assert "Not found (404)" in html
    assert "/admin/threads/thread/thr_nothing/change/" in html
    assert 'id="user-tools"' in html


@pytest.mark.parametrize("path", ["/nothing-here", "/admin-not"])
def test_paths_outside_the_admin_and_the_api_get_the_404_page(client, db, path):
    r = client.get(path)

    assert r.status_code == 404
    html = page(r)
    assert "Not found (404)" in html
    assert 'href="/api/v1/"' in html
    assert 'id="user-tools"' not in html  # nobody is signed in


def test_the_500_page_needs_nothing_that_could_be_broken():
    r = server_error(RequestFactory().get("/admin/threads/thread/"))

    assert r.status_code == 500
    html = r.content.decode()
    assert "Server error (500)" in html
    assert "{%" not in html
