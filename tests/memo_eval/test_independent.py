"""The independent evaluation: the outside evaluator's package (its own tests, unchanged) and
the harness that drives its conversations through the services and a real Celery worker."""

import subprocess
import sys

import pytest

from memo_eval import harness
from tests.support.worker import ROOT

FILLER = "We talked it through again and compared a few options before deciding anything at all."


def _conversation(turns: int) -> dict:
    """A conversation in the evaluator's schema: a member number given early, a flight number
    corrected later, filler in between, one probe."""
    messages = []
    for index in range(turns):
        role = "user" if index % 2 == 0 else "assistant"
        messages.append({"role": role, "content": f"{FILLER} (turn {index})"})
    messages[2]["content"] = "My member number for the loyalty account is mq-55817-x. " + FILLER
    messages[10]["content"] = "The flight number for the Oslo trip is SK 4411. " + FILLER
    messages[40]["content"] = "Correction: the flight number for the Oslo trip is now SK 4419."
    messages[60]["content"] = "What was my member number again?"
    facts = [
        _fact("f1", "mq-55817-x", 2),
        _fact("f2", "SK 4411", 10, superseded_at=40, superseded_by="f3"),
        _fact("f3", "SK 4419", 40),
    ]
    return {
        "id": "t-1",
        "domain": "travel",
        "split": "dev",
        "seed": 1,
        "messages": messages,
        "facts": facts,
        "probes": [{"at": 60, "fact_id": "f1"}],
        "checkpoints": [turns],
    }


def _fact(fact_id, value, at, *, superseded_at=None, superseded_by=None) -> dict:
    return {
        "id": fact_id,
        "kind": "identifier",
        "value": value,
        "case": "trip-1",
        "introduced_at": at,
        "closed_at": None,
        "superseded_at": superseded_at,
        "superseded_by": superseded_by,
    }


def test_the_evaluators_own_tests_pass_on_the_copied_package() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "unittest", "memo_eval_data.tests.test_score"],
        cwd=harness.INDEPENDENT,
        capture_output=True,
        text=True,
        timeout=300,
    )

    assert result.returncode == 0, result.stderr[-3000:]
    assert "OK" in result.stderr


def test_the_harness_renders_tool_calls_as_the_scorer_reads_them() -> None:
    calls = [{"id": "c1", "name": "run_shell", "arguments": '{"cmd": "ls"}'}]

    (call,) = harness.openai_tool_calls(calls)
    text = harness.input_text([{"role": "assistant", "content": "", "tool_calls": [call]}])

    assert call["function"] == {"name": "run_shell", "arguments": '{"cmd": "ls"}'}
    assert 'run_shell({"cmd": "ls"})' in text


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_conversation_goes_through_the_services_and_a_real_worker(celery_worker) -> None:
    conversation = _conversation(90)

    result = harness.run_conversation(conversation, window=700, reserve=100, inline=False)

    assert result.memos_written >= 1
    assert len(result.inputs) == len(result.memo_only) >= 2
    last = result.memo_only[-1]
    assert last["open_present"] == last["open_facts"] == 2  # both kept by the memo alone
    (probe,) = [r["probe"] for r in result.inputs if r["probe"]]
    assert probe["present"]
    (correction,) = result.memo_only[-1]["corrections"]
    assert correction["newest_present"]
    assert correction["stale_absent"]
    assert ROOT.joinpath("memo_eval", "independent", "memo_eval_data", "score.py").exists()
