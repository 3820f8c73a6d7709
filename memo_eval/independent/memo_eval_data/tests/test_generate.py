import json
import os
import tempfile
import unittest

from memo_eval_data import generate as g
from memo_eval_data.phrasings import phrasings_dev, phrasings_heldout
from memo_eval_data.score import is_open, norm
from memo_eval_data.values import CHOICES, REL

DATA = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data")
KINDS = {"identifier", "person", "address", "date", "relative_date", "amount", "contact", "preference",
         "decision", "technical", "quantity"}


def load(split):
    with open(os.path.join(DATA, f"{split}.jsonl"), encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def strings(o):
    if isinstance(o, str):
        yield o
    elif isinstance(o, dict):
        for v in o.values():
            yield from strings(v)
    elif isinstance(o, (list, tuple)):
        for v in o:
            yield from strings(v)


class TestDeterminism(unittest.TestCase):
    def test_same_seed_same_conversation(self):
        a = g.make_conversation(1234, "coding", "dev")
        b = g.make_conversation(1234, "coding", "dev")
        self.assertEqual(json.dumps(a, ensure_ascii=False), json.dumps(b, ensure_ascii=False))
        c = g.make_conversation(1235, "coding", "dev")
        self.assertNotEqual(a["messages"], c["messages"])

    def test_cli_reproduces_shipped_files(self):
        with tempfile.TemporaryDirectory() as d:
            g.main(["--out", d])
            for split in ("dev", "heldout"):
                with open(os.path.join(d, f"{split}.jsonl"), encoding="utf-8") as fh:
                    fresh = fh.read()
                with open(os.path.join(DATA, f"{split}.jsonl"), encoding="utf-8") as fh:
                    self.assertEqual(fresh, fh.read(), split)


class TestSchema(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.splits = {s: load(s) for s in ("dev", "heldout")}

    def test_split_sizes_domains_seeds(self):
        for split, n, lo, hi in (("dev", 2, 1000, 1999), ("heldout", 3, 9000, 9999)):
            convs = self.splits[split]
            self.assertEqual(len(convs), 4 * n)
            for dom in g.DOMAINS:
                self.assertEqual(sum(c["domain"] == dom for c in convs), n)
            for c in convs:
                self.assertEqual(c["split"], split)
                self.assertTrue(lo <= c["seed"] <= hi)
            self.assertEqual(len({c["id"] for c in convs}), len(convs))

    def test_fields_and_types(self):
        for convs in self.splits.values():
            for c in convs:
                self.assertEqual(set(c), {"id", "domain", "split", "seed", "messages", "facts", "probes",
                                          "checkpoints"})
                self.assertEqual(c["checkpoints"], [100, 200, 300, 400, 500])
                self.assertEqual(len(c["messages"]), 500)
                for m in c["messages"]:
                    self.assertIn(m["role"], ("user", "assistant", "tool"))
                    self.assertIsInstance(m["content"], str)
                    allowed = {"role", "content"} | ({"tool_calls"} if m["role"] == "assistant" else set()) \
                        | ({"tool_call_id"} if m["role"] == "tool" else set())
                    self.assertLessEqual(set(m), allowed)
                    for call in m.get("tool_calls", []):
                        self.assertEqual(set(call), {"id", "name", "arguments"})
                        json.loads(call["arguments"])
                ids = [f["id"] for f in c["facts"]]
                self.assertEqual(len(ids), len(set(ids)))
                for f in c["facts"]:
                    self.assertEqual(set(f), {"id", "kind", "value", "case", "introduced_at", "closed_at",
                                              "superseded_at", "superseded_by"})
                    self.assertIn(f["kind"], KINDS)
                    if f["superseded_by"] is not None:
                        self.assertIn(f["superseded_by"], ids)
                        self.assertIsNotNone(f["superseded_at"])

    def test_spec_constraints(self):
        for convs in self.splits.values():
            for c in convs:
                self.assertEqual(g.validate(c), [], c["id"])

    def test_value_verbatim_and_corrections(self):
        for convs in self.splits.values():
            for c in convs:
                byid = {f["id"]: f for f in c["facts"]}
                for f in c["facts"]:
                    self.assertIn(f["value"], c["messages"][f["introduced_at"]]["content"])
                    if f["superseded_by"]:
                        new = byid[f["superseded_by"]]
                        self.assertEqual(new["introduced_at"], f["superseded_at"])
                        self.assertEqual(new["case"], f["case"])
                        self.assertEqual(new["kind"], f["kind"])
                        self.assertNotIn(norm(new["value"]), norm(f["value"]))
                        self.assertNotIn(norm(f["value"]), norm(new["value"]))
                    if f["closed_at"] is not None:
                        self.assertEqual(c["messages"][f["closed_at"]]["role"], "user")

    def test_probes(self):
        for convs in self.splits.values():
            for c in convs:
                byid = {f["id"]: f for f in c["facts"]}
                self.assertTrue(8 <= len(c["probes"]) <= 12)
                for p in c["probes"]:
                    f = byid[p["fact_id"]]
                    self.assertTrue(100 <= p["at"] <= 499)
                    self.assertEqual(c["messages"][p["at"]]["role"], "user")
                    self.assertTrue(is_open(f, p["at"]))
                    self.assertLessEqual(f["introduced_at"], p["at"] - 60)
                    self.assertNotIn(norm(f["value"]), norm(c["messages"][p["at"]]["content"]))

    def test_every_kind_in_every_split(self):
        for convs in self.splits.values():
            self.assertEqual({f["kind"] for c in convs for f in c["facts"]}, KINDS)


class TestSplitsDiffer(unittest.TestCase):
    def test_phrasing_banks_disjoint(self):
        self.assertEqual(set(strings(phrasings_dev)) & set(strings(phrasings_heldout)), set())
        self.assertEqual(set(strings(CHOICES["dev"])) & set(strings(CHOICES["heldout"])), set())
        self.assertEqual(set(REL["dev"]) & set(REL["heldout"]), set())

    def test_no_shared_values(self):
        dev = {norm(f["value"]) for c in load("dev") for f in c["facts"]}
        held = {norm(f["value"]) for c in load("heldout") for f in c["facts"]}
        self.assertEqual(dev & held, set())


if __name__ == "__main__":
    unittest.main()
