"""API fuzzing: schemathesis generates requests from our own OpenAPI schema.

Every operation, positive and negative data, called as acme and as globex through the real WSGI
application (same process, same test transaction). Checks: no 5xx, status codes / content
types / bodies conform to the schema, schema-violating input is rejected with a 4xx, and an id
that belongs to the other tenant answers 404. Path ids and body ids are sometimes replaced by
real ones (seeded through the services) so requests reach the code behind the 404.
"""

import os
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import APIOperation, Case, GenerationMode
from schemathesis.core.parameters import ParameterLocation
from schemathesis.core.result import Ok
from schemathesis.specs.openapi.checks import positive_data_acceptance

from audit.deletion import deletion_request_file
from compaction.context import context_assemble
from convmem.models import KNOWN_SCOPES
from convmem.tenancy import api_key_create
from convmem.wsgi import application
from tests.conftest import SYSTEM, TenantKit, make_thread
from tests.support.chat_server import ChatServer
from threads import services
from threads.content import NULL_CONTENT
from threads.selectors import thread_get

# Modest by default so the suite stays fast; raise for a deeper run, e.g.
# CONVMEM_FUZZ_EXAMPLES=200 python3 dev.py test tests/api/test_fuzz.py
MAX_EXAMPLES = int(os.environ.get("CONVMEM_FUZZ_EXAMPLES", "12"))
MAX_COVERAGE_CASES = 5 * MAX_EXAMPLES
# 400s that schema-valid input may still get, for rules a JSON Schema cannot state (or not
# simply): references to objects that do not exist (or belong to another tenant or thread:
# `unknown_*`), cursors not issued by the server, context for a thread with no message yet or
# a budget that cannot fit its current turn, text that is blank once trimmed, NUL characters
# and unpaired surrogates (PostgreSQL cannot store them), and rules across fields ("exactly
# one of …", `non_field_errors`, reserve below window).
STATE_CODES = {
    # agent turns: which fields a role takes, and whether a tool call is open to answer
    "field_not_for_role",
    "tool_call_id_required",
    "tool_result_without_call",
    "tool_call_answered",
    "tool_results_pending",
    "duplicate_tool_call_ids",
    "inline_data_not_supported",
    # image URLs: the allowed schemes, hosts and addresses are settings (and DNS)
    "url_not_allowed",
    "invalid_cursor",
    "empty_content",
    "empty_thread",
    "budget_too_small",
    "retrieved_over_budget",
    "reserve_exceeds_window",
    # respond: an answer cap above the budget's output reserve
    "max_tokens_over_reserve",
    # usage: `to` before `from`, or a period too long for its grouping
    "invalid_period",
    # search: a query with no word to look up (punctuation only)
    "invalid_query",
    # imports: a ChatGPT or Claude export names no end user, and the request named none
    "user_ref_required",
    # webhooks: an endpoint's host must resolve to a public address (DNS, and a setting)
    "webhook_url_refused",
}
UNSTATED_RULES = {
    "Invalid cursor.",
    "This field may not be blank.",
    "Null characters are not allowed.",
    "Text must not contain NUL characters or unpaired surrogates.",
    "The path or query string contains a NUL character.",
    "assembly_id is only accepted on assistant messages.",
    # null content, which the schema allows for an assistant turn that only calls tools (on an
    # edit the role is the edited message's, which the body cannot show)
    NULL_CONTENT,
    # a webhook URL: the schema says `uri`, which admits more than an http(s) URL with a host
    "Enter a valid URL.",
    # a thread's expiry: a date the schema cannot compare with now, and the two fields that
    # say the same thing, one at a time
    "Must be in the future.",
    "Give expires_at or expires_in, not both.",
}
# Rules with codes of their own that the schema cannot state either: a usage report's cached
# and cache-write tokens are parts of its prompt tokens (a sum across three fields).
UNSTATED_CODED_RULES = {
    "invalid_usage": {
        "usage.cached_tokens and usage.cache_write_tokens are part of prompt_tokens: "
        "together they cannot be more."
    },
}
ID_FIELDS = {
    "thread_id": "thr_",
    "message_id": "msg_",
    "leaf": "msg_",
    "leaf_id": "msg_",
    "parent_id": "msg_",
    "active_leaf_id": "msg_",
    "assembly_id": "asm_",
    "request_id": "del_",
}


@dataclass
class Seeded:
    """Real public ids, by prefix: the caller's own and the other tenant's."""

    key: str
    own: dict[str, list[str]] = field(default_factory=dict)
    foreign: dict[str, list[str]] = field(default_factory=dict)
    always_valid: bool = False

    def pick(self, prefix: str, generated: Any) -> Any:
        """Deterministically (from the generated value) keep it, or take an own/foreign id;
        with ``always_valid``, always one of the caller's own ids."""
        pool = self.own.get(prefix, [])
        if not self.always_valid:
            pool = pool + self.foreign.get(prefix, [])
        if not pool or not isinstance(generated, str):
            return generated
        choices = len(pool) if self.always_valid else len(pool) + 1
        slot = zlib.crc32(generated.encode("utf-8", "surrogatepass")) % choices
        return generated if slot == len(pool) else pool[slot]

    def is_foreign(self, value: Any) -> bool:
        return any(value in ids for ids in self.foreign.values())


def _seed(kit: TenantKit) -> dict[str, list[str]]:
    """A thread with turns and an edit, an empty thread, an assembly and a deletion request."""
    thread = make_thread(kit.tenant, user_ref="fuzz-user", turns=4)
    leaf = thread.active_leaf
    edited = services.message_edit(
        thread=thread, actor=SYSTEM, message_public_id=leaf.public_id, content="edited"
    )
    empty = make_thread(kit.tenant, user_ref="fuzz-user")
    assembly = context_assemble(
        thread=thread_get(tenant=kit.tenant, public_id=thread.public_id), actor=SYSTEM
    )
    deletion = deletion_request_file(tenant=kit.tenant, actor=SYSTEM, user_ref="fuzz-erasure")
    messages = list(thread.messages.exclude(role="root").values_list("public_id", flat=True))
    return {
        "thr_": [thread.public_id, empty.public_id],
        "msg_": [*messages, edited.public_id],
        "asm_": [assembly.record.public_id],
        "del_": [deletion.public_id],
    }


def _load_schema() -> Any:
    config = schemathesis.Config.from_dict(
        {
            "generation": {
                "max-examples": MAX_EXAMPLES,
                # Unknown query parameters are ignored (forward compatibility), not an error.
                "allow-extra-parameters": False,
                # Auth is sent by the test with a real key; `ignored_auth` still checks 401s.
                "with-security-parameters": False,
            },
            # 413 (a body over CONVMEM_MAX_REQUEST_BYTES) is a rejection too.
            "checks": {
                "negative_data_rejection": {
                    "expected-statuses": [
                        *(400, 401, 403, 404, 405, 406, 409, 413, 415, 422, 428, 429),
                        "5xx",
                    ]
                }
            },
        }
    )
    return schemathesis.openapi.from_wsgi("/api/v1/schema/", application, config=config)


SCHEMA = _load_schema()
OPERATIONS = sorted(
    result.ok().label for result in SCHEMA.get_all_operations() if isinstance(result, Ok)
)


def _substitute_ids(case: Case, seeded: Seeded) -> None:
    """Swap generated ids for real ones in the components generated as valid data."""
    meta = case.meta
    positive = {
        location
        for location, component in (meta.components.items() if meta else ())
        if component.mode.is_positive
    }
    containers = [
        (ParameterLocation.PATH, case.path_parameters),
        (ParameterLocation.QUERY, case.query),
        (ParameterLocation.BODY, case.body if isinstance(case.body, dict) else None),
    ]
    for location, values in containers:
        if location not in positive or not values:
            continue
        for name, prefix in ID_FIELDS.items():
            if name in values:
                values[name] = seeded.pick(prefix, values[name])


def _coverage_cases(operation: APIOperation) -> list[Case]:
    """Schemathesis' deterministic boundary cases (missing/invalid parameters, edge values)."""
    cases = SCHEMA.iter_coverage_cases(
        operation,
        generation_modes=list(GenerationMode),
        generation_config=SCHEMA.config.generation_for(operation=operation),
    )
    return list(islice(cases, MAX_COVERAGE_CASES))


@pytest.fixture
def in_test_transaction() -> Iterator[None]:
    """Let WSGI calls share the test's connection (and transaction), as Django's test client does.

    Django's handler closes "old" connections at request start and end, which would close the
    connection holding the test transaction.
    """
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def chat_model(settings: Any) -> Iterator[None]:
    """The respond endpoint's model: the real local chat server (answers never fail)."""
    with ChatServer() as server:
        settings.CONVMEM_CHAT_BASE_URL = server.base_url
        yield


@pytest.mark.usefixtures("in_test_transaction", "chat_model")
@pytest.mark.parametrize("label", OPERATIONS)
@pytest.mark.parametrize("tenant", ["acme", "globex"])
def test_operation_conforms_to_its_schema(
    label: str, tenant: str, acme: TenantKit, globex: TenantKit
) -> None:
    caller, other = (acme, globex) if tenant == "acme" else (globex, acme)
    # With every scope, so the export endpoints are fuzzed too (not just refused with 403).
    _, key = api_key_create(tenant=caller.tenant, name="fuzz", scopes=list(KNOWN_SCOPES))
    seeded = Seeded(key=key, own=_seed(caller), foreign=_seed(other))
    operation = SCHEMA.find_operation_by_label(label)
    for case in _coverage_cases(operation):
        _check(case, seeded)

    @settings(
        max_examples=MAX_EXAMPLES,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(case=st.one_of(operation.as_strategy(mode) for mode in GenerationMode))
    def fuzz(case: Case) -> None:
        _check(case, seeded)

    fuzz()


@pytest.mark.usefixtures("in_test_transaction", "chat_model")
@pytest.mark.parametrize("label", OPERATIONS)
def test_operation_with_valid_ids_never_fails_on_the_server(label: str, acme: TenantKit) -> None:
    """Every id in the path, query and body is a real one of the caller's (a thread with turns,
    an empty one, messages, an edit, an assembly, a deletion request), so every request reaches
    the code behind the lookups; ``DELETE`` erases the seeded thread on the way."""
    _, key = api_key_create(tenant=acme.tenant, name="fuzz", scopes=list(KNOWN_SCOPES))
    seeded = Seeded(key=key, own=_seed(acme), always_valid=True)
    operation = SCHEMA.find_operation_by_label(label)
    for case in _coverage_cases(operation):
        _check(case, seeded)

    @settings(
        max_examples=MAX_EXAMPLES,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(case=st.one_of(operation.as_strategy(mode) for mode in GenerationMode))
    def fuzz(case: Case) -> None:
        _check(case, seeded)

    fuzz()


def _check(case: Case, seeded: Seeded) -> None:
    _substitute_ids(case, seeded)
    response = case.call_and_validate(
        headers={"Authorization": f"Bearer {seeded.key}"},
        excluded_checks=[positive_data_acceptance],
    )
    assert response.status_code < 500, response.text
    positive = bool(case.meta and case.meta.generation.mode.is_positive)
    if any(seeded.is_foreign(value) for value in (case.path_parameters or {}).values()):
        # Another tenant's object is indistinguishable from one that does not exist (unless
        # the request is refused before the lookup: malformed, or too large).
        assert response.status_code in (400, 404, 413) if positive else response.status_code >= 400
    if positive and response.status_code == 400:
        # Schema-valid data may still break a rule the schema cannot state (an id that must
        # name an existing object, a cursor that must come from `next`); nothing else.
        error = response.json()
        if error["code"] != "invalid":
            referential = error["code"].startswith("unknown_")  # unknown_message, _thread, …
            unstated = error["detail"] in UNSTATED_CODED_RULES.get(error["code"], ())
            assert referential or unstated or error["code"] in STATE_CODES, response.text
        else:
            errors = error.get("errors") or {"detail": error["detail"]}
            if isinstance(errors, dict):
                errors.pop("non_field_errors", None)
            assert set(_messages(errors)) <= UNSTATED_RULES, response.text


def _messages(errors: Any) -> list[str]:
    if isinstance(errors, dict):
        return [m for value in errors.values() for m in _messages(value)]
    if isinstance(errors, list):
        return [m for value in errors for m in _messages(value)]
    # A batch names the message a rule refused: the rule is the same as on a single append.
    return [BATCH_ITEM.sub("", str(errors))]


BATCH_ITEM = re.compile(r"^messages\[\d+\]: ")
