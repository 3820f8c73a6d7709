"""Memo evaluations with ground truth, outside the runtime apps (not installed with them).

- ``project``: the project's own seeded support-conversation generator, its checker, the
  simulated memo loop and its report (``manage.py eval_memos``, ``bench/memo_quality.py``);
- ``independent``: a dataset and scorer written by an outside evaluator who never read the memo
  writer, copied here unchanged (its own README says how it was made);
- ``harness``: drives the independent conversations through the real services (threads
  appended through the service layer, a context after every user turn, memos written by a real
  Celery worker) and scores the model input with the independent scorer.

The memo writers never import anything from here.
"""
