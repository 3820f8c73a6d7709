"""JSON stored without the spaces ``json.dumps`` puts after ``,`` and ``:``.

SQLite keeps a JSONField as the text Django encodes, so those spaces are stored bytes: about a
tenth of an id-heavy record. PostgreSQL's ``jsonb`` parses the text and is unaffected.
"""

import json
from functools import partial
from typing import Any

from django.db import models
from psycopg.types.json import Json


class CompactJSONEncoder(json.JSONEncoder):
    """``json.JSONEncoder`` with the separators ``(",", ":")``, whatever the caller asks."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**{**kwargs, "separators": (",", ":")})


class CompactJSONField(models.JSONField):
    """A ``JSONField`` for rows written once and read whole: kept as its compact text on
    both databases (``json`` on PostgreSQL, not ``jsonb``).

    ``jsonb`` stores a header and an offset per key and value besides them; for the assembly
    records' small id-heavy documents that is a third more than the text (issue 24, stored
    bytes). ``json`` keeps the text as given, so values are sent as ``json`` (psycopg's
    ``Json``, not ``Jsonb``, whose text output would add spaces) with the compact encoder.
    What ``json`` lacks: equality and ordering operators (compare a key's text, cast, as
    ``KT(...)`` does) and GIN indexes; the key operators (``->``, ``->>``, ``#>``) work.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("encoder", CompactJSONEncoder)
        super().__init__(*args, **kwargs)

    def db_type(self, connection: Any) -> str | None:
        if connection.vendor == "postgresql":
            return "json"
        return super().db_type(connection)

    def get_db_prep_value(self, value: Any, connection: Any, prepared: bool = False) -> Any:
        if connection.vendor != "postgresql":
            return super().get_db_prep_value(value, connection, prepared)
        if not prepared:
            value = self.get_prep_value(value)
        return Json(value, dumps=partial(json.dumps, cls=self.encoder))

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        # psycopg decodes ``json`` itself (Django has it leave only ``jsonb`` as text).
        if value is not None and not isinstance(value, str):
            return value
        return super().from_db_value(value, expression, connection)
