"""The third evaluator's set of agents at work (``memo_eval/agentic``): shipped as its generator
wrote it, and read by the harness in the first evaluator's schema, tool calls and results as
the services take them."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memo_eval import harness

AGENTIC = Path(harness.__file__).resolve().parent / "agentic"


def test_the_generator_rebuilds_the_shipped_splits_byte_for_byte(tmp_path: Path) -> None:
    shutil.copy(AGENTIC / "generate.py", tmp_path / "generate.py")
    subprocess.run([sys.executable, "generate.py"], cwd=tmp_path, check=True, capture_output=True)

    for name in ("dev.jsonl", "heldout.jsonl"):
        assert (tmp_path / name).read_bytes() == (AGENTIC / name).read_bytes()


@pytest.mark.parametrize(("split", "count"), [("agentic-dev", 12), ("agentic-heldout", 8)])
def test_the_harness_reads_each_split_with_its_tool_calls_answered_in_order(
    split: str, count: int
) -> None:
    score = harness.scorer()
    conversations = score.load(harness.SPLITS[split])

    assert len(conversations) == count
    for conversation in conversations:
        messages = conversation["messages"]
        indices = score.evaluation_indices(conversation)
        assert all(messages[i]["role"] == "user" for i in indices)
        pending: list[str] = []
        for message in messages:
            if message["role"] == "tool":
                # Each result answers the oldest call still open, as the services require.
                assert message["tool_call_id"] == pending.pop(0)
                continue
            assert not pending
            calls = harness.openai_tool_calls(message.get("tool_calls"))
            pending = [call["id"] for call in calls or ()]
            for call in calls or ():
                assert call["type"] == "function"
                assert isinstance(call["function"]["arguments"], str)
