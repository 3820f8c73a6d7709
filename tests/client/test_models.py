"""The Python client's typed results follow the API's OpenAPI schema: each dataclass has exactly
its schema component's properties, and every property that may be null or absent is typed
``… | None``."""

import dataclasses
import types
import typing

import pytest
from convmem_client import models
from drf_spectacular.generators import SchemaGenerator

RESOURCES = [
    cls
    for cls in vars(models).values()
    if isinstance(cls, type) and issubclass(cls, models.Resource) and cls.__schema__
]


@pytest.fixture(scope="module")
def components() -> dict[str, dict]:
    return SchemaGenerator().get_schema(request=None, public=True)["components"]["schemas"]


def test_every_resource_of_the_schema_has_a_class(components):
    responses = {"Thread", "Message", "TreeNode", "MessageBatch", "ContextResponse", "Summary"}
    responses |= {"Replay", "RespondResult", "DeletionRequest", "SearchHit", "UsageRollup"}
    responses |= {"Run", "ImportReport", "WebhookEndpoint", "WebhookEndpointWithSecret"}
    responses |= {"WebhookDelivery"}
    assert responses <= {cls.__schema__ for cls in RESOURCES}


@pytest.mark.parametrize("cls", RESOURCES, ids=lambda cls: cls.__name__)
def test_the_class_has_the_properties_of_its_component(cls, components):
    component = components[cls.__schema__]
    hints = typing.get_type_hints(cls)
    fields = {
        models.api_name(item): hints[item.name]
        for item in dataclasses.fields(cls)
        if item.name not in ("raw", "idempotency_key")
    }
    assert set(fields) == set(component["properties"])
    for name, schema in component["properties"].items():
        may_be_missing = schema.get("nullable") or name not in component.get("required", [])
        # A property without a type (free JSON, e.g. `metadata`, `proof`) may be null too.
        may_be_missing = may_be_missing or not ({"type", "$ref", "allOf", "oneOf"} & set(schema))
        if may_be_missing:
            assert _optional(fields[name]), f"{cls.__name__}.{name} may be null"


def _optional(hint: object) -> bool:
    return typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in (
        typing.get_args(hint)
    )
