"""Routes the data keys (``convmem.DataKey``) to the ``keys`` database and everything else to
``default``: the content database never holds key material, and the keys database holds
nothing else (docs/erasure.md, "Keys")."""

from typing import Any

KEYS_DB = "keys"
KEY_MODELS = {("convmem", "datakey")}


def _is_key_model(app_label: str, model_name: str | None) -> bool:
    return (app_label, (model_name or "").lower()) in KEY_MODELS


class KeysRouter:
    def db_for_read(self, model: Any, **hints: Any) -> str | None:
        return KEYS_DB if _is_key_model(model._meta.app_label, model._meta.model_name) else None

    def db_for_write(self, model: Any, **hints: Any) -> str | None:
        return self.db_for_read(model, **hints)

    def allow_relation(self, obj1: Any, obj2: Any, **hints: Any) -> bool | None:
        return None

    def allow_migrate(
        self, db: str, app_label: str, model_name: str | None = None, **hints: Any
    ) -> bool:
        if _is_key_model(app_label, model_name):
            return db == KEYS_DB
        return db != KEYS_DB
