"""Replay: rebuild the exact model input of a recorded assembly and check it against its hash.

The record holds ids, not text. Replay reads what those ids name now — message contents (with
their content parts and tool calls), summary texts, content blobs (system prompt, retrieved
items) — and renders them with ``compaction.rendering.render``, the function the assembler
used, after checking that the curator version the record names is one this deployment knows
(``compaction.curator.check_version_known``).
When the rebuilt input's hash differs from the recorded one, ``reason`` says why: content
erased since (naming the ids), a summary or blob no longer stored, an assembler version this
deployment does not know. Pure reads: nothing is written.
"""

from dataclasses import dataclass, field
from typing import Any

from compaction.curator import UnknownCuratorVersion, check_version_known
from compaction.models import AssemblyRecord, Summary
from compaction.rendering import MessagePayload, item_payload_key, render, rendered_hash
from compaction.selectors import assembly_blobs, assembly_items
from convmem.sealed_fields import stored_open
from threads.erasure import ERASED
from threads.models import Message

# Shown in place of a text that is no longer stored at all (``reason`` names it).
NOT_STORED = "[not stored]"


@dataclass(frozen=True)
class Replay:
    assembly_id: str
    messages: list[dict[str, Any]]
    rendered_hash: str
    replayed_hash: str
    matches: bool
    reason: str | None


@dataclass
class _Texts:
    by_key: dict[str, Any] = field(default_factory=dict)
    erased: list[str] = field(default_factory=list)
    gone: list[str] = field(default_factory=list)


# Where an item's payload is stored: messages (shown or recalled), summaries, content blobs.
_KIND_OF_PAYLOAD = {"message": "message", "recalled": "message", "summary": "summary"}


def _texts(assembly: AssemblyRecord, items: list[dict[str, Any]]) -> _Texts:
    """The current text of every item (three queries), and which ones are erased or gone."""
    keys = {item_payload_key(i) for i in items}
    by_kind: dict[str, set[str]] = {"message": set(), "summary": set(), "blob": set()}
    for item in items:
        kind = _KIND_OF_PAYLOAD.get(item["kind"], "blob")
        by_kind[kind].add(item_payload_key(item))
    found = _Texts()
    for public_id, content, parts, calls, call_id, erased_at in Message.objects.filter(
        thread_id=assembly.thread_id, public_id__in=by_kind["message"]
    ).values_list(
        "public_id", "content", "content_parts", "tool_calls", "tool_call_id", "erased_at"
    ):
        found.by_key[public_id] = MessagePayload(
            stored_open(Message, "content", public_id, content),
            stored_open(Message, "content_parts", public_id, parts),
            stored_open(Message, "tool_calls", public_id, calls),
            call_id,
        )
        if erased_at is not None:
            found.erased.append(public_id)
    for public_id, text in Summary.objects.filter(
        thread_id=assembly.thread_id, public_id__in=by_kind["summary"]
    ).values_list("public_id", "text"):
        found.by_key[public_id] = stored_open(Summary, "text", public_id, text)
        if text == ERASED:
            found.erased.append(public_id)
    for sha256, blob in assembly_blobs(assembly, by_kind["blob"]).items():
        found.by_key[sha256] = ERASED if blob.erased_at is not None else blob.text
        if blob.erased_at is not None:
            found.erased.append(f"blob {sha256[:12]}")
    for key in keys - found.by_key.keys():
        found.by_key[key] = MessagePayload(NOT_STORED) if key.startswith("msg_") else NOT_STORED
        found.gone.append(key if key.startswith(("msg_", "sum_")) else f"blob {key[:12]}")
    return found


def _reason(texts: _Texts) -> str:
    problems = []
    if texts.erased:
        problems.append("content erased since: " + ", ".join(texts.erased))
    if texts.gone:
        problems.append("no longer stored: " + ", ".join(sorted(texts.gone)))
    return "; ".join(problems) or "the assembler renders this record differently now"


def assembly_replay(
    *,
    assembly: AssemblyRecord,
    items: list[dict[str, Any]] | None = None,
    rendered: list[dict[str, Any]] | None = None,
) -> Replay:
    """Rebuild ``assembly``'s model input now; see the module docstring. ``items``: its items
    expanded (``Assembly.items``), from whoever assembled it; they spare the two reads that
    expand the record's runs (the texts are read now all the same). Items that are not the
    record's cannot pass for them: the rebuilt input's hash would differ. ``rendered``: the
    input as whoever assembled it rendered it; taken as it is, with nothing read, when its hash
    is the record's (else the input is rebuilt as without it)."""
    try:
        check_version_known(assembly.assembler_version)
    except UnknownCuratorVersion:
        return Replay(
            assembly_id=assembly.public_id,
            messages=[],
            rendered_hash=assembly.rendered_hash,
            replayed_hash="",
            matches=False,
            reason=f"unknown assembler version {assembly.assembler_version!r}",
        )
    if rendered is not None and rendered_hash(rendered) == assembly.rendered_hash:
        return Replay(
            assembly_id=assembly.public_id,
            messages=rendered,
            rendered_hash=assembly.rendered_hash,
            replayed_hash=assembly.rendered_hash,
            matches=True,
            reason=None,
        )
    if items is None:
        items = assembly_items(assembly)
    texts = _texts(assembly, items)
    messages = render(items, texts.by_key)
    replayed = rendered_hash(messages)
    matches = replayed == assembly.rendered_hash
    return Replay(
        assembly_id=assembly.public_id,
        messages=messages,
        rendered_hash=assembly.rendered_hash,
        replayed_hash=replayed,
        matches=matches,
        reason=None if matches else _reason(texts),
    )
