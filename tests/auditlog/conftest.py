"""The audit-log tests use the compliance tests' staff fixtures."""

from tests.audit.conftest import officer, support

__all__ = ["officer", "support"]
