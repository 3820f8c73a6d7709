"""Opaque public ids: a type prefix and 22 random base-62 characters (about 131 bits).

Internal primary keys stay integers for fast joins and CTE walks; the API only ever shows these.
"""

import re
import secrets
import string

ALPHABET = string.ascii_letters + string.digits
RANDOM_LENGTH = 22
# What any public id looks like (a prefix, then base-62); anything else cannot name an object.
PUBLIC_ID = re.compile(r"[a-z]{3}_[A-Za-z0-9]{1,64}")


# How many random parts there are: one number below it is drawn per id.
_SPACE = len(ALPHABET) ** RANDOM_LENGTH


def new_public_id(prefix: str) -> str:
    """Return a fresh unguessable id such as ``thr_3kZ…``: one uniform draw from the operating
    system's source, written in base 62 (a draw per character read it 22 times; every append
    and context makes ids)."""
    number = secrets.randbelow(_SPACE)
    characters = []
    for _ in range(RANDOM_LENGTH):
        number, digit = divmod(number, len(ALPHABET))
        characters.append(ALPHABET[digit])
    return f"{prefix}_" + "".join(characters)


def new_thread_id() -> str:
    return new_public_id("thr")


def new_message_id() -> str:
    return new_public_id("msg")


def new_summary_id() -> str:
    return new_public_id("sum")


def new_assembly_id() -> str:
    return new_public_id("asm")


def new_deletion_id() -> str:
    return new_public_id("del")


def new_run_id() -> str:
    return new_public_id("run")
