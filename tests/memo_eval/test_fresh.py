"""The second evaluator's set (``memo_eval/fresh``): shipped as its generator wrote it, valid
by the generator's own checks, and loadable by the harness in the first evaluator's schema."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

from memo_eval import harness

FRESH = Path(harness.__file__).resolve().parent / "fresh"


def test_the_generator_rebuilds_the_shipped_set_byte_for_byte(tmp_path: Path) -> None:
    # The generator writes beside itself and validates what it wrote (non-zero exit if not).
    shutil.copy(FRESH / "generate.py", tmp_path / "generate.py")
    subprocess.run([sys.executable, "generate.py"], cwd=tmp_path, check=True, capture_output=True)

    assert (tmp_path / "fresh.jsonl").read_bytes() == (FRESH / "fresh.jsonl").read_bytes()


def test_the_harness_reads_the_set_with_the_scorers_indices() -> None:
    score = harness.scorer()
    conversations = score.load(harness.SPLITS["fresh"])

    assert len(conversations) == 12
    assert len({c["domain"] for c in conversations}) == 6
    for conversation in conversations:
        assert len(conversation["messages"]) == 500
        indices = score.evaluation_indices(conversation)
        probes = {p["at"] for p in conversation["probes"]}
        assert probes <= set(indices)
        # Every index the scorer asks about is a user turn: where the harness assembles.
        assert all(conversation["messages"][i]["role"] == "user" for i in indices)
        json.dumps(conversation)  # plain JSON all through
