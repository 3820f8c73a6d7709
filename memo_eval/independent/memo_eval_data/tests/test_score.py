import json
import os
import unittest

from memo_eval_data import score as s

DATA = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data")


def tiny():
    msgs = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i}"} for i in range(500)]
    msgs[2]["content"] = "my booking code is QXZPLM"
    msgs[4]["content"] = "the date is 03/12/2026"
    msgs[6]["content"] = "my address is Storgatan 1"
    msgs[150]["content"] = "actually my new address is Ringvägen 9"
    msgs[200]["content"] = "the booking is all sorted, close it"
    msgs[120]["content"] = "what was the booking code again?"
    facts = [
        {"id": "A", "kind": "identifier", "value": "QXZPLM", "case": "b", "introduced_at": 2,
         "closed_at": 200, "superseded_at": None, "superseded_by": None},
        {"id": "B", "kind": "date", "value": "03/12/2026", "case": "b", "introduced_at": 4,
         "closed_at": 200, "superseded_at": None, "superseded_by": None},
        {"id": "C", "kind": "address", "value": "Storgatan 1", "case": "p", "introduced_at": 6,
         "closed_at": None, "superseded_at": 150, "superseded_by": "D"},
        {"id": "D", "kind": "address", "value": "Ringvägen 9", "case": "p", "introduced_at": 150,
         "closed_at": None, "superseded_at": None, "superseded_by": None},
    ]
    return {"id": "t", "domain": "travel", "split": "dev", "seed": 1, "messages": msgs, "facts": facts,
            "probes": [{"at": 120, "fact_id": "A"}], "checkpoints": [100, 200, 300, 400, 500]}


class TestMatching(unittest.TestCase):
    def test_normalisation(self):
        c = tiny()
        r = s.score_input(c, 10, "booking qxzplm, date 2026-12-03")
        self.assertEqual(r["by_kind"]["identifier"], [1, 1])
        self.assertEqual(r["by_kind"]["date"], [0, 1])
        r = s.score_input(c, 10, "STORGATAN\n   1 and 03/12/2026")
        self.assertEqual(r["open_present"], 2)
        # NFC: decomposed a-umlaut + case folding still matches
        r = s.score_input(c, 160, "RINGVA\u0308GEN 9")
        self.assertEqual(r["by_kind"]["address"], [1, 1])

    def test_open_probe_corrections(self):
        c = tiny()
        r = s.score_input(c, 120, "QXZPLM")
        self.assertEqual(r["open_facts"], 3)
        self.assertEqual(r["probe"], {"fact_id": "A", "present": True})
        self.assertEqual(r["corrections"], [])
        r = s.score_input(c, 160, "Ringvägen 9")
        self.assertIsNone(r["probe"])
        self.assertEqual(r["corrections"], [{"fact_id": "C", "new_fact_id": "D", "newest_present": True,
                                             "stale_absent": True}])
        r = s.score_input(c, 300, "Storgatan 1 ... Ringvägen 9")
        self.assertEqual(r["open_facts"], 1)  # booking closed at 200, old address superseded
        self.assertFalse(r["corrections"][0]["stale_absent"])

    def test_checkpoints_and_aggregate(self):
        c = tiny()
        self.assertEqual(s.checkpoint_indices(c), {100: 100, 200: 200, 300: 300, 400: 400, 500: 498})
        idx = s.evaluation_indices(c)
        self.assertIn(120, idx)
        self.assertIn(170, idx)
        res = [s.score_input(c, 120, "QXZPLM"), s.score_input(c, 300, "Ringvägen 9")]
        agg = s.aggregate(res)
        self.assertEqual(agg["n_inputs"], 2)
        self.assertAlmostEqual(agg["static_recall"], 2 / 4)
        self.assertEqual(agg["probe_answerability"], 1.0)
        self.assertEqual(agg["correction_score"], 1.0)
        self.assertEqual(agg["static_recall_by_checkpoint"], {300: 1.0})
        self.assertEqual(agg["static_recall_by_domain"], {"travel": 0.5})


class TestSelfCheck(unittest.TestCase):
    def test_full_history_vs_last_ten(self):
        rep = s.self_check(DATA, quiet=True)
        for split in ("dev", "heldout"):
            full, last, oracle = (rep[split][k] for k in ("full_history", "last_10_messages",
                                                          "oracle_open_facts"))
            self.assertEqual(full["static_recall"], 1.0)
            self.assertEqual(full["probe_answerability"], 1.0)
            self.assertEqual(full["correction_newest_present"], 1.0)
            self.assertLess(last["static_recall"], 0.2)
            self.assertLess(last["probe_answerability"], 0.1)
            self.assertLess(last["correction_score"], 0.2)
            for k in ("static_recall", "probe_answerability", "correction_score"):
                self.assertEqual(oracle[k], 1.0)


if __name__ == "__main__":
    unittest.main()
