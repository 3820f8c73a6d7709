"""Score a model input (the text a memory system hands to the chat model at message `at`)
against a conversation's ground truth.

    python -m memo_eval_data.score [DATA_DIR]     # self-check on the shipped data
"""
import json
import os
import re
import sys
import unicodedata

_WS = re.compile(r"\s+")


def norm(s: str) -> str:
    """NFC, case fold, collapse whitespace."""
    s = unicodedata.normalize("NFC", unicodedata.normalize("NFC", s).casefold())
    return _WS.sub(" ", s).strip()


def present(value: str, model_input_norm: str) -> bool:
    return norm(value) in model_input_norm


def is_open(fact: dict, m: int) -> bool:
    return (fact["introduced_at"] <= m
            and (fact["closed_at"] is None or fact["closed_at"] > m)
            and (fact["superseded_at"] is None or fact["superseded_at"] > m))


def message_text(msg: dict) -> str:
    """All text a message carries (content plus tool-call names and arguments)."""
    parts = [msg.get("content") or ""]
    for c in msg.get("tool_calls") or []:
        parts.append(f"{c['name']}({c['arguments']})")
    return "\n".join(parts)


def checkpoint_indices(conversation: dict) -> dict:
    """{checkpoint: index of the last user message at or before it} (500 -> last message 499)."""
    msgs = conversation["messages"]
    out = {}
    for c in conversation["checkpoints"]:
        i = min(c, len(msgs) - 1)
        while i >= 0 and msgs[i]["role"] != "user":
            i -= 1
        if i >= 0:
            out[c] = i
    return out


def correction_indices(conversation: dict, offsets=(20, 80)) -> list:
    """User messages at least `offset` messages after each correction (while the new value is
    still open), i.e. once the correcting message has scrolled out of a short recent window."""
    msgs, byid = conversation["messages"], {f["id"]: f for f in conversation["facts"]}
    out = set()
    for f in conversation["facts"]:
        if f["superseded_by"] is None:
            continue
        new = byid[f["superseded_by"]]
        for off in offsets:
            i = f["superseded_at"] + off
            while i < len(msgs) and msgs[i]["role"] != "user":
                i += 1
            if i < len(msgs) and is_open(new, i):
                out.add(i)
    return sorted(out)


def evaluation_indices(conversation: dict) -> list:
    """Where the evaluator calls score_input: checkpoints, probes, and after corrections."""
    idx = set(checkpoint_indices(conversation).values())
    idx |= {p["at"] for p in conversation["probes"]}
    idx |= set(correction_indices(conversation))
    return sorted(idx)


def score_input(conversation: dict, at: int, model_input: str) -> dict:
    text = norm(model_input)
    facts = conversation["facts"]
    byid = {f["id"]: f for f in facts}
    open_facts = [f for f in facts if is_open(f, at)]
    by_kind = {}
    n_present = 0
    for f in open_facts:
        hit = present(f["value"], text)
        n_present += hit
        pk = by_kind.setdefault(f["kind"], [0, 0])
        pk[0] += hit
        pk[1] += 1
    probe = None
    for p in conversation["probes"]:
        if p["at"] == at:
            probe = {"fact_id": p["fact_id"], "present": present(byid[p["fact_id"]]["value"], text)}
    corrections = []
    for f in facts:
        if f["superseded_at"] is not None and f["superseded_at"] <= at:
            new = byid[f["superseded_by"]]
            if is_open(new, at):
                corrections.append({"fact_id": f["id"], "new_fact_id": new["id"],
                                    "newest_present": present(new["value"], text),
                                    "stale_absent": not present(f["value"], text)})
    cps = {i: c for c, i in checkpoint_indices(conversation).items()}
    return {"conversation": conversation["id"], "domain": conversation["domain"], "at": at,
            "checkpoint": cps.get(at), "open_facts": len(open_facts), "open_present": n_present,
            "by_kind": by_kind, "probe": probe, "corrections": corrections}


def _ratio(a, b):
    return round(a / b, 4) if b else None


def aggregate(results: list) -> dict:
    tot = [0, 0]
    kinds, domains, cps = {}, {}, {}
    probes = [0, 0]
    corr = {"both": 0, "newest": 0, "stale_absent": 0, "n": 0}
    for r in results:
        tot[0] += r["open_present"]
        tot[1] += r["open_facts"]
        for k, (p, t) in r["by_kind"].items():
            a = kinds.setdefault(k, [0, 0])
            a[0] += p
            a[1] += t
        d = domains.setdefault(r["domain"], [0, 0])
        d[0] += r["open_present"]
        d[1] += r["open_facts"]
        if r.get("checkpoint") is not None:
            c = cps.setdefault(r["checkpoint"], [0, 0])
            c[0] += r["open_present"]
            c[1] += r["open_facts"]
        if r["probe"] is not None:
            probes[0] += r["probe"]["present"]
            probes[1] += 1
        for c in r["corrections"]:
            corr["n"] += 1
            corr["newest"] += c["newest_present"]
            corr["stale_absent"] += c["stale_absent"]
            corr["both"] += c["newest_present"] and c["stale_absent"]
    return {
        "static_recall": _ratio(*tot),
        "static_recall_by_kind": {k: _ratio(*v) for k, v in sorted(kinds.items())},
        "static_recall_by_domain": {k: _ratio(*v) for k, v in sorted(domains.items())},
        "static_recall_by_checkpoint": {k: _ratio(*v) for k, v in sorted(cps.items())},
        "probe_answerability": _ratio(*probes),
        "n_probes": probes[1],
        "correction_score": _ratio(corr["both"], corr["n"]),
        "correction_newest_present": _ratio(corr["newest"], corr["n"]),
        "correction_stale_absent": _ratio(corr["stale_absent"], corr["n"]),
        "n_corrections_scored": corr["n"],
        "n_inputs": len(results),
    }


def load(path):
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _render(msgs):
    return "\n".join(f"{m['role']}: {message_text(m)}" for m in msgs)


def self_check(data_dir=None, quiet=False):
    data_dir = data_dir or os.path.join(os.path.dirname(__file__), "data")
    report = {}
    for split in ("dev", "heldout"):
        convs = load(os.path.join(data_dir, f"{split}.jsonl"))
        runs = {"full_history": [], "last_10_messages": [], "oracle_open_facts": []}
        for c in convs:
            for at in evaluation_indices(c):
                msgs = c["messages"][: at + 1]
                runs["full_history"].append(score_input(c, at, _render(msgs)))
                runs["last_10_messages"].append(score_input(c, at, _render(msgs[-10:])))
                oracle = "\n".join(f["value"] for f in c["facts"] if is_open(f, at))
                runs["oracle_open_facts"].append(score_input(c, at, oracle))
        report[split] = {name: aggregate(rs) for name, rs in runs.items()}
    if not quiet:
        for split, runs in report.items():
            for name, agg in runs.items():
                print(f"[{split}] {name}: static_recall={agg['static_recall']} "
                      f"probe_answerability={agg['probe_answerability']} (n={agg['n_probes']}) "
                      f"correction_score={agg['correction_score']} "
                      f"(newest_present={agg['correction_newest_present']}, "
                      f"stale_absent={agg['correction_stale_absent']}, n={agg['n_corrections_scored']}) "
                      f"inputs={agg['n_inputs']}")
                print(f"    by checkpoint: {agg['static_recall_by_checkpoint']}")
        print("Note: the full history always still contains superseded values, so its correction_score "
              "is 0 by construction; its newest_present must be 1.0. The oracle (open fact values only) "
              "scores 1.0 everywhere.")
    return report


if __name__ == "__main__":
    self_check(sys.argv[1] if len(sys.argv) > 1 else None)
