"""The Support and Compliance groups (created by a migration) and what they may do."""

import pytest

pytestmark = pytest.mark.django_db

READ = {
    "threads.view_thread",
    "threads.view_message",
    "compaction.view_summary",
    "compaction.view_assemblyrecord",
    # Regenerate a memo or mark it stale from its compare page (never the messages).
    "compaction.change_summary",
    # The usage and cost page (audit.migrations.0003_view_usage_for_staff_groups).
    "usage.view_usagereport",
}
COMPLIANCE_ONLY = {
    "audit.export_history",
    "audit.view_deletionrequest",
    "audit.add_deletionrequest",
    "audit.approve_deletionrequest",
    "audit.execute_deletionrequest",
    "auditlog.view_auditevent",
    "audit.add_legalhold",
    "audit.change_retentionpolicy",
}


def test_support_reads_conversations(support):
    assert support.get_all_permissions() == READ


def test_compliance_also_exports_and_handles_erasure(officer):
    assert officer.get_all_permissions() >= READ | COMPLIANCE_ONLY


def test_nobody_may_change_or_delete_the_record(officer, support):
    for user in (officer, support):
        for perm in ("threads.change_message", "threads.delete_message", "audit.delete_auditevent"):
            assert not user.has_perm(perm)
