"""Small pieces every staff page draws the same way: a public id shown short and copyable,
a stored JSON value indented."""

import json
from typing import Any

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString

register = template.Library()

# "msg_QuYx4k…": the prefix and enough of the id to tell the ids on one page apart.
SHORT_ID_CHARS = 6


def short(public_id: str) -> str:
    prefix, sep, rest = public_id.partition("_")
    if not sep or len(rest) <= SHORT_ID_CHARS + 1:
        return public_id
    return f"{prefix}_{rest[:SHORT_ID_CHARS]}…"


@register.simple_tag
def short_id(public_id: str, url: str = "") -> SafeString:
    """The id shortened (the whole of it in the tooltip), a link when ``url`` is given, and a
    button that copies the whole id (the base template's script)."""
    text = short(public_id)
    label = format_html('<a href="{}">{}</a>', url, text) if url else text
    return format_html(
        '<span class="cm-id cm-short" title="{}">{}<button type="button"'
        ' class="cm-copy" data-copy="{}" aria-label="Copy the id {}">copy</button></span>',
        public_id,
        label,
        public_id,
        public_id,
    )


@register.filter
def pretty_json(value: Any) -> str:
    """A stored JSON value indented for reading (autoescaped by the template)."""
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)
