"""The memo evaluation with ground truth: long generated conversations, chained memos, probes.

- ``generator``: seeded customer-support conversations (>= 500 turns, ~340 tokens a turn) with
  planted facts, case states at every turn and probes; ``phrasings`` holds what people say,
  in dev sets (for tuning) and a held-out set (for reporting);
- ``checker``: the evaluation's own reading of amounts, dates and ids, and of probe answers;
- ``simulate``: the production memo loop (segments, chained ``summarize`` calls, assembled
  context at checkpoints) and what the context holds there;
- ``report``: runs over a split, pooled per checkpoint, and their printed table.

``manage.py eval_memos`` and ``bench/memo_quality.py`` drive it. Nothing here is imported by a
summarizer backend.
"""
