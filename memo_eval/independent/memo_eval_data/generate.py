"""Deterministic generator of long synthetic conversations with ground-truth facts.

    python -m memo_eval_data.generate --out DIR     # writes DIR/dev.jsonl and DIR/heldout.jsonl
"""
import argparse
import json
import os
import random

from .phrasings import PHRASINGS
from .score import norm, is_open, message_text
from .values import make_value

N_MESSAGES = 500
CHECKPOINTS = [100, 200, 300, 400, 500]
DOMAINS = ["support", "travel", "coding", "tutoring"]

# Semantic slots per domain: (kind, key). Matter types ("cases") list their primary slot first.
SLOTS = {
    "support": {
        "profile": [("contact", "email"), ("contact", "phone"), ("preference", "contact_pref"),
                    ("person", "household"), ("address", "home_address")],
        "order": [("identifier", "order_id"), ("amount", "order_total"), ("address", "ship_address"),
                  ("date", "delivery_date"), ("identifier", "tracking"), ("identifier", "sku"),
                  ("quantity", "item_count")],
        "return": [("identifier", "rma"), ("relative_date", "pickup_day"), ("amount", "refund"),
                   ("person", "agent"), ("decision", "return_choice"), ("identifier", "serial")],
        "billing": [("identifier", "invoice"), ("amount", "charge"), ("identifier", "iban"),
                    ("date", "due_date"), ("decision", "billing_choice")],
        "account": [("identifier", "member_no"), ("contact", "alt_email"), ("person", "account_holder"),
                    ("preference", "account_pref"), ("identifier", "ticket")],
    },
    "travel": {
        "profile": [("contact", "email"), ("contact", "phone"), ("preference", "seat_pref"),
                    ("person", "companion"), ("identifier", "loyalty")],
        "flight": [("identifier", "flight_no"), ("identifier", "booking_code"), ("date", "depart_date"),
                   ("quantity", "seat"), ("amount", "fare"), ("decision", "flight_choice")],
        "hotel": [("identifier", "hotel_conf"), ("address", "hotel_address"), ("quantity", "rooms"),
                  ("amount", "nightly"), ("date", "checkin"), ("contact", "hotel_phone")],
        "car": [("identifier", "car_conf"), ("relative_date", "car_pickup"), ("amount", "car_price"),
                ("address", "car_addr"), ("decision", "car_choice")],
        "tour": [("decision", "tour_choice"), ("person", "guide"), ("date", "tour_date"),
                 ("preference", "pace_pref"), ("contact", "tour_url")],
    },
    "coding": {
        "profile": [("preference", "style_pref"), ("person", "reviewer"), ("contact", "team_url"),
                    ("preference", "workflow_pref"), ("technical", "repo_path")],
        "bug": [("identifier", "issue_no"), ("technical", "file_path"), ("technical", "error_msg"),
                ("technical", "func_name"), ("identifier", "commit"), ("decision", "fix_choice")],
        "upgrade": [("technical", "version"), ("technical", "command"), ("decision", "pin_choice"),
                    ("identifier", "pr_no")],
        "config": [("technical", "config_key"), ("technical", "port"), ("technical", "env_path"),
                   ("quantity", "timeout"), ("person", "ops_contact")],
        "release": [("date", "release_date"), ("identifier", "release_ticket"),
                    ("relative_date", "freeze_when"), ("quantity", "test_count")],
    },
    "tutoring": {
        "profile": [("preference", "explain_pref"), ("person", "teacher"), ("contact", "teacher_email"),
                    ("identifier", "student_id"), ("address", "venue")],
        "unit": [("quantity", "quiz_score"), ("date", "exam_date"), ("relative_date", "next_session"),
                 ("technical", "exercise_file"), ("decision", "study_plan"), ("identifier", "assignment_id")],
        "admin": [("amount", "fee"), ("identifier", "fee_invoice"), ("date", "payment_due"),
                  ("person", "sub_tutor"), ("quantity", "session_count")],
    },
}
# Facts that may arrive inside a tool result or an assistant message instead of a user message.
TOOL_OK = {"order_total", "tracking", "sku", "serial", "invoice", "charge", "flight_no", "fare", "hotel_conf",
           "nightly", "issue_no", "file_path", "error_msg", "func_name", "commit", "version", "port",
           "config_key", "test_count", "quiz_score", "fee_invoice"}
ASSIST_OK = {"rma", "ticket", "hotel_conf", "car_conf", "booking_code", "pr_no", "release_ticket", "assignment_id"}
TOOL_RATE = {"support": 0.12, "travel": 0.12, "coding": 0.38, "tutoring": 0.07}


def words(s):
    return len(s.split())


def cap(s):
    return s[:1].upper() + s[1:]


# ---------------------------------------------------------------------------------------------
def skeleton(rng, domain):
    """List of slots: "user", "assistant", ("tc", k) (assistant with k tool calls) or "tool"."""
    out = []

    def tool_ex(k):
        out.extend(["user", ("tc", k)] + ["tool"] * k + ["assistant"])

    while N_MESSAGES - len(out) > 7:
        rem = N_MESSAGES - len(out)
        size = rng.choice([4, 5, 6]) if rng.random() < TOOL_RATE[domain] else 2
        if rem - size in (1, 3):
            continue
        if size == 2:
            out.extend(["user", "assistant"])
        else:
            tool_ex(size - 3)
    rem = N_MESSAGES - len(out)
    if rem in (2, 7):
        out.extend(["user", "assistant"])
        rem -= 2
    if rem:
        tool_ex(rem - 3)
    assert len(out) == N_MESSAGES
    return out


def role_of(slot):
    return "assistant" if isinstance(slot, tuple) else slot


# ---------------------------------------------------------------------------------------------
def plan(rng, domain, split, sk):
    """Place fact introductions, corrections, closures and probes on message indices."""
    P = PHRASINGS[split]
    used = {}  # index -> event
    free = {"user": [], "tool": [], "assistant": []}
    for i, s in enumerate(sk):
        if s in free:
            free[s].append(i)

    def place(role, lo):
        for i in free[role]:
            if i >= lo and i not in used and i < N_MESSAGES - 2:
                return i
        return None

    facts, events = [], []
    seen = []  # normalised values already used: every value is unique and not nested in another

    def fresh(kind, key, avoid=""):
        for _ in range(40):
            v = make_value(rng, split, kind, key)
            n = norm(v)
            if all(n not in o and o not in n for o in seen + ([norm(avoid)] if avoid else [])):
                seen.append(n)
                return v
        return None

    types = [t for t in SLOTS[domain] if t != "profile"]
    n_cases = rng.randint(7, 9) if domain in ("support", "travel") else rng.randint(8, 10)
    ctypes = types + [rng.choice(types) for _ in range(n_cases - len(types))]
    names = {t: rng.sample(P["case_names"][t], len(P["case_names"][t])) for t in types}
    cases = [("profile", "profile", None)]
    counters = {}
    for t in ctypes:
        if not names[t]:
            continue
        counters[t] = counters.get(t, 0) + 1
        cases.append((f"{t}-{counters[t]}", t, names[t].pop()))
    rng.shuffle(cases)

    for case_id, ctype, cname in cases:
        slots = SLOTS[domain][ctype]
        if ctype == "profile":
            chosen = list(slots)
            times = sorted(rng.randint(0, 430) for _ in chosen)
        else:
            chosen = [slots[0]] + rng.sample(slots[1:], rng.randint(3, len(slots) - 1))
            t0 = rng.randint(0, 380)
            times = []
            for _ in chosen:
                times.append(t0)
                t0 += rng.randint(4, 45)
        wanted = []  # (desired index, order, event)
        for (kind, key), t in zip(chosen, times):
            via = "user"
            if key in TOOL_OK and rng.random() < 0.45:
                via = "tool"
            elif key in ASSIST_OK and rng.random() < 0.5:
                via = "assistant"
            v = fresh(kind, key)
            if v is None:
                continue
            f = {"kind": kind, "key": key, "case": case_id, "cname": cname, "value": v}
            wanted.append((t, len(wanted), {"type": "intro", "fact": f, "via": via}))
            if rng.random() < (0.22 if ctype == "profile" else 0.15):
                nv = fresh(kind, key, f["value"])
                if nv is None:
                    continue
                nf = dict(f, value=nv)
                wanted.append((t + rng.randint(20, 140), len(wanted),
                               {"type": "correction", "fact": nf, "old": f, "via": "user"}))
        last = max(w[0] for w in wanted)
        if ctype != "profile" and rng.random() < 0.55:
            wanted.append((last + rng.randint(15, 100), len(wanted), {"type": "closure", "case": case_id,
                                                                      "cname": cname, "via": "user"}))
        wanted.sort(key=lambda w: (w[0], w[1]))
        lo = 0
        dropped = set()
        for t, _, ev in wanted:
            if ev["type"] == "correction" and id(ev["old"]) in dropped:
                continue
            i = place(ev["via"], max(t, lo))
            if i is None:
                if ev["type"] == "intro":
                    dropped.add(id(ev["fact"]))
                continue
            lo = i + 1
            used[i] = ev
            ev["at"] = i
            events.append(ev)

    # facts with lifecycle
    for ev in sorted(events, key=lambda e: e["at"]):
        if ev["type"] in ("intro", "correction"):
            f = ev["fact"]
            f.update(introduced_at=ev["at"], closed_at=None, superseded_at=None, superseded_by=None)
            facts.append(f)
            if ev["type"] == "correction":
                ev["old"]["superseded_at"] = ev["at"]
                ev["old"]["superseded_obj"] = f
        elif ev["type"] == "closure":
            for f in facts:
                if f["case"] == ev["case"] and f["closed_at"] is None:
                    f["closed_at"] = ev["at"]
    for n, f in enumerate(facts):
        f["id"] = f"F{n + 1:03d}"
    for f in facts:
        if "superseded_obj" in f:
            f["superseded_by"] = f.pop("superseded_obj")["id"]

    # probes: spread over 100..499, at user messages whose reply slot is free
    probes = []
    k = rng.randint(8, 12)
    width = (N_MESSAGES - 100) / k
    probed, kinds = set(), []
    for j in range(k):
        lo, hi = int(100 + j * width), int(100 + (j + 1) * width)
        cands = [i for i in free["user"] if lo <= i < hi and i not in used and i + 1 not in used
                 and i + 1 < N_MESSAGES]
        rng.shuffle(cands)
        for at in cands:
            ok = [f for f in facts if f["id"] not in probed and is_open(f, at) and f["introduced_at"] <= at - 60]
            if not ok:
                continue
            ok.sort(key=lambda f: (kinds.count(f["kind"]), rng.random()))
            f = ok[0]
            probed.add(f["id"])
            kinds.append(f["kind"])
            used[at] = {"type": "probe", "fact": f, "at": at}
            used[at + 1] = {"type": "answer", "fact": f, "at": at + 1}
            probes.append({"at": at, "fact_id": f["id"]})
            break
    return facts, used, probes


# ---------------------------------------------------------------------------------------------
def label_for(rng, P, f):
    lab = rng.choice(P["labels"][f["key"]])
    return lab if f["cname"] is None else f"{lab} for {f['cname']}"


def _connect(rng, P, s):
    if rng.random() < 0.3 and not s.startswith(("I ", "I'")) and s[1:2].islower():
        return f"{rng.choice(P['connectors'])} {s[0].lower()}{s[1:]}"
    return s


def fill(rng, P, domain, core, role, lo, hi):
    """Pad a core text with filler sentences until it has between lo and hi words."""
    topics = rng.sample(P["topics"][domain], 2)
    if role == "user":
        bank = P["user_filler"] + P["smalltalk"] + P["domain_user"][domain]
        target = rng.randint(lo, min(hi, lo + 50))
    else:
        bank = P["assistant_filler"] + P["domain_assistant"][domain]
        target = rng.randint(lo, min(hi, lo + 110))
    parts = [core] if core else []
    pool = rng.sample(bank, len(bank))
    if role == "user" and core and rng.random() < 0.2:
        parts.insert(0, pool.pop().format(topic=topics[0]))
    closer = rng.choice(P["closers"]) if role == "assistant" and rng.random() < 0.4 else None
    while words(" ".join(parts)) < target and pool:
        s = pool.pop().format(topic=topics[0] if rng.random() < 0.7 else topics[1])
        if role == "assistant" and parts:
            s = _connect(rng, P, s)
        if words(" ".join(parts + [s])) > hi - 12:
            break
        parts.append(s)
    if closer and words(" ".join(parts)) >= lo:
        parts.append(closer)
    text = " ".join(parts)
    return text if role == "user" or rng.random() < 0.7 else text.replace(". ", ".\n\n", 1)


LOG_LINES = {  # how a coding-agent tool shows each kind of technical fact, per split
    "json": {"error_msg": "E       {v}", "file_path": '  File "{v}", line {n}, in handle',
             "func_name": "    result = {v}", "commit": "commit {v}\nAuthor: build-bot", "version": "Collecting {v}",
             "port": "INFO: server listening on {v}", "config_key": "WARNING: setting {v} is not defined",
             "test_count": "collected {v} in {n}.0s", "issue_no": "    Closes {v}"},
    "table": {"error_msg": " FAIL  suite > case\n   {v}", "file_path": "    at handler ({v}:{n}:7)",
              "func_name": "  x {v} threw", "commit": "{v} (HEAD -> main) fix: tidy up", "version": "+ {v}",
              "port": "  -> Local:   http://{v}/", "config_key": "process.env.{v} is not set",
              "test_count": "Suite summary: {v} executed", "issue_no": "Refs {v}"},
}


def coding_log(rng, P, name, fact):
    fmt = P["tool_format"]
    if fmt == "json":
        mods = ["tests/test_api.py", "tests/test_models.py", "tests/test_utils.py", "tests/test_io.py"]
        lines = [f"$ {name} --verbose", "============ test session starts ============"]
        k = rng.randint(10, 40)
        lines += [f"{rng.choice(mods)}::test_case_{rng.randint(1, 300)} PASSED [{(i + 1) * 100 // k:3d}%]"
                  for i in range(k)]
    else:
        mods = ["src/api.spec.ts", "src/store.spec.ts", "src/utils.spec.ts", "src/io.spec.ts"]
        lines = [f"> {name}", " RUN  v1 /workspace"]
        lines += [f" \u2713 {rng.choice(mods)} ({rng.randint(1, 40)} cases) {rng.randint(2, 900)}ms"
                  for _ in range(rng.randint(10, 40))]
    if fact:
        tmpl = LOG_LINES[fmt].get(fact["key"], "{k}: {v}")
        lines.insert(rng.randint(2, len(lines)), tmpl.format(v=fact["value"], n=rng.randint(10, 400),
                                                             k=fact["key"]))
    lines.append("exit code 0" if fmt == "json" else "Done.")
    return "\n".join(lines)


def tool_output(rng, P, domain, name, fact):
    """A long-ish tool result; if `fact` is given its value is embedded once."""
    if domain == "coding" and name in P["tools"]["coding"][1:]:
        return coding_log(rng, P, name, fact)
    topic = rng.choice(P["topics"][domain])
    n = rng.randint(6, 30)
    rows = [(f"{name}_{r}", f"{topic} #{rng.randint(100, 999)}", f"{rng.random():.3f}") for r in range(n)]
    if P["tool_format"] == "json":
        obj = {"status": "ok", "tool": name, "took_ms": rng.randint(3, 900), "query": topic,
               "results": [{"id": a, "title": b, "score": float(c)} for a, b, c in rows]}
        if domain == "coding":
            obj["log"] = [f"[{rng.randint(0, 59):02d}.{rng.randint(0, 999):03d}] INFO worker step {i} ok"
                          for i in range(rng.randint(5, 25))]
        if fact:
            obj[fact["key"]] = fact["value"]
        return json.dumps(obj, ensure_ascii=False, indent=2)
    lines = [f"== {name} :: {topic} ==", "| ref | description | weight |", "|---|---|---|"]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    if domain == "coding":
        lines += [f"  ok {i:>3}  step{i} ({rng.randint(1, 400)} ms)" for i in range(rng.randint(5, 25))]
    if fact:
        lines.insert(rng.randint(3, len(lines)), f"| {fact['key'].upper()} | {fact['value']} | - |")
    lines.append(f"-- {n} rows, exit status 0 --")
    return "\n".join(lines)


def render(rng, domain, split, sk, used, facts):
    P = PHRASINGS[split]
    msgs = []
    prev_event = None
    for i, slot in enumerate(sk):
        ev = used.get(i)
        role = role_of(slot)
        if role == "user":
            core = ""
            if ev:
                f = ev.get("fact")
                if ev["type"] == "intro":
                    bank = P["intro"].get(f["kind"], P["intro"]["*"])
                    lab = label_for(rng, P, f)
                    core = rng.choice(bank).format(label=lab, Label=cap(lab), v=f["value"])
                elif ev["type"] == "correction":
                    bank = P["correction"].get(f["kind"], P["correction"]["*"])
                    lab = label_for(rng, P, f)
                    core = rng.choice(bank).format(label=lab, Label=cap(lab), v=f["value"])
                elif ev["type"] == "closure":
                    core = rng.choice(P["closure"]).format(case=ev["cname"], Case=cap(ev["cname"]))
                elif ev["type"] == "probe":
                    lab = label_for(rng, P, f)
                    core = cap(rng.choice(P["probe"]).format(label=lab, Label=cap(lab)))
            msgs.append({"role": "user", "content": fill(rng, P, domain, core, "user", 15, 120)})
            prev_event = ev
            continue
        if slot == "tool":
            # the pending call of the latest assistant tool-call message
            tc_msg = next(m for m in reversed(msgs) if m["role"] == "assistant" and m.get("tool_calls"))
            done = sum(1 for m in msgs[msgs.index(tc_msg) + 1:] if m["role"] == "tool")
            call = tc_msg["tool_calls"][done]
            fact = ev["fact"] if ev and ev["type"] == "intro" else None
            msgs.append({"role": "tool", "tool_call_id": call["id"],
                         "content": tool_output(rng, P, domain, call["name"], fact)})
            continue
        # assistant (plain or with tool calls)
        core = ""
        if ev and ev["type"] == "answer":
            f = ev["fact"]
            lab = label_for(rng, P, f)
            core = rng.choice(P["probe_answer"]).format(label=lab, Label=cap(lab), v=f["value"])
        elif ev and ev["type"] == "intro":
            f = ev["fact"]
            lab = label_for(rng, P, f)
            core = rng.choice(P["intro_assistant"]).format(label=lab, Label=cap(lab), v=f["value"])
        elif prev_event and prev_event["type"] in ("intro", "correction", "closure"):
            core = rng.choice(P["ack"])
        if isinstance(slot, tuple):
            core = (core + " " if core else "") + rng.choice(P["tool_intro"])
        m = {"role": "assistant", "content": fill(rng, P, domain, core, "assistant", 40, 250)}
        if isinstance(slot, tuple):
            m["tool_calls"] = []
            for _ in range(slot[1]):
                name = rng.choice(P["tools"][domain])
                args = {"query": rng.choice(P["topics"][domain]), "limit": rng.randint(5, 50)}
                m["tool_calls"].append({"id": f"call_{rng.getrandbits(48):012x}", "name": name,
                                        "arguments": json.dumps(args, ensure_ascii=False)})
        msgs.append(m)
        prev_event = None
    return msgs


# ---------------------------------------------------------------------------------------------
def validate(conv):
    """Return a list of problems (empty if the conversation satisfies the spec)."""
    probs = []
    msgs, facts = conv["messages"], conv["facts"]
    if len(msgs) != N_MESSAGES:
        probs.append("length")
    for i, m in enumerate(msgs):
        w = words(m["content"])
        if m["role"] == "user" and not 15 <= w <= 120:
            probs.append(f"user words {i}: {w}")
        if m["role"] == "assistant" and not 40 <= w <= 250:
            probs.append(f"assistant words {i}: {w}")
        if m.get("tool_calls"):
            for j, c in enumerate(m["tool_calls"]):
                t = msgs[i + 1 + j] if i + 1 + j < len(msgs) else {}
                if t.get("role") != "tool" or t.get("tool_call_id") != c["id"]:
                    probs.append(f"tool sequence {i}")
        if m["role"] == "tool" and not (msgs[i - 1]["role"] == "tool" or msgs[i - 1].get("tool_calls")):
            probs.append(f"orphan tool {i}")
    texts = [norm(message_text(m)) for m in msgs]
    answers = {}
    for p in conv["probes"]:
        answers.setdefault(p["fact_id"], set()).add(p["at"] + 1)
    byid = {f["id"]: f for f in facts}
    for f in facts:
        if f["value"] not in msgs[f["introduced_at"]]["content"]:
            probs.append(f"value not verbatim {f['id']}")
        v = norm(f["value"])
        for i, t in enumerate(texts):
            if v in t and i != f["introduced_at"] and i not in answers.get(f["id"], ()):
                probs.append(f"stray occurrence of {f['id']} at {i}")
                break
        if f["superseded_by"]:
            a, b = v, norm(byid[f["superseded_by"]]["value"])
            if a in b or b in a:
                probs.append(f"correction substring {f['id']}")
    for p in conv["probes"]:
        f = byid[p["fact_id"]]
        if msgs[p["at"]]["role"] != "user" or not is_open(f, p["at"]) or f["introduced_at"] > p["at"] - 60:
            probs.append(f"bad probe {p}")
    n_open = sum(is_open(f, N_MESSAGES - 1) for f in facts)
    if not 40 <= len(facts) <= 80:
        probs.append(f"fact count {len(facts)}")
    if not 10 <= n_open <= 30:
        probs.append(f"open at end {n_open}")
    if not 8 <= len(conv["probes"]) <= 12:
        probs.append(f"probe count {len(conv['probes'])}")
    return probs


def make_conversation(seed, domain, split):
    for attempt in range(200):
        rng = random.Random(f"{split}:{domain}:{seed}:{attempt}")
        sk = skeleton(rng, domain)
        facts, used, probes = plan(rng, domain, split, sk)
        msgs = render(rng, domain, split, sk, used, facts)
        conv = {
            "id": f"{split}-{domain}-{seed}", "domain": domain, "split": split, "seed": seed,
            "messages": msgs,
            "facts": [{k: f[k] for k in ("id", "kind", "value", "case", "introduced_at", "closed_at",
                                         "superseded_at", "superseded_by")} for f in facts],
            "probes": sorted(probes, key=lambda p: p["at"]),
            "checkpoints": list(CHECKPOINTS),
        }
        if not validate(conv):
            return conv
    raise RuntimeError(f"could not generate a valid conversation for {split}/{domain}/{seed}")


SPLITS = {"dev": (range(1000, 2000), 2), "heldout": (range(9000, 10000), 3)}


def generate_split(split):
    seeds_range, per_domain = SPLITS[split]
    seeds = random.Random(f"seeds:{split}").sample(list(seeds_range), per_domain * len(DOMAINS))
    convs, k = [], 0
    for domain in DOMAINS:
        for _ in range(per_domain):
            convs.append(make_conversation(seeds[k], domain, split))
            k += 1
    return convs


def write(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    for split in SPLITS:
        with open(os.path.join(out_dir, f"{split}.jsonl"), "w", encoding="utf-8") as fh:
            for c in generate_split(split):
                fh.write(json.dumps(c, ensure_ascii=False) + "\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "data"))
    write(ap.parse_args(argv).out)


if __name__ == "__main__":
    main()
