"""A stateful property test of the message tree, driven through the services.

Any sequence of appends (default or explicit parent), edits and branch switches (to leaves,
inner nodes or the root) must keep: one root per thread, no cycles, every node reachable from
the root, the active leaf inside the thread, and the leaf-up path equal to a walk up the parent
pointers. A Python model of the tree predicts every parent and the active leaf.
"""

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from auditlog.events import Actor
from convmem.models import Tenant
from threads import selectors, services
from threads.models import Message, Role, Thread

ACTOR = Actor.system("hypothesis")
ROOT = "root"
# Tool messages need a call to answer; their rules have their own tests (test_tool_messages.py).
ROLES = st.sampled_from(["system", "user", "assistant"])
# What the API lets through: no NUL (PostgreSQL text cannot hold it), no lone surrogates.
CONTENT = st.text(
    st.characters(blacklist_characters="\x00", blacklist_categories=["Cs"]),
    min_size=1,
    max_size=20,
).filter(str.strip)


class TreeMachine(RuleBasedStateMachine):
    tenant: Tenant

    @initialize()
    def start(self) -> None:
        self.thread = services.thread_create(tenant=self.tenant, actor=ACTOR, user_ref="prop")
        # The model: public id -> parent public id (ROOT for first messages), and the leaf.
        self.parents: dict[str, str] = {}
        self.leaf = ROOT

    def _pick(self, index: int) -> str:
        ids = sorted(self.parents)
        return ids[index % len(ids)]

    @rule(role=ROLES, content=CONTENT)
    def append_to_the_leaf(self, role: str, content: str) -> None:
        message = services.message_append(
            thread=self.thread, actor=ACTOR, role=role, content=content
        )
        self.parents[message.public_id] = self.leaf
        self.leaf = message.public_id

    @precondition(lambda self: self.parents)
    @rule(index=st.integers(min_value=0), role=ROLES, content=CONTENT)
    def append_under(self, index: int, role: str, content: str) -> None:
        parent = self._pick(index)
        message = services.message_append(
            thread=self.thread, actor=ACTOR, role=role, content=content, parent_public_id=parent
        )
        self.parents[message.public_id] = parent
        self.leaf = message.public_id

    @precondition(lambda self: self.parents)
    @rule(index=st.integers(min_value=0), content=CONTENT)
    def edit(self, index: int, content: str) -> None:
        original = self._pick(index)
        message = services.message_edit(
            thread=self.thread, actor=ACTOR, message_public_id=original, content=content
        )
        assert message.edits_public_id == original
        self.parents[message.public_id] = self.parents[original]
        self.leaf = message.public_id

    @precondition(lambda self: self.parents)
    @rule(index=st.integers(min_value=0))
    def switch(self, index: int) -> None:
        target = self._pick(index)
        services.thread_update(
            thread=self.thread, actor=ACTOR, switch_leaf=True, active_leaf_public_id=target
        )
        self.leaf = target

    @rule()
    def switch_to_root(self) -> None:
        services.thread_update(
            thread=self.thread, actor=ACTOR, switch_leaf=True, active_leaf_public_id=None
        )
        self.leaf = ROOT

    def _nodes(self) -> dict[int, tuple[int | None, str, int]]:
        rows = Message.objects.filter(thread=self.thread).values_list(
            "id", "parent_id", "public_id", "depth"
        )
        return {pk: (parent, public_id, depth) for pk, parent, public_id, depth in rows}

    @invariant()
    def tree_matches_the_model(self) -> None:
        thread = Thread.objects.get(pk=self.thread.pk)
        nodes = self._nodes()
        roots = [pk for pk, (parent, _, _) in nodes.items() if parent is None]
        assert roots == [thread.root_id]
        assert Message.objects.get(pk=thread.root_id).role == Role.ROOT
        public = {pk: public_id for pk, (_, public_id, _) in nodes.items()}
        model = {
            public_id: public[parent] if public[parent] != public[thread.root_id] else ROOT
            for pk, (parent, public_id, _) in nodes.items()
            if parent is not None
        }
        assert model == self.parents

    @invariant()
    def no_cycles_and_every_node_reaches_the_root(self) -> None:
        nodes = self._nodes()
        for pk, (_, _, depth) in nodes.items():
            steps, node = 0, pk
            while nodes[node][0] is not None:
                node = nodes[node][0]
                steps += 1
                assert steps <= len(nodes), "cycle"
            assert node == self.thread.root_id
            assert steps == depth
        # django-tree-queries agrees that the root reaches every node.
        reachable = (
            Message.objects.with_tree_fields()
            .tree_filter(thread=self.thread)
            .values_list("id", flat=True)
        )
        assert set(reachable) == set(nodes)

    @invariant()
    def active_leaf_is_in_the_thread_and_the_path_is_its_parent_chain(self) -> None:
        thread = Thread.objects.select_related("active_leaf").get(pk=self.thread.pk)
        leaf = thread.active_leaf
        assert leaf.thread_id == thread.pk
        assert (ROOT if leaf.pk == thread.root_id else leaf.public_id) == self.leaf

        page = selectors.path_page(thread=thread, leaf=leaf, limit=10_000)
        walked: list[str] = []
        node = self.leaf
        while node != ROOT:
            walked.append(node)
            node = self.parents[node]
        assert [m.public_id for m in page.messages] == walked[::-1]
        assert page.older_start is None
        expected_parent = thread.root_id
        for message in page.messages:
            assert message.parent_id == expected_parent
            expected_parent = message.pk


def test_tree_invariants_hold_for_any_sequence(acme) -> None:
    TreeMachine.tenant = acme.tenant
    run_state_machine_as_test(
        TreeMachine,
        settings=settings(
            max_examples=25,
            stateful_step_count=12,
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
