"""JSON stored without the spaces ``json.dumps`` puts after ``,`` and ``:``.

SQLite keeps a JSONField as the text Django encodes, so those spaces are stored bytes: about a
tenth of an id-heavy record. PostgreSQL's ``jsonb`` parses the text and is unaffected.
"""

import json
from typing import Any


class CompactJSONEncoder(json.JSONEncoder):
    """``json.JSONEncoder`` with the separators ``(",", ":")``, whatever the caller asks."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**{**kwargs, "separators": (",", ":")})
