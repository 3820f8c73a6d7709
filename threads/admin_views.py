"""Staff admin pages for threads: the conversation as branches, a side branch on demand, and the
lineage of one message.

The conversation page never reads the whole tree. It shows one stretch of one path, read
leaf-up (``selectors.path_page``), plus the sibling groups of the nodes on it (one query for all
of them): that is what the "2 / 3" switchers, the edit history and the collapsed side branches
need. A side branch is read only when asked for, walking down from its first node. The number of
queries is the same for a 20-message thread and a 10,000-message one.

Every page that shows message content writes an audit event naming the staff member.
"""

from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.contrib.admin import ModelAdmin
from django.core.exceptions import PermissionDenied
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseRedirect,
)
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.http import urlencode

from auditlog.events import thread_view_record
from threads import admin_display, selectors
from threads.models import Message, Role, Thread

PAGE_SIZE = 40
# When switching to another branch at a fork, how many messages above the fork stay in view.
FORK_CONTEXT = 4
# A branch walk stops here; deeper than any real conversation, it only bounds a runaway walk.
MAX_BRANCH_DEPTH = 100_000
BRANCH_PREVIEW = 12
LINEAGE_ANCESTORS = 5


@dataclass
class NodeView:
    """One message on the shown path, with what the page needs to draw its fork."""

    message: Message
    position: int
    siblings: list[selectors.SiblingNode]
    previous: selectors.SiblingNode | None
    next: selectors.SiblingNode | None
    others: list[selectors.SiblingNode]
    replaced: selectors.SiblingNode | None
    edited_by: list[selectors.SiblingNode]
    is_active_leaf: bool
    # How the body reads: parts, tool calls with their results (``threads.admin_display``).
    turn: admin_display.Turn = field(default_factory=admin_display.Turn)
    # What apps above threads attach (compaction: the memos ending at this message).
    memos: list[Any] = field(default_factory=list)

    @property
    def is_fork(self) -> bool:
        return len(self.siblings) > 1


def thread_url(thread: Thread, **params: str) -> str:
    url = reverse("admin:threads_thread_change", args=[thread.public_id])
    return f"{url}?{urlencode(params)}" if params else url


def _visible_node(thread: Thread, public_id: str | None) -> Message | None:
    if not public_id:
        return None
    node = selectors.visible_message(thread, public_id)
    if node is None:
        raise Http404("No such message in this thread.")
    return node


def _node_views(
    thread: Thread, page: list[Message], groups: dict[int, list[selectors.SiblingNode]]
) -> list[NodeView]:
    # A tool result at a fork keeps its own place (and switcher); the others go under their call.
    nest = [m.pk for m in page if m.role == Role.TOOL and len(groups[m.parent_id]) == 1]
    turns = admin_display.turns(page, nest=nest)
    views = []
    for message in page:
        siblings = groups[message.parent_id]
        index = next(i for i, s in enumerate(siblings) if s.id == message.id)
        by_id = {s.id: s for s in siblings}
        views.append(
            NodeView(
                message=message,
                position=index + 1,
                siblings=siblings,
                previous=siblings[index - 1] if index > 0 else None,
                next=siblings[index + 1] if index + 1 < len(siblings) else None,
                others=[s for s in siblings if s.id != message.id],
                # An edit is a sibling of the node it edits, so the group already holds it.
                replaced=by_id.get(message.edits_id) if message.edits_id else None,
                edited_by=[s for s in siblings if s.edits_id == message.id],
                is_active_leaf=message.pk == thread.active_leaf_id,
                turn=turns[message.pk],
            )
        )
    return views


def body_context(model_admin: ModelAdmin, thread: Thread) -> dict[str, Any]:
    """What every message body on a page needs (``admin/threads/message/body.html``)."""
    return {
        "elided": model_admin.elided_in_latest_input(thread),
        "thumbnails": settings.CONVMEM_ADMIN_IMAGE_THUMBNAILS,
    }


def conversation_view(
    model_admin: ModelAdmin, request: HttpRequest, thread: Thread
) -> HttpResponse:
    """The thread page: one stretch of one path with its forks.

    Query string: ``leaf`` (the tip of the shown branch; default the active leaf), ``end`` (the
    newest message in view, for paging back; default ``leaf``) and ``branch`` (a node to switch
    to: redirects to the tip of its newest-child branch with the fork in view). Switching here
    only changes what is shown; the thread's active leaf stays where the API put it.
    """
    branch = _visible_node(thread, request.GET.get("branch"))
    if branch is not None:
        ends = selectors.branch_ends(
            thread=thread,
            start=branch,
            window=PAGE_SIZE - FORK_CONTEXT,
            max_depth=MAX_BRANCH_DEPTH,
        )
        public = dict(
            Message.objects.filter(pk__in={ends.tip_id, ends.window_end_id}).values_list(
                "pk", "public_id"
            )
        )
        params = {"leaf": public[ends.tip_id]}
        if ends.window_end_id != ends.tip_id:
            params["end"] = public[ends.window_end_id]
        return HttpResponseRedirect(f"{thread_url(thread, **params)}#{branch.public_id}")

    leaf = _visible_node(thread, request.GET.get("leaf")) or thread.active_leaf
    end = _visible_node(thread, request.GET.get("end")) or leaf
    if end.role == Role.ROOT:
        page = selectors.PathPage(messages=[], older_start=None)
    else:
        page = selectors.path_page(thread=thread, leaf=end, limit=PAGE_SIZE)
    groups = selectors.sibling_groups(
        thread=thread, parent_ids={m.parent_id for m in page.messages} | {end.pk}
    )
    nodes = _node_views(thread, page.messages, groups)
    by_last = model_admin.memos_ending_at(thread, [m.pk for m in page.messages])
    for node in nodes:
        node.memos = by_last.get(node.message.pk, [])

    thread_view_record(user=request.user, thread=thread, what="thread")
    older = None
    if page.older_start is not None:
        older = thread_url(thread, leaf=leaf.public_id, end=page.older_start.public_id)
    on_active = leaf.pk == thread.active_leaf_id
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.model._meta,
        **body_context(model_admin, thread),
        "title": thread_title(thread),
        "thread": thread,
        "nodes": nodes,
        "leaf": leaf,
        "end": end,
        "continuations": groups[end.pk],
        "older_url": older,
        "newest_url": thread_url(thread, leaf=leaf.public_id) if end.pk != leaf.pk else None,
        "active_url": None if on_active else thread_url(thread),
        "can_export": model_admin.can_export(request),
        "has_view_permission": True,
    }
    return TemplateResponse(request, "admin/threads/thread/conversation.html", context)


def branch_fragment_view(
    model_admin: ModelAdmin, request: HttpRequest, thread: Thread, message_id: str
) -> HttpResponse:
    """A side branch, from ``message_id`` down the newest children, as an HTML fragment that
    the conversation page loads when a collapsed branch is opened (or as a page without JS)."""
    start = _visible_node(thread, message_id)
    ids = selectors.branch_descent(thread=thread, start=start, limit=BRANCH_PREVIEW + 1)
    shown = ids[:BRANCH_PREVIEW]
    messages = Message.objects.in_bulk(shown)
    ordered = [messages[i] for i in shown]
    # The branch follows one path down, so each tool result goes under its call.
    turns = admin_display.turns(ordered, nest=[m.pk for m in ordered if m.role == Role.TOOL])
    thread_view_record(user=request.user, thread=thread, what=f"branch {start.public_id}")
    context = {
        **model_admin.admin_site.each_context(request),
        **body_context(model_admin, thread),
        "opts": model_admin.model._meta,
        "title": "A side branch",
        "thread": thread,
        "start": start,
        "messages": [(m, turns[m.pk]) for m in ordered],
        "more": len(ids) > BRANCH_PREVIEW,
        "open_url": thread_url(thread, branch=start.public_id),
        "has_view_permission": True,
    }
    fragment = request.headers.get("X-Requested-With") == "fetch"
    template = "branch_body.html" if fragment else "branch.html"
    return TemplateResponse(request, f"admin/threads/thread/{template}", context)


def message_lineage_view(
    model_admin: ModelAdmin, request: HttpRequest, message: Message
) -> HttpResponse:
    """One message with its lineage: a few ancestors, what it edits, what edits it, its
    siblings and children, the assembly it answered and the memos that cover it."""
    thread = message.thread
    parent = Message.objects.get(pk=message.parent_id)
    ancestors: list[Message] = []
    if parent.role != Role.ROOT:
        ancestors = selectors.path_page(
            thread=thread, leaf=parent, limit=LINEAGE_ANCESTORS
        ).messages
    groups = selectors.sibling_groups(thread=thread, parent_ids={message.parent_id, message.pk})
    siblings = groups[message.parent_id]
    edits = None
    if message.edits_id:
        edits = Message.objects.only("public_id", "content", "role", "erased_at").get(
            pk=message.edits_id
        )
    summaries = model_admin.memos_covering(message)
    turns = admin_display.turns([*ancestors, message])
    thread_view_record(user=request.user, thread=thread, what=f"message {message.public_id}")
    context = {
        **model_admin.admin_site.each_context(request),
        **body_context(model_admin, thread),
        "opts": model_admin.model._meta,
        "title": admin_display.ROLE_TITLES.get(message.role, "A message"),
        "message": message,
        "thread": thread,
        "ancestors": [(a, turns[a.pk]) for a in ancestors],
        "turn": turns[message.pk],
        "more_ancestors": len(ancestors) == LINEAGE_ANCESTORS and ancestors[0].depth > 1,
        "edits": edits,
        "edited_by": [s for s in siblings if s.edits_id == message.pk],
        "siblings": siblings,
        "position": next(i for i, s in enumerate(siblings) if s.id == message.pk) + 1,
        "children": groups[message.pk],
        "summaries": summaries,
        "thread_url": thread_url(thread, leaf=message.public_id),
        "has_view_permission": True,
    }
    return TemplateResponse(request, "admin/threads/message/lineage.html", context)


def thread_title(thread: Thread) -> str:
    """The page title: the thread's title, or who it belongs to when it has none (or was erased)."""
    if thread.erased_at or thread.deleted_at:
        return "Erased conversation"
    return thread.title or f"Conversation of {thread.user_ref}"


def require_view(model_admin: ModelAdmin, request: HttpRequest) -> None:
    if not model_admin.has_view_permission(request):
        raise PermissionDenied
