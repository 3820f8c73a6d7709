"""Name the permission a staff member lacks, for the 403 page: which one, and who has it."""

from django.apps import apps
from django.contrib import admin
from django.contrib.auth.models import Group, Permission
from django.http import HttpRequest

# The permission each standard admin page needs, by the last part of its URL name.
PAGE_ACTIONS = {
    "changelist": "view",
    "change": "view",
    "history": "view",
    "add": "add",
    "delete": "delete",
}


def permission_needed(perm: str) -> str:
    """ "This needs the “Can view thread” permission (threads.view_thread). Staff in the
    Support or Compliance group have it. …" — for ``PermissionDenied`` messages and the 403
    page. The groups are read from the database, so the text never names a group that lacks
    the permission (or says one has it when none does)."""
    app_label, _, codename = perm.partition(".")
    found = Permission.objects.filter(content_type__app_label=app_label, codename=codename).first()
    if found is None:
        return f"This needs the {perm} permission."
    text = f"This needs the “{found.name}” permission ({perm})."
    groups = list(
        Group.objects.filter(permissions=found).order_by("name").values_list("name", flat=True)
    )
    if groups:
        either = "it" if len(groups) == 1 else "one of them"
        text += (
            f" Staff in the {' or '.join(groups)} group have it. An administrator can add you"
            f" to {either}, or give you the permission itself."
        )
    else:
        text += " No group has it: an administrator can give it to you or to your group."
    return text


def missing_page_permission(request: HttpRequest) -> str | None:
    """The permission the admin page at ``request`` needs and the user lacks, if it can be
    told from the URL (a model's list, change, add, delete or history page, or a page of its
    own under the model: view at least)."""
    match = request.resolver_match
    if match is None or match.namespace != admin.site.name or not match.url_name:
        return None
    for model in apps.get_models():
        opts = model._meta
        prefix = f"{opts.app_label}_{opts.model_name}_"
        if admin.site.is_registered(model) and match.url_name.startswith(prefix):
            action = PAGE_ACTIONS.get(match.url_name.removeprefix(prefix), "view")
            perm = f"{opts.app_label}.{action}_{opts.model_name}"
            return None if request.user.has_perm(perm) else perm
    return None
