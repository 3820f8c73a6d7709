#!/usr/bin/env python3
# ruff: noqa: E501, RUF001  (data tables and non-ASCII value pools are intentional)
"""Agentic long-conversation memory test set (see README.md).

Deterministic: every conversation is a pure function of (domain, seed); the RNG is
seeded from the string "agentic|<domain>|<seed>|<attempt>" and the first attempt
whose conversation passes validate() is kept.  Standard library only.
"""

import json
import random
import sys
import unicodedata
from pathlib import Path

N_MESSAGES = 500
KINDS = [
    "identifier",
    "person",
    "address",
    "date",
    "relative_date",
    "amount",
    "contact",
    "preference",
    "decision",
    "technical",
    "quantity",
]
TOOL_SOURCES = ("tool_output", "tool_args")


def norm(s):
    return " ".join(unicodedata.normalize("NFC", s).casefold().split())


def words(s):
    return len(s.split())


# ----------------------------------------------------------------------------------
# shared value pools
# ----------------------------------------------------------------------------------
GIVEN_FAMILY = [
    "Zoë Lindqvist",
    "Håkon Ødegård",
    "Łucja Wąsowska",
    "José Ángel Ibáñez",
    "Nguyễn Thị Lan",
    "王芳华",
    "李建国",
    "Дмитрий Соколов",
    "Анна Ковалёва",
    "محمد الحسن",
    "فاطمة الزهراء",
    "Siobhán Ní Bhriain",
    "Kwame Mensah-Boateng",
    "Priya Raghunathan",
    "Tomás Ó Ceallaigh",
    "Ayşe Yıldırım",
    "Camille Dubois-Lefèvre",
    "Oluwaseun Adeyemi",
    "田中 美咲",
    "佐藤 健一",
    "김민준",
    "Mateus Conceição",
    "Ingrid Sæther",
    "Ramón Quiñones",
    "Žofie Dvořáková",
    "Chidi Okonkwo",
    "Aleksandra Wiśniewska",
    "Rahul Deshpande",
    "Mei-Ling Huang",
    "Farida Haddad",
    "Jens Mühlbauer",
    "Søren Kierkegaard-Holm",
    "Renée Beaulieu",
    "Joaquín Etxeberria",
    "Ngozi Eze",
    "Ólafur Þórsson",
    "Ewa Grabowska",
    "Marek Novák",
    "Hiroshi Watanabe",
    "Lakshmi Venkataraman",
    "Yusuf Demirtaş",
    "Ярослава Мельник",
    "عمر الفاروق",
    "Paulo Gonçalves",
    "Eilidh MacLeòid",
    "Thandiwe Nkosi",
    "陈晓明",
    "Björn Åkesson",
    "Dorota Kłos",
    "Iñaki Zubizarreta",
    "Astrid Vølund",
    "Kenji Mori",
]
HANDLES = [
    "kmensah",
    "lwasowska",
    "praghu",
    "jmuehlbauer",
    "zlindqvist",
    "hodegard",
    "cdubois",
    "rquinones",
    "mhuang",
    "fhaddad",
    "tnkosi",
    "ydemirtas",
    "agrabowska",
    "okeze",
]
STREETS_US = ["Alder Creek Rd", "Maple Ave", "Harbor Blvd", "Larkspur Ln", "Cedar Point Dr"]
CITIES_US = [
    ("Boulder", "CO", "803"),
    ("Austin", "TX", "787"),
    ("Portland", "OR", "972"),
    ("Raleigh", "NC", "276"),
    ("Madison", "WI", "537"),
]
STREETS_UK = ["Pembroke Gardens", "Ravenscourt Rd", "Quayside Walk", "Hatton Garden", "Thistle St"]
CITIES_UK = [
    ("London", "W8 6HU"),
    ("Leeds", "LS1 4DY"),
    ("Edinburgh", "EH2 2ER"),
    ("Bristol", "BS1 5TR"),
]
STREETS_DE = [
    "Kastanienallee",
    "Schönhauser Allee",
    "Bahnhofstraße",
    "Lindenstraße",
    "Türkenstraße",
]
CITIES_DE = [("10435", "Berlin"), ("80799", "München"), ("50667", "Köln"), ("20095", "Hamburg")]
STREETS_FR = ["rue des Tanneurs", "boulevard Haussmann", "rue de la Roquette", "quai Saint-Michel"]
CITIES_FR = [("67000", "Strasbourg"), ("75011", "Paris"), ("69002", "Lyon"), ("33000", "Bordeaux")]
STREETS_CH = ["Bahnhofstrasse", "Rue du Rhône", "Spalenberg", "Marktgasse"]
CITIES_CH = [("8001", "Zürich"), ("1204", "Genève"), ("4051", "Basel"), ("3011", "Bern")]
JP_ADDR = [
    "東京都渋谷区渋谷",
    "大阪府大阪市北区梅田",
    "京都府京都市中京区烏丸通",
    "福岡県福岡市博多区博多駅前",
]
IN_ADDR = [
    ("Indiranagar", "Bengaluru", "5600"),
    ("Koramangala", "Bengaluru", "5600"),
    ("Bandra West", "Mumbai", "4000"),
    ("Salt Lake Sector V", "Kolkata", "7000"),
]
NL_ADDR = ["Keizersgracht", "Prinsengracht", "Oudegracht", "Witte de Withstraat"]


def g_address(r):
    t = r.randrange(8)
    if t == 0:
        c, st, z = r.choice(CITIES_US)
        return f"{r.randint(100, 9899)} {r.choice(STREETS_US)}, Suite {r.randint(2, 9)}{r.randint(0, 9)}0, {c}, {st} {z}{r.randint(10, 99)}"
    if t == 1:
        c, pc = r.choice(CITIES_UK)
        return f"Flat {r.randint(1, 40)}, {r.randint(2, 190)} {r.choice(STREETS_UK)}, {c} {pc}"
    if t == 2:
        z, c = r.choice(CITIES_DE)
        return f"{r.choice(STREETS_DE)} {r.randint(1, 160)}, {z} {c}"
    if t == 3:
        z, c = r.choice(CITIES_FR)
        return f"{r.randint(1, 98)} {r.choice(STREETS_FR)}, {z} {c}"
    if t == 4:
        z, c = r.choice(CITIES_CH)
        return f"{r.choice(STREETS_CH)} {r.randint(1, 90)}, {z} {c}"
    if t == 5:
        return f"〒{r.randint(100, 999)}-{r.randint(1000, 9999)} {r.choice(JP_ADDR)}{r.randint(1, 5)}-{r.randint(1, 30)}-{r.randint(1, 20)}"
    if t == 6:
        a, c, z = r.choice(IN_ADDR)
        return (
            f"No. {r.randint(2, 220)}, {r.randint(1, 12)}th Cross, {a}, {c} {z}{r.randint(10, 99)}"
        )
    return f"{r.choice(NL_ADDR)} {r.randint(2, 400)}, {r.randint(1011, 3599)} {r.choice('ABCDEFGHJKLMNPRSTVWXZ')}{r.choice('ABCDEFGHJKLMNPRSTVWXZ')} {r.choice(['Amsterdam', 'Utrecht', 'Rotterdam'])}"


def g_net_address(r):
    t = r.randrange(3)
    if t == 0:
        return f"10.{r.randint(16, 250)}.{r.randint(0, 254)}.{r.randint(2, 250)}:{r.choice([5432, 6379, 8443, 9092, 27017, 5433, 8080])}"
    if t == 1:
        return f"{r.choice(['db', 'cache', 'broker', 'api', 'search'])}-{r.choice(['primary', 'replica', 'canary'])}-{r.randint(2, 19)}.{r.choice(['prod', 'staging', 'eu1', 'use2'])}.internal"
    return f"[fd{r.randint(10, 99)}:{r.randint(1000, 9999):x}::{r.randint(10, 250):x}]:{r.randint(8000, 9999)}"


MONTHS_EN = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
MONTHS_DE = [
    "Januar",
    "Februar",
    "März",
    "April",
    "Mai",
    "Juni",
    "Juli",
    "August",
    "September",
    "Oktober",
    "November",
    "Dezember",
]
MONTHS_FR = [
    "janvier",
    "février",
    "mars",
    "avril",
    "mai",
    "juin",
    "juillet",
    "août",
    "septembre",
    "octobre",
    "novembre",
    "décembre",
]
MONTHS_ES = [
    "enero",
    "febrero",
    "marzo",
    "abril",
    "mayo",
    "junio",
    "julio",
    "agosto",
    "septiembre",
    "octubre",
    "noviembre",
    "diciembre",
]
MONTHS_PL = [
    "stycznia",
    "lutego",
    "marca",
    "kwietnia",
    "maja",
    "czerwca",
    "lipca",
    "sierpnia",
    "września",
    "października",
    "listopada",
    "grudnia",
]


def g_date(r):
    y = r.choice([2026, 2027])
    m = r.randint(1, 12)
    d = r.randint(13, 28)  # day > 12 keeps d/m and m/d unambiguous
    t = r.randrange(11)
    if t == 0:
        return f"{d:02d}/{m:02d}/{y}"
    if t == 1:
        return f"{m:02d}/{d:02d}/{y}"
    if t == 2:
        return f"{y}-{m:02d}-{d:02d}"
    if t == 3:
        return f"{MONTHS_EN[m - 1]} {d}, {y}"
    if t == 4:
        return f"{d} {MONTHS_EN[m - 1]} {y}"
    if t == 5:
        return f"{d}. {MONTHS_DE[m - 1]} {y}"
    if t == 6:
        return f"{d} {MONTHS_FR[m - 1]} {y}"
    if t == 7:
        return f"{d} de {MONTHS_ES[m - 1]} de {y}"
    if t == 8:
        return f"{y}年{m}月{d}日"
    if t == 9:
        return f"{d} {MONTHS_PL[m - 1]} {y}"
    return (
        f"{y}-{m:02d}-{d:02d}T{r.randint(0, 23):02d}:{r.randint(0, 59):02d}:{r.randint(0, 59):02d}Z"
    )


RELATIVE = [
    "next Tuesday",
    "in two weeks",
    "the day after tomorrow",
    "Thursday after next",
    "first Monday of next month",
    "end of next sprint",
    "nächsten Dienstag",
    "übermorgen",
    "in drei Wochen",
    "dans deux semaines",
    "mardi prochain",
    "la semana que viene",
    "el próximo viernes",
    "来週の火曜日",
    "再来週の金曜日",
    "через две недели",
    "в следующий четверг",
    "om twee weken",
    "fra dieci giorni",
    "in ten business days",
    "a week from Friday",
    "this coming Wednesday",
    "za tydzień w środę",
    "em quinze dias",
    "before the quarter closes",
    "two Mondays from now",
    "下周三",
    "בעוד שבועיים",
]


def g_relative(r):
    return r.choice(RELATIVE)


def g_amount(r):
    t = r.randrange(11)
    a, b, c = r.randint(1, 9), r.randint(100, 999), r.randint(10, 99)
    if t == 0:
        return f"€{a}.{b},{c}"
    if t == 1:
        return f"CHF {a}'{b}.–"
    if t == 2:
        return f"₹{a},{r.randint(10, 99)},{b}"
    if t == 3:
        return f"¥{a}{r.randint(0, 9)},{b}"
    if t == 4:
        return f"{a} {b},{c} zł"
    if t == 5:
        return f"${a}{r.randint(0, 9)},{b}.{c}"
    if t == 6:
        return f"£{a},{b}.{c}"
    if t == 7:
        return f"R$ {a}.{b},{c}"
    if t == 8:
        return f"{a}{r.randint(0, 9)} {b} kr"
    if t == 9:
        return f"US$ {a}.{r.randint(1, 9)}M"
    return f"{a} {b},{c} €"


def g_phone(r):
    t = r.randrange(8)
    d = lambda n: "".join(str(r.randint(0, 9)) for _ in range(n))  # noqa: E731
    if t == 0:
        return f"+44 20 7946 {d(4)}"
    if t == 1:
        return f"({r.randint(201, 989)}) 555-{d(4)}"
    if t == 2:
        return f"+49 30 {d(6)}-{d(2)}"
    if t == 3:
        return f"06 {d(2)} {d(2)} {d(2)} {d(2)}"
    if t == 4:
        return f"03-{d(4)}-{d(4)}"
    if t == 5:
        return f"+91 9{d(4)} {d(5)}"
    if t == 6:
        return f"(11) 9{d(4)}-{d(4)}"
    return f"+41 44 {d(3)} {d(2)} {d(2)}"


EMAIL_DOMAINS = [
    "northwind-analytics.io",
    "fjordbank.no",
    "helix-labs.dev",
    "quantaworks.de",
    "sakura-logistics.jp",
    "univ-lyon.fr",
    "kestrel.cloud",
    "orbitpay.in",
]
EMAIL_USERS = [
    "p.raghunathan",
    "h.odegard",
    "lucja.w",
    "jangel.ibanez",
    "lan.nguyen",
    "d.sokolov",
    "kmensah",
    "c.dubois",
    "oadeyemi",
    "m.huang",
    "f.haddad",
    "jens.m",
    "ingrid.s",
    "rquinones",
    "zofie.d",
    "t.nkosi",
    "ewa.g",
    "kenji.mori",
]


def g_contact_typed(r):
    t = r.randrange(4)
    if t <= 1:
        return "phone", g_phone(r)
    if t == 2:
        return "email", f"{r.choice(EMAIL_USERS)}{r.randint(2, 99)}@{r.choice(EMAIL_DOMAINS)}"
    return (
        "channel",
        f"#{r.choice(['inc', 'team', 'proj', 'ops'])}-{r.choice(['ledger', 'payments', 'kestrel', 'atlas', 'harbor', 'lumen'])}-{r.choice(['bridge', 'war-room', 'oncall', 'review', 'sync'])}{r.randint(2, 9)}",
    )


CONTACT_LABELS = {
    "coding_agent": {
        "phone": ["maintainer's phone number"],
        "email": ["security contact e-mail", "maintainer's e-mail"],
        "channel": ["review channel", "Slack channel for the team"],
    },
    "data_analyst_agent": {
        "phone": ["stakeholder's phone number"],
        "email": ["e-mail to send the results to", "stakeholder's e-mail"],
        "channel": ["channel for the readout"],
    },
    "ops_agent": {
        "phone": ["escalation number", "on-call phone"],
        "email": ["vendor support e-mail"],
        "channel": ["incident channel", "bridge channel"],
    },
    "research_assistant_agent": {
        "phone": ["hotel's phone", "host's phone number"],
        "email": ["editor's e-mail", "host's e-mail"],
        "channel": ["group chat channel"],
    },
}


def contact_gen(dom):
    def gen(r):
        t, v = g_contact_typed(r)
        return CONTACT_LABELS[dom][t], v

    return gen


def g_person(r):
    if r.random() < 0.15:
        return f"@{r.choice(HANDLES)}{r.randint(2, 99)}"
    return r.choice(GIVEN_FAMILY)


def hexs(r, n):
    return "".join(r.choice("0123456789abcdef") for _ in range(n))


def g_uuid(r):
    return f"{hexs(r, 8)}-{hexs(r, 4)}-4{hexs(r, 3)}-{r.choice('89ab')}{hexs(r, 3)}-{hexs(r, 12)}"


def letters(r, n):
    return "".join(r.choice("ABCDEFGHJKLMNPQRSTUVWXYZ") for _ in range(n))


def mixed(r, n):
    return "".join(
        r.choice("abcdefghjkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789") for _ in range(n)
    )


W1 = [
    "ledger",
    "invoice",
    "tenant",
    "webhook",
    "retry",
    "session",
    "quota",
    "export",
    "cursor",
    "snapshot",
    "billing",
    "payout",
    "schema",
    "token",
    "batch",
    "ingest",
    "shard",
    "audit",
]
W2 = [
    "renderer",
    "parser",
    "resolver",
    "scheduler",
    "client",
    "adapter",
    "cache",
    "guard",
    "mapper",
    "writer",
    "loader",
    "backoff",
    "window",
    "registry",
    "emitter",
    "policy",
]
VERBS = [
    "reconcile",
    "normalize",
    "flush",
    "compute",
    "resolve",
    "validate",
    "rehydrate",
    "apply",
    "coalesce",
    "serialize",
    "dispatch",
    "prune",
]


def camel(*ws):
    return "".join(w.capitalize() for w in ws)


# ----------------------------------------------------------------------------------
# domain value tables: kind -> list of (labels, generator)
# ----------------------------------------------------------------------------------
def _code_ident(r):
    t = r.randrange(10)
    a, b = r.choice(W1), r.choice(W2)
    if t == 0:
        return (
            ["file with the bug", "module we are patching"],
            f"{r.choice(['src', 'lib', 'app', 'services'])}/{a}/{a}_{b}_{r.choice(W1)}.py",
        )
    if t == 1:
        return (
            ["failing test", "test that keeps failing"],
            f"tests/{a}/test_{b}.py::Test{camel(a, b)}::test_{r.choice(VERBS)}_{r.choice(W1)}_{r.randint(2, 99)}",
        )
    if t == 2:
        return (["commit that introduced it", "bad commit (short hash)"], hexs(r, 7))
    if t == 3:
        return (["full hash of the last good commit", "long commit hash"], hexs(r, 40))
    if t == 4:
        return (
            ["branch name", "working branch"],
            f"{r.choice(['fix', 'feat', 'chore', 'hotfix'])}/{a}-{b}-{r.choice(['Tz', 'Utf8', 'N1', 'Pg15', 'Eu'])}{r.randint(100, 9999)}",
        )
    if t == 5:
        return (
            ["pull request", "PR link"],
            f"https://github.com/helix-labs/{a}-svc/pull/{r.randint(1000, 9999)}",
        )
    if t == 6:
        return (
            ["issue link", "upstream issue"],
            f"https://gitlab.helix-labs.dev/core/{b}/-/issues/{r.randint(100, 9999)}",
        )
    if t == 7:
        return (
            ["function at fault", "function we need to change"],
            f"{r.choice(VERBS)}_{a}_{b}s"
            if r.random() < 0.5
            else f"{r.choice(VERBS)}{camel(a, b)}",
        )
    if t == 8:
        return (
            ["class to extend", "class involved"],
            f"{camel(a, r.choice(W1), b)}{r.choice(['', 'V2', 'Impl', 'Base'])}",
        )
    return (
        ["pinned version", "version we pinned"],
        f"{r.choice(['sqlalchemy', 'pydantic', 'celery', 'psycopg', 'urllib3', 'grpcio'])}=={r.randint(1, 4)}.{r.randint(0, 30)}.{r.randint(1, 19)}",
    )


def _code_tech(r):
    t = r.randrange(6)
    if t == 0:
        return (
            ["exception message", "error we keep hitting"],
            r.choice(
                [
                    f"ValueError: naive datetime {r.choice(W1)}_at is not allowed",
                    f"KeyError: '{r.choice(W1)}_{r.choice(W2)}_id'",
                    f"IntegrityError: duplicate key value violates unique constraint {r.choice(W1)}_{r.choice(W2)}_uniq",
                    f"TimeoutError: lock on {r.choice(W1)}_{r.choice(W2)} not acquired after {r.randint(3, 60)}s",
                    f"AttributeError: 'NoneType' object has no attribute '{r.choice(VERBS)}_{r.choice(W1)}'",
                ]
            ),
        )
    if t == 1:
        return (
            ["error code", "error code from the API"],
            f"E{r.choice(['LOCK', 'AUTH', 'QUOTA', 'SCHEMA'])}_{r.randint(1000, 9999)}",
        )
    if t == 2:
        return (
            ["config key and value", "setting we changed"],
            f"{r.choice(W1)}.{r.choice(['pool_recycle', 'max_overflow', 'batch_size', 'visibility_timeout'])}={r.randint(17, 3600)}",
        )
    if t == 3:
        return (
            ["env var", "environment variable name"],
            f"{r.choice(W1).upper()}_{r.choice(W2).upper()}_{r.choice(['SECRET', 'TIMEOUT_SECS', 'DSN', 'FLAG', 'REGION'])}",
        )
    if t == 4:
        return (
            ["command we settled on", "test command"],
            r.choice(
                [
                    f"pytest -q tests/{r.choice(W1)} -k 'not slow' -p no:randomly --maxfail={r.randint(2, 9)}",
                    f"make test-integration SHARD={r.randint(2, 16)} DB=pg{r.randint(13, 17)}",
                    f"tox -e py311-{r.choice(W1)} -- --lf --durations={r.randint(5, 30)}",
                    f"npm run e2e -- --grep @{r.choice(W1)}{r.randint(10, 99)}",
                ]
            ),
        )
    return (["dev server port", "port the service binds"], f"127.0.0.1:{r.randint(3001, 9899)}")


def _code_quant(r):
    return r.choice(
        [
            (["flaky-run count", "number of flaky runs"], f"{r.randint(11, 97)} flaky runs"),
            (
                ["coverage figure", "coverage"],
                f"{r.randint(61, 97)}.{r.randint(1, 9)}% line coverage",
            ),
            (["p95 latency", "latency number"], f"p95 {r.randint(120, 990)} ms"),
            (["worker count", "number of workers"], f"{r.randint(3, 48)} xdist workers"),
            (
                ["test suite size", "test count"],
                f"{r.randint(1, 9)},{r.randint(100, 999)} tests collected",
            ),
            (["memory ceiling", "memory limit"], f"{r.choice([384, 768, 1536, 3072])} MiB RSS"),
        ]
    )


def _code_decision(r):
    return r.choice(
        [
            (
                ["merge strategy", "decision on merging"],
                f"squash-merge after {r.choice(GIVEN_FAMILY)} approves",
            ),
            (
                ["decision on the migration", "migration plan"],
                f"split migration {r.randint(30, 99):04d} into two steps",
            ),
            (
                ["fix approach", "what we decided to do"],
                f"revert and re-land behind flag {r.choice(W1)}_{r.choice(W2)}_v{r.randint(2, 5)}",
            ),
            (
                ["dependency decision", "decision on the dependency"],
                f"vendor the patched {r.choice(['wheel', 'crate', 'tarball'])} under third_party/{r.choice(W1)}{r.randint(2, 9)}",
            ),
            (
                ["release decision", "release plan"],
                f"ship as hotfix {r.randint(2, 9)}.{r.randint(0, 20)}.{r.randint(1, 9)}-post{r.randint(1, 4)}",
            ),
        ]
    )


def _code_pref(r):
    return r.choice(
        [
            (
                ["commit style", "commit message convention"],
                r.choice(
                    [
                        "conventional commits with scope",
                        "gitmoji-free imperative subjects",
                        "Co-authored-by trailers on every commit",
                    ]
                ),
            ),
            (
                ["formatting preference", "line length"],
                f"ruff format with line-length {r.choice([88, 99, 100, 110, 120])}",
            ),
            (
                ["testing preference", "testing rule"],
                r.choice(
                    [
                        "no mocks in integration tests",
                        "property tests via hypothesis",
                        "one assert per behaviour",
                    ]
                ),
            ),
            (
                ["review preference", "review rule"],
                r.choice(
                    [
                        "two approvals for migrations",
                        "draft PRs until CI is green",
                        "stacked PRs under 400 lines",
                    ]
                ),
            ),
        ]
    )


def _data_ident(r):
    t = r.randrange(7)
    if t == 0:
        return (
            ["source table", "fact table"],
            f"{r.choice(['analytics', 'mart', 'raw', 'stg'])}.{r.choice(['fct', 'dim', 'agg'])}_{r.choice(['orders', 'sessions', 'refunds', 'subscriptions', 'churn', 'ad_spend'])}_{r.choice(['daily', 'v2', 'eu', 'snap'])}{r.randint(2, 9)}",
        )
    if t == 1:
        return (
            ["key column", "column to join on"],
            f"{r.choice(['customer', 'account', 'merchant', 'cohort'])}_{r.choice(['sk', 'uuid', 'key', 'ref'])}_{r.choice(['v2', 'hashed', 'norm'])}",
        )
    if t == 2:
        return (
            ["dataset version", "snapshot version"],
            f"{r.choice(['sales', 'crm', 'web'])}_{r.randint(2026, 2027)}{r.randint(1, 12):02d}{r.randint(10, 28)}_r{r.randint(2, 9)}",
        )
    if t == 3:
        return (["query id", "warehouse query id"], g_uuid(r))
    if t == 4:
        return (
            ["notebook path", "notebook"],
            f"notebooks/{r.choice(['churn', 'ltv', 'pricing', 'attribution'])}/{r.randint(10, 99)}_{r.choice(['explore', 'model', 'report'])}_{r.choice(['Q3', 'Q4', 'H1'])}.ipynb",
        )
    if t == 5:
        return (["dashboard id", "Looker dashboard"], f"dash-{mixed(r, 8)}")
    return (
        ["experiment key", "A/B test key"],
        f"exp_{r.choice(['checkout', 'onboarding', 'pricing'])}_{letters(r, 4).lower()}{r.randint(10, 99)}",
    )


def _data_tech(r):
    return r.choice(
        [
            (
                ["filter we decided", "WHERE clause"],
                f"country_code NOT IN ('{letters(r, 2)}','{letters(r, 2)}') AND is_test = false",
            ),
            (
                ["date filter", "time window filter"],
                f"order_ts >= DATE '{r.randint(2025, 2026)}-{r.randint(1, 12):02d}-01' - INTERVAL '{r.randint(2, 18)} months'",
            ),
            (
                ["chart encoding", "chart spec"],
                f"x=week_start:T, y=sum(net_revenue):Q, color={r.choice(['channel', 'region', 'plan_tier'])}:N",
            ),
            (
                ["dedup rule", "deduplication key"],
                f"ROW_NUMBER() OVER (PARTITION BY {r.choice(['order_id', 'session_id', 'invoice_no'])} ORDER BY {r.choice(['updated_at', 'ingested_at'])} DESC)",
            ),
            (
                ["warehouse error", "error the warehouse gave"],
                f"SQL compilation error: invalid identifier '{letters(r, 3)}_{r.choice(['AMT', 'TS', 'ID'])}_{r.randint(2, 9)}'",
            ),
        ]
    )


def _data_quant(r):
    return r.choice(
        [
            (
                ["row count", "number of rows"],
                f"{r.randint(1, 99)},{r.randint(100, 999)},{r.randint(100, 999)} rows",
            ),
            (
                ["churn rate", "churn figure"],
                f"{r.randint(2, 19)}.{r.randint(1, 99)}% monthly churn",
            ),
            (["sample size", "n per arm"], f"n={r.randint(2, 90)},{r.randint(100, 999)} per arm"),
            (["conversion lift", "lift"], f"+{r.randint(1, 9)}.{r.randint(1, 9)} pp lift"),
            (["null share", "share of nulls"], f"{r.randint(1, 40)}.{r.randint(1, 9)}% nulls"),
            (["threshold", "cut-off"], f"p < 0.0{r.randint(1, 5)}"),
        ]
    )


def _data_decision(r):
    return r.choice(
        [
            (
                ["attribution decision", "attribution model"],
                f"{r.choice(['last-touch', 'position-based', 'time-decay'])} attribution with a {r.randint(7, 30)}-day window",
            ),
            (
                ["outlier decision", "how to treat outliers"],
                f"winsorize at the {r.choice([95, 97, 99])}th percentile",
            ),
            (
                ["decision on the metric", "metric definition"],
                f"use net revenue after {r.choice(['refunds', 'chargebacks', 'VAT'])} only",
            ),
            (
                ["population decision", "who is in scope"],
                f"exclude accounts created before {r.choice(MONTHS_EN)} {r.randint(2022, 2025)}",
            ),
        ]
    )


def _data_pref(r):
    return r.choice(
        [
            (
                ["chart preference", "chart style"],
                r.choice(
                    [
                        "no pie charts, horizontal bars only",
                        "log-scale y axis",
                        "colour-blind safe palette viridis",
                    ]
                ),
            ),
            (
                ["number format preference", "number format"],
                r.choice(
                    [
                        "thousands as k with one decimal",
                        "currency in EUR with two decimals",
                        "percentages with one decimal",
                    ]
                ),
            ),
            (
                ["statistics preference", "preferred statistic"],
                r.choice(["median not mean", "bootstrap 95% intervals", "Bonferroni correction"]),
            ),
            (
                ["delivery preference", "delivery format"],
                r.choice(
                    [
                        "Slack summary then the deck",
                        "CSV plus a Loom walkthrough",
                        "Google Sheet with raw tab",
                    ]
                ),
            ),
        ]
    )


def _ops_ident(r):
    t = r.randrange(9)
    if t == 0:
        return (["incident id", "incident number"], f"INC-{r.randint(1000, 99999)}{letters(r, 1)}")
    if t == 1:
        return (["incident uuid", "PagerDuty incident uuid"], g_uuid(r))
    if t == 2:
        return (
            ["pod name", "crashing pod"],
            f"{r.choice(W1)}-{r.choice(W2)}-{hexs(r, 9)}-{mixed(r, 5).lower()}",
        )
    if t == 3:
        return (
            ["namespace", "affected namespace"],
            f"{r.choice(['payments', 'ingest', 'search', 'auth'])}-{r.choice(['prod', 'canary', 'blue', 'green'])}-{r.choice(['euw1', 'use2', 'apse1'])}",
        )
    if t == 4:
        return (
            ["cluster", "cluster name"],
            f"gke-{r.choice(['atlas', 'kestrel', 'lumen'])}-{r.choice(['prod', 'shared'])}-{r.randint(2, 19)}",
        )
    if t == 5:
        return (
            ["hostname", "bad host"],
            f"ip-10-{r.randint(0, 255)}-{r.randint(0, 255)}-{r.randint(0, 255)}.{r.choice(['eu-west-1', 'us-east-2'])}.compute.internal",
        )
    if t == 6:
        return (
            ["alert name", "alert that fired"],
            f"{camel(r.choice(W1), r.choice(['Latency', 'ErrorBudget', 'Saturation', 'Lag']))}{r.choice(['Burn', 'High', 'Critical'])}{r.randint(2, 9)}",
        )
    if t == 7:
        return (
            ["runbook URL", "runbook"],
            f"https://runbooks.kestrel.cloud/{r.choice(W1)}/{r.choice(['drain', 'failover', 'restart', 'rotate'])}-{r.choice(W2)}-{r.randint(2, 99)}",
        )
    return (["change ticket", "change request"], f"chg{r.randint(100000, 999999)}")


def _ops_tech(r):
    return r.choice(
        [
            (
                ["region", "affected region"],
                r.choice(
                    [
                        "eu-central-2",
                        "ap-southeast-3",
                        "me-south-1",
                        "sa-east-1",
                        "ca-west-1",
                        "af-south-1",
                    ]
                ),
            ),
            (
                ["IP address", "bad IP"],
                f"172.{r.randint(16, 31)}.{r.randint(0, 255)}.{r.randint(2, 254)}",
            ),
            (
                ["kernel error", "error in the node log"],
                f"nf_conntrack: table full, dropping packet ({r.randint(60000, 262144)} entries)",
            ),
            (
                ["image tag", "image we deployed"],
                f"registry.kestrel.cloud/{r.choice(W1)}:{r.randint(1, 9)}.{r.randint(0, 40)}.{r.randint(0, 9)}-{hexs(r, 7)}",
            ),
            (
                ["exit reason", "termination reason"],
                f"OOMKilled (exit code 137) at {r.choice([512, 768, 1024, 2048])}Mi",
            ),
            (
                ["feature flag", "flag we toggled"],
                f"{r.choice(W1)}.{r.choice(W2)}.{r.choice(['kill_switch', 'shadow_mode', 'dual_write'])}",
            ),
        ]
    )


def _ops_quant(r):
    return r.choice(
        [
            (["error rate", "5xx rate"], f"{r.randint(2, 48)}.{r.randint(1, 9)}% 5xx"),
            (["replica count", "replicas"], f"{r.randint(4, 60)} replicas"),
            (["queue lag", "consumer lag"], f"{r.randint(11, 990)}k messages lag"),
            (
                ["disk usage", "disk figure"],
                f"{r.randint(81, 99)}.{r.randint(1, 9)}% of /var/lib/docker",
            ),
            (["p99 latency", "tail latency"], f"p99 {r.randint(1, 9)}.{r.randint(1, 9)} s"),
            (["restart count", "number of restarts"], f"{r.randint(13, 400)} restarts"),
        ]
    )


def _ops_decision(r):
    return r.choice(
        [
            (
                ["rollback-or-fix decision", "decision on remediation"],
                r.choice(
                    [
                        f"roll back to revision {r.randint(12, 300)}",
                        f"fix-forward with hotfix-{r.randint(100, 999)}",
                    ]
                ),
            ),
            (
                ["traffic decision", "traffic plan"],
                f"shift {r.choice([20, 50, 80, 100])}% of traffic to {r.choice(['us-east-2', 'eu-west-1', 'ap-south-1'])}",
            ),
            (
                ["capacity decision", "capacity plan"],
                f"add node pool {r.choice(['n2d', 'c3', 'm7i'])}-pool-{r.randint(2, 9)}",
            ),
            (
                ["comms decision", "status page decision"],
                r.choice(
                    [
                        "status page set to degraded performance",
                        "customer comms only via TAMs",
                        "post-mortem public after legal review",
                    ]
                ),
            ),
        ]
    )


def _ops_pref(r):
    return r.choice(
        [
            (
                ["paging preference", "how to be paged"],
                r.choice(
                    [
                        "SMS before phone call",
                        "page only for SEV1 and SEV2",
                        "no pages between 01:00 and 06:00 CET",
                    ]
                ),
            ),
            (
                ["timezone preference", "timezone for timestamps"],
                r.choice(
                    [
                        "timestamps in UTC only",
                        "times in America/Chicago",
                        "Europe/Warsaw local time",
                    ]
                ),
            ),
            (
                ["change-window preference", "change window"],
                r.choice(
                    [
                        "changes only Tue-Thu 10:00-16:00",
                        "no deploys on Fridays",
                        "freeze during month-end close",
                    ]
                ),
            ),
        ]
    )


def _res_ident(r):
    t = r.randrange(8)
    if t == 0:
        return (
            ["DOI", "DOI of the paper"],
            f"10.{r.randint(1000, 9999)}/{r.choice(['j', 's', 'acs'])}.{r.choice(['cell', 'nature', 'jcp', 'pnas'])}.{r.randint(2015, 2026)}.{r.randint(10, 99)}.{r.randint(100, 999)}",
        )
    if t == 1:
        return (
            ["ISBN", "book's ISBN"],
            f"978-{r.randint(0, 4)}-{r.randint(100, 999)}-{r.randint(10000, 99999)}-{r.randint(0, 9)}",
        )
    if t == 2:
        return (["booking code", "confirmation code"], letters(r, 6))
    if t == 3:
        return (
            ["source URL", "page we cited"],
            f"https://www.{r.choice(['oecd', 'eurostat', 'who', 'ipcc', 'bis'])}.{r.choice(['org', 'int'])}/{r.choice(['reports', 'data', 'publications'])}/{r.choice(W1)}-{r.choice(W2)}-{r.randint(2019, 2026)}.html",
        )
    if t == 4:
        return (
            ["arXiv id", "preprint"],
            f"arXiv:{r.randint(2001, 2512)}.{r.randint(10000, 29999)}v{r.randint(1, 4)}",
        )
    if t == 5:
        return (
            ["order number", "order id"],
            f"{r.randint(100, 999)}-{r.randint(1000000, 9999999)}-{r.randint(1000000, 9999999)}",
        )
    if t == 6:
        return (
            ["citation key", "Zotero key"],
            f"{r.choice(['smith', 'tanaka', 'okafor', 'novak', 'garcia'])}{r.randint(2010, 2026)}{letters(r, 1).lower()}{mixed(r, 3)}",
        )
    return (["flight number", "flight"], f"{letters(r, 2)} {r.randint(100, 9999)}")


def _res_tech(r):
    return r.choice(
        [
            (
                ["quote", "quotation we keep"],
                r.choice(
                    [
                        "the map is not the territory, but it is the only territory we can argue about",
                        "measurement precedes every meaningful reform",
                        "cities are the sum of their unplanned corners",
                        "trust is built in drops and lost in buckets",
                        "no dataset is neutral once it has a column for gender",
                    ]
                ),
            ),
            (
                ["search query", "query that worked"],
                f'"{r.choice(["heat pump", "microplastic", "tram ridership", "wage floor"])}" AND {r.choice(["meta-analysis", "RCT", "panel data"])} {r.randint(2015, 2024)}..{r.randint(2025, 2026)}'.replace(
                    '"', ""
                ),
            ),
            (["seat", "seat assignment"], f"seat {r.randint(3, 45)}{r.choice('ACDFHK')}"),
            (
                ["fare class", "fare basis"],
                f"{letters(r, 1)}{letters(r, 2)}{r.randint(2, 9)}{letters(r, 2)}",
            ),
        ]
    )


def _res_quant(r):
    return r.choice(
        [
            (
                ["sample size of the study", "number of participants"],
                f"{r.randint(1, 90)},{r.randint(100, 999)} participants",
            ),
            (["effect size", "reported effect"], f"Cohen's d = 0.{r.randint(11, 89)}"),
            (
                ["luggage allowance", "baggage allowance"],
                f"{r.choice([1, 2])} x {r.choice([23, 32])} kg checked",
            ),
            (["page count", "page range"], f"pp. {r.randint(10, 400)}–{r.randint(401, 900)}"),
            (["room size", "hotel room size"], f"{r.randint(18, 60)} m² room"),
            (["stock left", "items in stock"], f"{r.randint(2, 9)} left in stock"),
        ]
    )


def _res_decision(r):
    return r.choice(
        [
            (
                ["booking decision", "which option we picked"],
                f"{r.choice(['the refundable fare', 'the 07:50 train', 'the hotel by the river', 'the flexi rate'])} via {r.choice(['Trainline', 'Booking.com', 'the airline site', 'Expedia'])}",
            ),
            (
                ["scope decision", "inclusion criteria"],
                f"only peer-reviewed studies after {r.randint(2010, 2020)}",
            ),
            (
                ["purchase decision", "model we chose"],
                f"{r.choice(['Sony', 'Fujifilm', 'Lenovo', 'Bosch'])} {letters(r, 2)}-{r.randint(100, 999)} in {r.choice(['graphite', 'silver', 'midnight'])}",
            ),
        ]
    )


def _res_pref(r):
    return r.choice(
        [
            (
                ["flight preference", "flight rule"],
                r.choice(
                    ["no flights before 9", "aisle seat, never middle", "no overnight layovers"]
                ),
            ),
            (
                ["citation style", "style guide"],
                r.choice(["APA 7th edition", "Chicago author-date", "Vancouver numbering"]),
            ),
            (
                ["hotel preference", "accommodation rule"],
                r.choice(
                    ["walking distance to the venue", "no shared bathrooms", "breakfast included"]
                ),
            ),
            (
                ["budget rule", "shopping preference"],
                r.choice(
                    ["refurbished is fine", "ships from the EU only", "no marketplace sellers"]
                ),
            ),
        ]
    )


def _generic(labels, gen):
    return lambda r: (labels, gen(r))


DOMAIN_VALUES = {
    "coding_agent": {
        "identifier": _code_ident,
        "technical": _code_tech,
        "quantity": _code_quant,
        "decision": _code_decision,
        "preference": _code_pref,
        "person": _generic(["reviewer", "module owner", "original author of the change"], g_person),
        "contact": contact_gen("coding_agent"),
        "address": lambda r: (
            (["staging database address", "service address"], g_net_address(r))
            if r.random() < 0.6
            else (["office address for the offsite", "address to ship the YubiKey"], g_address(r))
        ),
        "date": _generic(["release date", "code-freeze date", "deprecation date"], g_date),
        "relative_date": _generic(["deadline for the fix", "when it has to ship"], g_relative),
        "amount": _generic(["CI bill", "bounty amount", "cloud cost estimate"], g_amount),
    },
    "data_analyst_agent": {
        "identifier": _data_ident,
        "technical": _data_tech,
        "quantity": _data_quant,
        "decision": _data_decision,
        "preference": _data_pref,
        "person": _generic(
            ["stakeholder", "person who signs off", "analyst who owns the model"], g_person
        ),
        "contact": contact_gen("data_analyst_agent"),
        "address": _generic(
            ["client's office address", "billing address on the invoice"], g_address
        ),
        "date": _generic(["report due date", "cut-off date", "data freeze date"], g_date),
        "relative_date": _generic(["deadline for the readout", "when they need it"], g_relative),
        "amount": _generic(["revenue figure", "budget number", "average order value"], g_amount),
    },
    "ops_agent": {
        "identifier": _ops_ident,
        "technical": _ops_tech,
        "quantity": _ops_quant,
        "decision": _ops_decision,
        "preference": _ops_pref,
        "person": _generic(
            ["on-call engineer", "incident commander", "secondary on-call"], g_person
        ),
        "contact": contact_gen("ops_agent"),
        "address": lambda r: (
            (["datacenter address", "colo address"], g_address(r))
            if r.random() < 0.5
            else (["endpoint address", "backend address"], g_net_address(r))
        ),
        "date": _generic(
            ["incident start time", "maintenance window date", "certificate expiry"], g_date
        ),
        "relative_date": _generic(["post-mortem date", "follow-up deadline"], g_relative),
        "amount": _generic(["SLA credit", "egress overage cost", "vendor quote"], g_amount),
    },
    "research_assistant_agent": {
        "identifier": _res_ident,
        "technical": _res_tech,
        "quantity": _res_quant,
        "decision": _res_decision,
        "preference": _res_pref,
        "person": _generic(["first author", "author to cite", "host we are meeting"], g_person),
        "contact": contact_gen("research_assistant_agent"),
        "address": _generic(["hotel address", "delivery address", "venue address"], g_address),
        "date": _generic(["departure date", "submission deadline", "check-in date"], g_date),
        "relative_date": _generic(["deadline for the draft", "when to book by"], g_relative),
        "amount": _generic(["price", "total cost", "quoted fare"], g_amount),
    },
}


# ----------------------------------------------------------------------------------
# domain flavour: cases, tools, chatter
# ----------------------------------------------------------------------------------
DOMAIN = {
    "coding_agent": {
        "prefixes": ["bug", "feature", "refactor", "flake", "upgrade"],
        "titles": [
            "the timezone parsing bug",
            "the bulk export feature",
            "the flaky checkout test",
            "the ORM upgrade",
            "the webhook retry storm",
            "the memory leak in the worker",
            "the pagination rewrite",
            "the auth token refresh bug",
            "the CSV import crash",
            "the migration squash",
            "the rate limiter",
            "the i18n plural forms bug",
            "the dead-letter queue handling",
            "the cache stampede",
            "the build speed work",
        ],
        "tools": {
            "read_file": lambda r, t: {
                "path": f"{r.choice(['src', 'lib'])}/{r.choice(W1)}/{r.choice(W2)}.py"
            },
            "run_shell": lambda r, t: {
                "command": r.choice(
                    [
                        "git status --short",
                        "make lint",
                        "docker compose ps",
                        "pip list --outdated",
                        "ls -la migrations/",
                    ]
                )
            },
            "run_tests": lambda r, t: {"target": f"tests/{r.choice(W1)}", "flags": "-x -q"},
            "git_log": lambda r, t: {
                "args": f"--oneline -n {r.randint(10, 40)} -- src/{r.choice(W1)}"
            },
            "git_diff": lambda r, t: {"range": f"HEAD~{r.randint(1, 6)}..HEAD", "stat": False},
            "git_blame": lambda r, t: {
                "path": f"src/{r.choice(W1)}/{r.choice(W2)}.py",
                "lines": f"{r.randint(10, 90)},+{r.randint(5, 30)}",
            },
            "search_code": lambda r, t: {"query": f"def {r.choice(VERBS)}", "glob": "**/*.py"},
            "ci_logs": lambda r, t: {
                "pipeline": f"build-{r.randint(100, 999)}",
                "job": r.choice(["unit", "integration", "lint"]),
            },
        },
        "arg_tools": [
            ("run_shell", "command", "grep -rn '{v}' src tests | head -40"),
            ("search_code", "query", "{v}"),
            ("run_shell", "command", "git log --all --format='%h %an %s' -S '{v}' | head"),
            ("create_note", "text", "{label} for {title}: {v}"),
        ],
        "user_chat": [
            "The staging deploy is still on the old image, so keep that in mind.",
            "I have a standup in twenty minutes so let's be quick.",
            "The linter has been noisy all morning.",
            "Coffee machine is broken again, which explains my mood.",
            "Let's keep the diff small so review is painless.",
            "I would rather not touch the public API in this change.",
            "CI queue times are terrible today.",
            "The pre-commit hooks take forever on this repo.",
            "Half the team is at a conference, so reviews will be slow.",
            "Please don't force-push anything shared.",
            "Mypy is stricter on main than on the release branch, remember.",
            "I'd like the changelog entry to be written by hand, not generated.",
            "The docs build is broken upstream, ignore those warnings.",
            "Keep an eye on the Windows runner, it behaves differently.",
        ],
        "asst_chat": [
            "I will keep the change minimal and stay inside the module boundaries we agreed on.",
            "Running the narrow test selection first keeps the feedback loop short.",
            "I have not modified anything outside the working tree yet.",
            "If the suite turns red for unrelated reasons I will tell you before retrying.",
            "Nothing here needs a schema change as far as I can tell.",
            "I can also add a regression test once the root cause is confirmed.",
            "The lockfile is untouched so far, which keeps the dependency surface stable.",
            "Type checks pass on the files I have opened.",
            "I will avoid reformatting unrelated lines so the diff stays readable.",
            "Where behaviour is ambiguous I will read the call sites before changing a signature.",
            "I would rather confirm with a failing test first than reason about it in the abstract.",
            "The worktree is clean apart from the files we discussed.",
        ],
        "log_words": [
            "gunicorn",
            "alembic",
            "worker",
            "request",
            "handler",
            "db.pool",
            "celery.task",
            "uvicorn",
        ],
    },
    "data_analyst_agent": {
        "prefixes": ["analysis", "dashboard", "report", "experiment", "forecast"],
        "titles": [
            "the churn deep-dive",
            "the Q3 revenue bridge",
            "the pricing experiment readout",
            "the marketing attribution model",
            "the retention dashboard",
            "the LTV forecast",
            "the board deck numbers",
            "the refund anomaly",
            "the funnel drop-off analysis",
            "the cohort clean-up",
            "the supplier spend audit",
            "the NPS driver study",
            "the inventory forecast",
            "the regional sales split",
        ],
        "tools": {
            "run_sql": lambda r, t: {
                "query": f"SELECT {r.choice(['region', 'channel', 'plan_tier'])}, COUNT(*) FROM mart.fct_{r.choice(['orders', 'sessions'])} GROUP BY 1 ORDER BY 2 DESC LIMIT {r.randint(10, 50)}"
            },
            "notebook_cell": lambda r, t: {
                "code": f"df.groupby('{r.choice(['week', 'cohort', 'segment'])}').agg(['mean', 'median', 'count']).tail({r.randint(5, 20)})"
            },
            "describe_table": lambda r, t: {
                "table": f"mart.dim_{r.choice(['customer', 'product', 'region'])}"
            },
            "chart_render": lambda r, t: {
                "spec": {"mark": r.choice(["bar", "line"]), "width": r.randint(400, 900)}
            },
            "catalog_search": lambda r, t: {
                "term": r.choice(["refund", "subscription", "campaign", "invoice"])
            },
        },
        "arg_tools": [
            (
                "run_sql",
                "query",
                "SELECT * FROM information_schema.columns WHERE column_name ILIKE '%{v}%' LIMIT 20",
            ),
            ("notebook_cell", "code", "# {label}\nparams = {{'value': '{v}'}}\nrun(params)"),
            ("catalog_search", "term", "{v}"),
            ("save_note", "text", "{title} — {label}: {v}"),
        ],
        "user_chat": [
            "The exec review got moved, so we have a little slack.",
            "Finance keeps asking for the same numbers in a different cut.",
            "Please don't change the warehouse role, I need it for other work.",
            "My laptop fan sounds like a jet engine running this notebook.",
            "Let's keep the SQL readable, someone else will maintain it.",
            "I'd like the notebook to run top to bottom without manual steps.",
            "The marketing team uses a different definition of active user, careful.",
            "Our fiscal year starts in February, which trips people up.",
            "Please keep personally identifiable columns out of any export.",
            "The dbt run last night was partial, some models are stale.",
            "Legal wants every external number to have a footnote.",
            "I keep getting pinged about the same dashboard tile.",
        ],
        "asst_chat": [
            "I kept the query read-only and scoped it to the analytics schema.",
            "The warehouse credits used so far are modest.",
            "I will note assumptions in a markdown cell so the notebook stays self-explaining.",
            "Sampling is off for this run, so the counts are exact.",
            "I checked the join cardinality before aggregating to avoid fan-out.",
            "Time zones are normalised to UTC before any date truncation.",
            "The partition pruning worked, so the scan stayed small.",
            "I have left the intermediate tables in a scratch schema that expires automatically.",
            "Late-arriving rows could still shift the most recent week slightly.",
            "I am reporting counts alongside rates so small denominators are visible.",
        ],
        "log_words": ["QUERY", "WAREHOUSE", "scan", "bytes", "partition", "rows", "cache"],
    },
    "ops_agent": {
        "prefixes": ["incident", "change", "migration", "capacity", "postmortem"],
        "titles": [
            "the checkout latency incident",
            "the DNS failover drill",
            "the Kafka lag incident",
            "the certificate rotation",
            "the node pool migration",
            "the disk pressure alerts",
            "the Postgres failover",
            "the CDN cache purge problem",
            "the ingress 502s",
            "the cost spike investigation",
            "the backup restore test",
            "the region evacuation",
            "the noisy neighbour problem",
            "the OOM crash loop",
        ],
        "tools": {
            "kubectl": lambda r, t: {
                "args": f"get pods -n {r.choice(['payments', 'ingest', 'auth'])}-prod -o wide"
            },
            "logs_query": lambda r, t: {
                "query": f"severity>=ERROR resource.labels.container_name={r.choice(W1)}",
                "since": f"{r.randint(10, 90)}m",
            },
            "metrics_query": lambda r, t: {
                "promql": f"histogram_quantile(0.99, sum(rate(http_request_duration_seconds_bucket{{job='{r.choice(W1)}'}}[5m])) by (le))"
            },
            "cloud_cli": lambda r, t: {
                "command": r.choice(
                    [
                        "gcloud compute instances list --filter=status=RUNNING",
                        "aws ec2 describe-instances --max-items 20",
                        "az vm list -o table",
                    ]
                )
            },
            "ticket_get": lambda r, t: {
                "queue": r.choice(["SRE", "NETOPS", "DBA"]),
                "limit": r.randint(5, 15),
            },
            "oncall_lookup": lambda r, t: {
                "schedule": r.choice(["platform-primary", "data-secondary", "network"])
            },
        },
        "arg_tools": [
            ("kubectl", "args", "get events -A --field-selector involvedObject.name={v}"),
            ("logs_query", "query", 'textPayload:"{v}"'),
            ("ticket_update", "comment", "{label}: {v} (for {title})"),
            ("cloud_cli", "command", "gcloud logging read '{v}' --limit 50"),
        ],
        "user_chat": [
            "I have been up since three, so be explicit in what you tell me.",
            "Status page is getting questions from customers.",
            "Nobody touch the database without pinging me first.",
            "The pager app keeps logging me out, annoying.",
            "Keep the incident channel tidy please.",
            "We'll do the write-up later, for now just stabilise.",
            "Customer success wants an ETA every thirty minutes.",
            "Our vendor's support portal is down too, naturally.",
            "The dashboards lag by a couple of minutes, don't overreact to spikes.",
            "I'd rather not page the database team unless we must.",
            "The last deploy went out just before lunch.",
            "Let's not restart anything until we understand the pattern.",
        ],
        "asst_chat": [
            "I am only reading state for now; nothing has been restarted by me.",
            "The cluster autoscaler looks healthy in the last few minutes.",
            "I will timestamp what I do in the ticket so the timeline is easy to rebuild.",
            "Error budgets are still within policy for the other services.",
            "No config maps were changed in the last deploy window.",
            "The load balancer health checks are passing in the other zones.",
            "I am correlating with the deploy history before drawing conclusions.",
            "Resource quotas in the namespace are not the limiting factor.",
            "Synthetic probes from outside still show intermittent failures.",
            "I will keep changes reversible until we agree on a direction.",
        ],
        "log_words": [
            "kubelet",
            "ingress-nginx",
            "coredns",
            "etcd",
            "containerd",
            "Warning",
            "Normal",
        ],
    },
    "research_assistant_agent": {
        "prefixes": ["trip", "lit-review", "purchase", "citation", "grant"],
        "titles": [
            "the Lisbon conference trip",
            "the urban heat literature review",
            "the new laptop purchase",
            "the grant application references",
            "the Kyoto fieldwork trip",
            "the camera purchase",
            "the microplastics review",
            "the Warsaw workshop",
            "the book chapter citations",
            "the Zürich site visit",
            "the transit ridership review",
            "the office chair order",
            "the Mumbai partner visit",
            "the replication study",
        ],
        "tools": {
            "web_search": lambda r, t: {
                "q": r.choice(
                    [
                        "heat island mitigation review",
                        "tram ridership elasticity",
                        "microplastics freshwater survey",
                        "best mirrorless camera 2026",
                    ]
                ),
                "num": r.randint(5, 10),
            },
            "fetch_url": lambda r, t: {
                "url": f"https://{r.choice(['scholar.archive.org', 'www.nature.com', 'en.wikipedia.org'])}/{r.choice(W1)}"
            },
            "citations": lambda r, t: {
                "action": "list",
                "collection": r.choice(["thesis", "review", "grant"]),
            },
            "flight_search": lambda r, t: {
                "from": r.choice(["BER", "WAW", "ZRH", "AMS"]),
                "to": r.choice(["LIS", "KIX", "BOM", "MAD"]),
                "passengers": 1,
            },
            "hotel_search": lambda r, t: {
                "city": r.choice(["Lisbon", "Kyoto", "Warsaw", "Zürich"]),
                "nights": r.randint(2, 6),
            },
            "shop_search": lambda r, t: {
                "query": r.choice(["14 inch laptop 32GB", "ergonomic chair", "mirrorless camera"]),
                "sort": "price",
            },
        },
        "arg_tools": [
            ("web_search", "q", "{v}"),
            ("citations", "note", "{label} for {title}: {v}"),
            ("fetch_url", "url", "https://duckduckgo.com/html/?q={v}"),
            ("save_note", "text", "{title} / {label} = {v}"),
        ],
        "user_chat": [
            "I'm on a train with patchy wifi, so bear with me.",
            "My supervisor wants a draft soon, no pressure.",
            "Please keep sources primary where possible.",
            "I'm drinking far too much coffee today.",
            "Let's not spend more than ten minutes on this bit.",
            "I'd like everything logged in the reference manager.",
            "The university proxy keeps timing out on me.",
            "My co-author is picky about how names are transliterated.",
            "Budget is tight this quarter, so compare options properly.",
            "I'd rather read the original than a summary blog post.",
            "The conference site changes its programme every other day.",
            "My passport renewal is still pending, fingers crossed.",
        ],
        "asst_chat": [
            "I am keeping every source in the reference manager as we go.",
            "Prices can move quickly, so I would confirm before paying.",
            "I prefer primary sources over press coverage where both exist.",
            "Nothing has been booked or purchased yet; I only searched.",
            "I will flag anything paywalled so you can request it through the library.",
            "Two of the search hits are duplicates of the same preprint.",
            "Currency conversions use today's mid-market rate, so treat them as estimates.",
            "Reviews on that retailer are mixed, mostly about delivery times.",
            "I am keeping track of which claims come from which source.",
            "Cancellation terms differ a lot between the options I saw.",
        ],
        "log_words": ["result", "snippet", "source", "rank", "cached", "fetched"],
    },
}

ALL_CHAT = [
    "Sorry for the long pause, got pulled into something.",
    "Thanks, that helps a lot.",
    "Let's keep going in the same order as before.",
    "Quick sanity check before we move on.",
    "I'll be away from the keyboard for a bit after this.",
    "Appreciate the careful notes.",
    "I'm juggling two things at once, so keep answers tight.",
    "Back now, my previous call overran.",
    "No rush on this bit.",
    "Let me know if anything looks off to you.",
]


# ----------------------------------------------------------------------------------
# tool output shapes (each embeds (key, value) pairs among realistic noise)
# ----------------------------------------------------------------------------------
def _noise_kv(r, dom, n):
    keys = [
        "status",
        "duration_ms",
        "retries",
        "region_hint",
        "owner_team",
        "shard",
        "build",
        "checksum",
        "updated",
        "phase",
        "attempt",
        "node",
        "queue_depth",
        "cache_hit",
        "trace_id",
        "labels",
    ]
    out = []
    for k in r.sample(keys, n):
        v = r.choice(
            [
                f"{r.randint(2, 9999)}",
                f"{hexs(r, 12)}",
                r.choice(["ok", "pending", "Running", "degraded", "done"]),
                f"{r.choice(W1)}-{r.choice(W2)}",
                f"2026-{r.randint(1, 9):02d}-0{r.randint(1, 9)}T0{r.randint(1, 9)}:1{r.randint(0, 9)}:00Z",
            ]
        )
        out.append((k, v))
    return out


def shape_json(r, dom, embeds):
    pairs = _noise_kv(r, dom, r.randint(8, 12))
    for e in embeds:
        pairs.insert(r.randrange(len(pairs) + 1), e)
    obj = {
        "request_id": hexs(r, 16),
        "result": dict(pairs),
        "meta": {
            "page": 1,
            "page_size": r.randint(20, 100),
            "elapsed": f"{r.randint(12, 900)}ms",
            "notes": "fields not shown are null or unchanged since the previous revision",
        },
    }
    return json.dumps(obj, ensure_ascii=False, indent=2)


def shape_yaml(r, dom, embeds):
    lines = [
        "# generated by the tool, do not edit by hand",
        "apiVersion: v1",
        f"kind: {r.choice(['ConfigMap', 'Record', 'Settings', 'Manifest'])}",
        "metadata:",
        f"  name: {r.choice(W1)}-{r.choice(W2)}",
        f"  generation: {r.randint(2, 90)}",
        "data:",
    ]
    pairs = _noise_kv(r, dom, r.randint(9, 13))
    for e in embeds:
        pairs.insert(r.randrange(len(pairs) + 1), e)
    lines += [f"  {k}: {v}" for k, v in pairs]
    lines += [
        "status:",
        f"  observedGeneration: {r.randint(2, 90)}",
        "  conditions:",
        "  - type: Ready",
        '    status: "True"',
        "    reason: ReconcileSucceeded",
    ]
    return "\n".join(lines)


def shape_log(r, dom, embeds):
    lw = DOMAIN[dom]["log_words"]
    lines = []
    n = r.randint(14, 24)
    pos = {r.randrange(n): e for e in embeds}
    for i in range(n):
        ts = f"2026-11-{r.randint(10, 28)} {r.randint(0, 23):02d}:{r.randint(0, 59):02d}:{r.randint(0, 59):02d}.{r.randint(100, 999)}"
        if i in pos:
            k, v = pos[i]
            lines.append(f"{ts} WARN  [{r.choice(lw)}] {k.replace('_', ' ')} -> {v}")
            continue
        lines.append(
            f"{ts} {r.choice(['INFO ', 'DEBUG', 'INFO '])} [{r.choice(lw)}] {r.choice(['processed', 'scheduled', 'retrying', 'completed', 'received'])} {r.choice(W1)} {r.choice(W2)} id={hexs(r, 8)} took={r.randint(1, 900)}ms"
        )
        if r.random() < 0.12:
            lines += [
                "Traceback (most recent call last):",
                f'  File "/srv/app/{r.choice(W1)}/{r.choice(W2)}.py", line {r.randint(20, 400)}, in {r.choice(VERBS)}',
                f"    return self._{r.choice(W2)}.{r.choice(VERBS)}(payload)",
                f"RuntimeError: transient {r.choice(W1)} failure (will retry, attempt {r.randint(1, 5)})",
            ]
    return "\n".join(lines)


def shape_table(r, dom, embeds):
    cols = ["name", "value", "source", "updated"]
    rows = [
        (k, v, r.choice(["api", "cache", "db", "manual"]), f"{r.randint(1, 28)}d ago")
        for k, v in _noise_kv(r, dom, r.randint(9, 13))
    ]
    for k, v in embeds:
        rows.insert(r.randrange(len(rows) + 1), (k, v, r.choice(["api", "db"]), "just now"))
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    out.append(f"({len(rows)} rows, {r.randint(2, 900)} ms, {r.randint(1, 90)} MB scanned)")
    return "\n".join(out)


def shape_diff(r, dom, embeds):
    f = f"{r.choice(['src', 'config', 'deploy'])}/{r.choice(W1)}/{r.choice(W2)}.{r.choice(['py', 'yaml', 'toml'])}"
    out = [
        f"diff --git a/{f} b/{f}",
        f"index {hexs(r, 7)}..{hexs(r, 7)} 100644",
        f"--- a/{f}",
        f"+++ b/{f}",
        f"@@ -{r.randint(10, 200)},{r.randint(6, 12)} +{r.randint(10, 200)},{r.randint(6, 14)} @@ class {camel(r.choice(W1), r.choice(W2))}:",
    ]
    body = [
        f" {k} = {v!r}" if r.random() < 0.5 else f"-{k} = {v!r}"
        for k, v in _noise_kv(r, dom, r.randint(10, 14))
    ]
    for k, v in embeds:
        body.insert(r.randrange(len(body) + 1), f"+{k} = {v}")
    out += body
    out += [
        " ",
        f" # see the {r.choice(W1)} design note for context; behaviour is unchanged for existing tenants",
        f" def {r.choice(VERBS)}_{r.choice(W1)}(self, payload):",
        "     ...",
    ]
    return "\n".join(out)


def shape_grep(r, dom, embeds):
    out = []
    hits = [
        (
            f"{r.choice(['src', 'docs', 'tests', 'notes'])}/{r.choice(W1)}/{r.choice(W2)}.{r.choice(['py', 'md', 'sql', 'txt'])}",
            r.randint(3, 600),
            f"{k}: {v}",
        )
        for k, v in _noise_kv(r, dom, r.randint(10, 14))
    ]
    for k, v in embeds:
        hits.insert(
            r.randrange(len(hits) + 1),
            (
                f"{r.choice(['src', 'docs', 'notes'])}/{r.choice(W1)}/{r.choice(W2)}.md",
                r.randint(3, 600),
                f"{k}: {v}",
            ),
        )
    out += [f"{p}:{ln}:    {t}" for p, ln, t in hits]
    out.append(
        f"-- {len(hits)} matches in {r.randint(3, 40)} files (searched {r.randint(200, 9000)} files) --"
    )
    return "\n".join(out)


def shape_html(r, dom, embeds):
    rows = [(k, v) for k, v in _noise_kv(r, dom, r.randint(8, 12))]
    for e in embeds:
        rows.insert(r.randrange(len(rows) + 1), e)
    out = [
        "<!doctype html>",
        f'<html lang="{r.choice(["en", "de", "fr", "ja"])}"><head><title>{r.choice(W1).title()} details</title></head><body>',
        '<nav><a href="/">Home</a> › <a href="/results">Results</a></nav>',
        '<main><table class="details">',
    ]
    out += [f"  <tr><th>{k.replace('_', ' ')}</th><td>{v}</td></tr>" for k, v in rows]
    out += [
        "</table>",
        f'<p class="fine-print">Prices and availability may change. Cached {r.randint(2, 59)} minutes ago.</p>',
        "<footer>© 2026 — cookies are used to remember your preferences</footer></main></body></html>",
    ]
    return "\n".join(out)


def shape_pytest(r, dom, embeds):
    n = r.randint(200, 2400)
    out = [
        "============================= test session starts ==============================",
        f"platform linux -- Python 3.11.{r.randint(2, 9)}, pytest-8.{r.randint(0, 3)}.{r.randint(0, 4)}, pluggy-1.5.0",
        f"rootdir: /srv/app, configfile: pyproject.toml, plugins: xdist-3.{r.randint(3, 6)}.0, cov-5.0.0",
        f"collected {n} items",
        "",
    ]
    out += [
        f"tests/{r.choice(W1)}/test_{r.choice(W2)}.py {'.' * r.randint(8, 40)}{r.choice(['', 's', 'x'])}  [{r.randint(1, 99):3d}%]"
        for _ in range(r.randint(4, 8))
    ]
    out += [
        "",
        "=================================== FAILURES ===================================",
        f"____________________ Test{camel(r.choice(W1), r.choice(W2))}.test_{r.choice(VERBS)} ____________________",
        "",
        f"    def test_{r.choice(VERBS)}(self, {r.choice(W1)}_factory):",
        f">       assert result.{r.choice(W2)} == expected",
    ]
    for k, v in embeds:
        out.append(f"E       AssertionError: {k.replace('_', ' ')}: {v}")
    out += [
        f"E       assert {r.randint(2, 99)} == {r.randint(100, 200)}",
        "",
        f"tests/{r.choice(W1)}/conftest.py:{r.randint(10, 200)}: AssertionError",
        "----------------------------- Captured log call ------------------------------",
        f"WARNING  {r.choice(W1)}.{r.choice(W2)}:{r.choice(W2)}.py:{r.randint(10, 300)} slow query ({r.randint(200, 2000)} ms)",
        f"=========== 1 failed, {n - 1 - r.randint(0, 9)} passed, {r.randint(0, 9)} skipped in {r.randint(10, 300)}.{r.randint(10, 99)}s ===========",
    ]
    return "\n".join(out)


def shape_kubectl(r, dom, embeds):
    out = [
        f"Name:             {r.choice(W1)}-{r.choice(W2)}-{hexs(r, 9)}-{hexs(r, 5)}",
        f"Namespace:        {r.choice(['payments', 'ingest', 'search'])}-prod",
        f"Priority:         {r.choice([0, 1000, 100000])}",
        f"Node:             gke-pool-{r.randint(1, 9)}-{hexs(r, 8)}/10.{r.randint(0, 99)}.{r.randint(0, 99)}.{r.randint(2, 99)}",
        f"Start Time:       Sat, {r.randint(10, 28)} Nov 2026 0{r.randint(0, 9)}:{r.randint(10, 59)}:{r.randint(10, 59)} +0000",
        "Labels:           app.kubernetes.io/part-of=platform",
        "Status:           Running",
        "Containers:",
        f"  {r.choice(W1)}:",
        f"    Restart Count:  {r.randint(0, 9)}",
        f"    Limits:         cpu: {r.randint(1, 8)}, memory: {r.choice([512, 1024, 2048])}Mi",
    ]
    for k, v in embeds:
        out.append(f"    {k.replace('_', ' ').title()}:  {v}")
    out += [
        "Conditions:",
        "  Type              Status",
        "  Initialized       True",
        "  Ready             False",
        "Events:",
        "  Type     Reason     Age                 From     Message",
        "  ----     ------     ----                ----     -------",
    ]
    out += [
        f"  {r.choice(['Warning', 'Normal'])}  {r.choice(['BackOff', 'Pulled', 'Unhealthy', 'Killing'])}  {r.randint(1, 59)}m (x{r.randint(2, 40)} over {r.randint(1, 5)}h)  kubelet  {r.choice(['Readiness probe failed: HTTP probe failed with statuscode: 503', 'Back-off restarting failed container', 'Container image already present on machine', 'Stopping container'])}"
        for _ in range(r.randint(4, 7))
    ]
    return "\n".join(out)


def shape_search(r, dom, embeds):
    out = [
        f"About {r.randint(2, 900)},{r.randint(100, 999)} results ({r.randint(10, 90) / 100:.2f} seconds)",
        "",
    ]
    n = r.randint(5, 8)
    pos = {r.randrange(n): e for e in embeds}
    for i in range(n):
        site = r.choice(
            [
                "www.sciencedirect.com",
                "link.springer.com",
                "www.tripadvisor.com",
                "www.idealo.de",
                "www.jstor.org",
                "www.booking.com",
            ]
        )
        out.append(
            f"{i + 1}. {r.choice(W1).title()} and {r.choice(W2)}s: a {r.choice(['systematic review', 'field guide', 'buyer comparison', 'case study'])}"
        )
        out.append(f"   https://{site}/{r.choice(W1)}/{hexs(r, 6)}")
        if i in pos:
            k, v = pos[i]
            out.append(f"   … {k.replace('_', ' ')}: {v} … updated {r.randint(2, 28)} days ago")
        else:
            out.append(
                f"   … we examine {r.choice(W1)} {r.choice(W2)} outcomes across {r.randint(3, 40)} sites and find mixed evidence …"
            )
    return "\n".join(out)


def shape_sqlres(r, dom, embeds):
    out = [
        f"Query {hexs(r, 8)} finished: {r.randint(1, 60)}.{r.randint(1, 9)}s elapsed, {r.randint(1, 900)} MB processed, warehouse ANALYTICS_{r.choice(['XS', 'S', 'M'])}",
        "",
        "metric                         | value                          | as_of",
        "-------------------------------+--------------------------------+-----------",
    ]
    rows = [
        (
            f"{r.choice(['orders', 'sessions', 'refunds', 'signups'])}_{r.choice(['total', 'p50', 'share', 'delta'])}",
            f"{r.randint(1, 99999)}",
            f"2026-{r.randint(1, 11):02d}-{r.randint(10, 28)}",
        )
        for _ in range(r.randint(8, 12))
    ]
    for k, v in embeds:
        rows.insert(
            r.randrange(len(rows) + 1), (k, v, f"2026-{r.randint(1, 11):02d}-{r.randint(10, 28)}")
        )
    out += [f"{a:<31}| {b:<31}| {c}" for a, b, c in rows]
    out.append(f"({len(rows)} rows)")
    return "\n".join(out)


SHAPES = [shape_json, shape_yaml, shape_log, shape_table, shape_diff, shape_grep, shape_html]
DOMAIN_SHAPES = {
    "coding_agent": [
        shape_log,
        shape_diff,
        shape_grep,
        shape_json,
        shape_yaml,
        shape_pytest,
        shape_pytest,
    ],
    "data_analyst_agent": [
        shape_table,
        shape_sqlres,
        shape_sqlres,
        shape_json,
        shape_log,
        shape_yaml,
    ],
    "ops_agent": [shape_log, shape_yaml, shape_json, shape_table, shape_kubectl, shape_kubectl],
    "research_assistant_agent": [
        shape_html,
        shape_json,
        shape_table,
        shape_search,
        shape_search,
        shape_grep,
    ],
}


# the shapes a given tool plausibly returns (tools not listed use the domain's mix)
TOOL_SHAPES = {
    "read_file": [shape_yaml, shape_json, shape_diff],
    "run_shell": [shape_log, shape_grep, shape_table],
    "run_tests": [shape_pytest],
    "git_log": [shape_grep, shape_log],
    "git_diff": [shape_diff],
    "git_blame": [shape_grep],
    "search_code": [shape_grep],
    "ci_logs": [shape_log, shape_pytest],
    "create_note": [shape_json],
    "run_sql": [shape_sqlres, shape_table],
    "notebook_cell": [shape_table, shape_sqlres, shape_log],
    "describe_table": [shape_table, shape_yaml],
    "chart_render": [shape_json, shape_yaml],
    "catalog_search": [shape_json, shape_table],
    "save_note": [shape_json],
    "kubectl": [shape_kubectl, shape_yaml, shape_table],
    "logs_query": [shape_log],
    "metrics_query": [shape_json, shape_table],
    "cloud_cli": [shape_table, shape_json],
    "ticket_get": [shape_json, shape_table],
    "ticket_update": [shape_json],
    "oncall_lookup": [shape_table, shape_json],
    "web_search": [shape_search],
    "fetch_url": [shape_html],
    "citations": [shape_json, shape_table],
    "flight_search": [shape_table, shape_json, shape_html],
    "hotel_search": [shape_html, shape_table, shape_json],
    "shop_search": [shape_html, shape_search, shape_table],
}


def tool_output(r, dom, embeds, name=None):
    out = r.choice(TOOL_SHAPES.get(name) or DOMAIN_SHAPES[dom])(r, dom, embeds)
    while words(out) < 60:
        out += "\n" + shape_log(r, dom, [])
    return out


# ----------------------------------------------------------------------------------
# phrasings (never contain a fact value except through {v})
# ----------------------------------------------------------------------------------
U_STATE = [
    "For {title}: the {label} is {v}. Please keep that in mind.",
    "Noting this for {title} — {label}: {v}.",
    "Quick context on {title}. The {label} is {v}, I double-checked this morning.",
    "Heads up regarding {title}, {label} = {v}.",
    "Okay, on {title} we're going with {v} as the {label}.",
    "{title}: {v}. That's the {label}, write it down somewhere.",
    "Got word from the team about {title}; the {label} is {v}.",
    "Just so you have it: {label} for {title} -> {v}.",
    "Re {title}, {v} is the {label} we're using.",
    "Can you remember this for {title}? {label}: {v}. Thanks.",
    "Before I forget — {title}, {label}, {v}.",
    "Small detail for {title} that matters later: the {label} is {v}.",
    "FYI the {label} on {title} is {v}, it came up in the hallway.",
    "So the answer on the {label} for {title} is {v}, straight from the source.",
]
U_STATE_KIND = {
    "person": [
        "For {title}, {v} is the {label} — loop them in when it matters.",
        "{v} said they'd take it; so for {title} that's our {label}.",
        "Talked to {v} just now. They're the {label} on {title}.",
    ],
    "date": [
        "The {label} for {title} is {v}, no slack on that.",
        "Calendar note for {title}: {v} is the {label}.",
        "They confirmed {v} as the {label} on {title}.",
    ],
    "relative_date": [
        "We need {title} wrapped {v} — that's the {label}.",
        "Timing on {title}: {label} is {v}, per my manager.",
        "Word from upstairs: {v} for {title}. Treat that as the {label}.",
    ],
    "amount": [
        "Money side of {title}: {v}. That's the {label}.",
        "The {label} on {title} came in at {v}.",
        "Finance quoted {v} as the {label} for {title}.",
    ],
    "contact": [
        "If you need to reach anyone about {title}, the {label} is {v}.",
        "Saving this for {title}: {label} {v}.",
    ],
    "address": [
        "The {label} for {title} is {v}. Make sure any paperwork uses exactly that.",
        "Location detail for {title}: {v} ({label}).",
    ],
    "decision": [
        "We decided on {title}: {v}. That's the {label}, final.",
        "After the call, the {label} for {title} is {v}.",
        "Team agreed — {v}. Log it as the {label} on {title}.",
    ],
    "preference": [
        "For {title}, my preference is {v}; that's the {label}.",
        "Small thing but it matters for {title}: {v}. Call it the {label}.",
        "Please stick to {v} for {title} — that's my {label}.",
    ],
    "quantity": [
        "I measured it myself for {title}: {v} ({label}).",
        "The {label} on {title} is {v}, roughly stable over the week.",
    ],
    "identifier": [
        "The {label} for {title} is {v} — copy it exactly.",
        "Reference for {title}: {v}. That's the {label}.",
    ],
    "technical": [
        "On {title}, the {label} is {v}. Don't paraphrase it.",
        "Technical detail for {title}: {label} is {v}.",
    ],
}
A_ACK = [
    "Noted — I'll treat that as the {label} for {title} from here on and reference it when we get to the next step.",
    "Got it. I've recorded the {label} for {title} in my working notes so we don't have to look it up again.",
    "Thanks, that settles the {label} question for {title}. I'll build on it rather than re-deriving it.",
    "Understood. The {label} you gave for {title} is now the one I'll use in commands and summaries.",
    "Perfect, that's the missing piece on {title}. I'll keep the {label} handy.",
    "Thanks. I'll use that {label} for {title} verbatim rather than paraphrasing it.",
    "Recorded against {title}. If a tool output disagrees with that {label}, I'll raise it with you before acting.",
    "Good to know. That changes how I'd sequence the work on {title}, now that the {label} is fixed.",
    "Okay. I'll carry the {label} for {title} forward and flag it if anything contradicts it.",
]
U_ASK_ASST = [
    "For {title}, what would you propose as the {label}? Use your judgement.",
    "Can you work out the {label} for {title} from what we know so far?",
    "I need a {label} for {title}. What do you suggest?",
    "Thinking about {title} — what should the {label} be, in your view?",
    "Pick a sensible {label} for {title}, I trust you on this one.",
    "You've seen more of the details than me — suggest the {label} for {title}.",
    "What {label} would you go with on {title}? Give me one concrete answer.",
]
A_STATE = [
    "Based on everything so far, I'd go with {v} as the {label} for {title}.",
    "My recommendation for the {label} on {title} is {v}; it fits the constraints we discussed.",
    "From the earlier context, the {label} for {title} works out to {v}.",
    "I'd set the {label} for {title} to {v}. If that doesn't suit, tell me and I'll revise.",
    "Let's use {v} — that's the {label} I'd commit to for {title}.",
    "Concretely: {v}. That's my pick for the {label} on {title}, and I can explain the trade-offs if useful.",
    "I'd propose {v} for the {label} on {title}. It's the least risky option given what we know.",
]
U_ASK_TOOL = [
    "Can you check the {label} for {title}? Look it up with the tools rather than guessing.",
    "Please dig into {title} and find out the {label}.",
    "I need the {label} for {title}. Pull it from the system.",
    "Could you look up {title} and tell me what the {label} is?",
    "Run whatever you need to find the {label} on {title}.",
    "Let's get facts, not memory: fetch the {label} for {title}.",
    "Next on {title}: find the {label} please.",
    "Check the live system for {title} — I want the actual {label}, not what the docs say.",
    "Can you confirm the {label} on {title} from the source of truth?",
    "Have a look at {title}; I'm after the {label}.",
]
A_CALL = [
    "I'll query the relevant source to find the {label} for {title}, then summarise what comes back.",
    "Let me run the tool against {title} so we have the {label} from the system itself.",
    "Checking now. I'll pull the raw output for {title} and look for the {label} in it.",
    "I'll start with the most direct lookup for {title}; the {label} should be in there somewhere.",
    "Running the lookup for {title}. Once the output is back I'll point out the {label}.",
]
A_AFTER_TOOL = [
    "The output above has the {label} for {title} — it's the {key} entry. Everything else in there looks routine.",
    "Found it: the {key} line in that output is the {label} for {title}. The surrounding entries are noise.",
    "That's what we needed. The {label} for {title} is listed under {key}; I'll work from that.",
    "The lookup worked. See the {key} field for the {label} on {title}; nothing else stood out.",
]
U_ASK_ARGS = [
    "For {title}, please record the {label} you settle on and run the check with it.",
    "Go ahead and set up the {label} for {title} yourself, then run it.",
    "On {title}: decide the {label} and put it straight into the tool call.",
    "Let the tools carry it — choose the {label} for {title} and execute.",
    "I don't have the {label} for {title} handy; pick it from context and run the command.",
]
A_CALL_ARGS = [
    "I'll use the {label} for {title} directly in the call below, so it's on record in the tool history.",
    "Setting the {label} for {title} in this call; the arguments carry the exact value.",
    "Running it with the {label} for {title} baked into the arguments.",
    "I'll pass the {label} for {title} as the argument here and then check the result.",
]
A_AFTER_ARGS = [
    "The call went through cleanly. The {label} for {title} is now in the tool history exactly as passed.",
    "Done — the tool accepted the {label} for {title}; the output above shows the surrounding state.",
    "That ran without errors. I'll keep using the same {label} for {title} unless you change it.",
]
U_CORRECT = [
    "Change of plan on {title}: the {label} is now {v}.",
    "Correction for {title} — scratch the earlier {label}, it's {v}.",
    "They changed things on {title}, so the {label} is {v} from now on.",
    "Update: the {label} for {title} moved to {v}.",
    "Ignore what we had as the {label} for {title}; use {v} instead.",
    "Turns out I was wrong about the {label} on {title}. It's actually {v}.",
    "New info on {title}. Replace the {label} with {v}.",
    "Heads-up, {title} got reshuffled: {label} is {v} now, the old one is dead.",
    "Please overwrite the {label} for {title} — the new one is {v}.",
    "Reassigned/renamed as of this morning on {title}: the {label} is {v}.",
    "Small but important change on {title}: {label} should read {v} now.",
    "Forget the old {label} for {title}. Going forward it's {v}.",
]
A_CORRECT_ACK = [
    "Understood, I've dropped the previous {label} for {title} and switched to the new one everywhere I track it.",
    "Thanks for catching that. The {label} on {title} is updated in my notes; the old value is retired.",
    "Okay, replacing the {label} for {title}. I'll double-check anything that relied on the old one.",
]
U_PROBE = [
    "What was the {label} for {title} again?",
    "Remind me — the {label} on {title}, what did we have?",
    "I lost track: which {label} did we end up with for {title}?",
    "Quick one, what's the {label} for {title}? I need it for a message.",
    "Sorry, can you repeat the {label} for {title}?",
    "Do you still have the {label} from {title}? I can't find it in my notes.",
    "Remind me of the {label} we noted for {title}, please.",
    "Need to fill in a form: what's the {label} on {title}?",
    "Which {label} are we using for {title} at this point?",
    "Before I reply to this thread — what's the {label} for {title}?",
    "Can you pull up the {label} on {title} for me?",
    "What did we settle on as the {label} for {title}?",
]
A_PROBE = [
    "The {label} for {title} is {v}.",
    "It's {v} — that's the {label} we have for {title}.",
    "For {title}, the {label} is {v}, unchanged since we recorded it.",
    "You're looking for {v}; that's the current {label} on {title}.",
    "That would be {v}. It's the {label} we recorded for {title} and nothing has replaced it since.",
    "{v} is the {label} on {title}, as far as my notes go.",
]
U_CLOSE = {
    "coding_agent": [
        "{title} ({cid}): that one's done, merged.",
        "We can close {title}, the fix shipped.",
        "Mark {cid} as finished, it's merged and deployed.",
        "{title} is wrapped up — PR merged, branch deleted.",
    ],
    "data_analyst_agent": [
        "{title} is delivered, we can close it.",
        "Stakeholders signed off on {title} ({cid}); close it out.",
        "Consider {cid} finished, the numbers went out.",
        "We're done with {title}, archive it.",
    ],
    "ops_agent": [
        "Incident resolved, close out {title}.",
        "{cid} is mitigated and verified — close it.",
        "All green on {title}, we can resolve it.",
        "Closing {title}; monitoring has been quiet for hours.",
    ],
    "research_assistant_agent": [
        "{title} is all booked, consider it finished.",
        "That's settled — close {cid}.",
        "{title} is done, everything is in the reference manager.",
        "We can drop {title} from the list, it's complete.",
    ],
}
U_CLOSE_GEN = [
    "Let's wrap up {title}, nothing more to do there.",
    "Mark {title} as closed please.",
    "{title} can come off the board.",
    "I'm calling {title} done.",
]
A_CLOSE = [
    "Closed. I've moved {title} out of the active list and won't bring it up again unless you reopen it.",
    "Done — {title} is marked finished; I'll stop tracking its details as open items.",
    "Great, {title} is closed. That leaves fewer things in flight.",
]
U_FILLER = [
    "Where are we on {title}?",
    "Any concerns about {title} before we continue?",
    "Let's pause on {title} for a second and think about risk.",
    "How confident are you about the approach on {title}?",
    "Is there anything blocking {title} right now?",
    "Can you summarise where {title} stands, briefly?",
    "What's the next step on {title}?",
    "I'm writing a status update; anything to say about {title}?",
    "Are we overcomplicating {title}, do you think?",
    "If we had to hand {title} to someone else today, what would they need?",
    "Has anything changed on {title} since we last looked?",
    "I want a gut check on {title} before I report upward.",
]
A_FILLER = [
    "On {title}, the main open question is sequencing: I'd finish the investigation before changing anything.",
    "{title} is progressing; nothing new has surfaced since the last check and I don't see blockers.",
    "For {title} I'm reasonably confident, though I'd like one more confirming data point before calling it.",
    "The risk on {title} is mostly in coordination rather than the change itself.",
    "Next on {title} I would verify our assumption and then write up what we found.",
    "For a status update on {title}: investigation is ongoing, the direction is clear, and there's no customer-visible change yet.",
    "I don't think {title} is overcomplicated; most of the effort is in verifying rather than building.",
    "A handover of {title} would need the notes we've collected plus a short summary of the remaining open questions.",
    "Nothing material has changed on {title}; the open questions are the same as before.",
    "My gut says {title} is on track, with the usual caveat that verification can still surprise us.",
]
U_SMALL = [
    "Completely unrelated, but the weather is finally decent today.",
    "I'm taking a short break, back in a minute.",
    "Do you think long meetings ever produce anything useful?",
    "My cat just walked across the keyboard, ignore any typos.",
    "Lunch was excellent, I'm in a better mood now.",
    "Random question: do you prefer long or short status updates?",
    "My headphones died mid-call, what a day.",
    "Someone is drilling next door, sorry if I'm terse.",
    "Weekend plans are mostly sleeping, honestly.",
]
A_SMALL = [
    "Enjoy the break; I'll keep the open items where they are so we can pick up without losing context.",
    "No problem at all. When you're back we can continue with whichever open item is most urgent.",
    "Sounds good. Nothing is running in the background, so there's no rush on my side.",
    "Short updates with a clear next step usually work best; details can live in the linked notes.",
    "That sounds frustrating. I'll keep my answers compact so they're easy to skim.",
    "Rest sounds well deserved. I'll keep our open items tidy in the meantime.",
]
U_CHECK = [
    "Can you run a quick check on {title}?",
    "Run the usual diagnostics for {title}, nothing specific.",
    "Take a look at the current state of {title} with the tools.",
]
A_CHECK_CALL = [
    "Running a general check on {title} now; I'm not looking for anything specific yet.",
    "I'll take a snapshot of the current state for {title}.",
]
A_CHECK_AFTER = [
    "Nothing unusual in that output for {title}; values look in line with what we'd expect.",
    "That snapshot for {title} is unremarkable. No new leads, which is itself useful to know.",
]


def pad(r, text, pool, lo, hi):
    pool = list(pool)
    r.shuffle(pool)
    i = 0
    while words(text) < lo:
        text += " " + pool[i % len(pool)]
        i += 1
    assert words(text) <= hi, text
    return text


def slug(label):
    return "_".join(
        w for w in "".join(c if c.isalnum() or c == " " else " " for c in label).lower().split()
    )[:40]


class Builder:
    def __init__(self, r, dom):
        self.r, self.dom, self.msgs = r, dom, []
        self.D = DOMAIN[dom]
        self.ncall = 0

    def fmt(self, tpl, **kw):
        s = tpl.format(**kw)
        return s[0].upper() + s[1:]

    def user(self, text):
        r = self.r
        self.msgs.append(
            {
                "role": "user",
                "content": pad(r, text, self.D["user_chat"] + ALL_CHAT, 15 + r.randint(0, 12), 120),
            }
        )
        return len(self.msgs) - 1

    def asst(self, text, calls=None):
        r = self.r
        m = {
            "role": "assistant",
            "content": pad(r, text, self.D["asst_chat"], 40 + r.randint(0, 25), 250),
        }
        if calls:
            m["tool_calls"] = calls
        self.msgs.append(m)
        return len(self.msgs) - 1

    def call(self, name, args):
        self.ncall += 1
        return {
            "id": f"call_{self.ncall:03d}_{hexs(self.r, 6)}",
            "name": name,
            "arguments": json.dumps(args, ensure_ascii=False),
        }

    def tool(self, call, content):
        self.msgs.append({"role": "tool", "tool_call_id": call["id"], "content": content})
        return len(self.msgs) - 1

    def random_call(self, title):
        name = self.r.choice(sorted(self.D["tools"]))
        return self.call(name, self.D["tools"][name](self.r, title))

    # ----- blocks
    def filler(self, titles, size=None):
        r = self.r
        size = size or r.choice([2, 2, 2, 4, 4, 5])
        title = r.choice(titles) if titles else "the backlog"
        if size == 2:
            if r.random() < 0.25:
                self.user(r.choice(U_SMALL))
                self.asst(r.choice(A_SMALL))
            else:
                self.user(self.fmt(r.choice(U_FILLER), title=title))
                self.asst(self.fmt(r.choice(A_FILLER), title=title))
            return
        self.user(self.fmt(r.choice(U_CHECK), title=title))
        calls = [self.random_call(title) for _ in range(size - 3)]
        self.asst(self.fmt(r.choice(A_CHECK_CALL), title=title), calls)
        for c in calls:
            self.tool(c, tool_output(r, self.dom, [], c["name"]))
        self.asst(self.fmt(r.choice(A_CHECK_AFTER), title=title))

    def intro(self, f, title):
        r, v, label = self.r, f["value"], f["label"]
        src = f["source"]
        if src == "user":
            pool = U_STATE + U_STATE_KIND.get(f["kind"], []) * 2
            i = self.user(self.fmt(r.choice(pool), title=title, label=label, v=v))
            self.asst(self.fmt(r.choice(A_ACK), title=title, label=label))
            return i
        if src == "assistant":
            self.user(self.fmt(r.choice(U_ASK_ASST), title=title, label=label))
            return self.asst(self.fmt(r.choice(A_STATE), title=title, label=label, v=v))
        if src == "tool_output":
            self.user(self.fmt(r.choice(U_ASK_TOOL), title=title, label=label))
            calls = [self.random_call(title) for _ in range(r.choice([1, 1, 2]))]
            hit = r.randrange(len(calls))
            pref = KIND_TOOLS[self.dom].get(f["kind"])
            if pref and r.random() < 0.7:
                name = r.choice(pref)
                calls[hit] = self.call(name, self.D["tools"][name](r, title))
            self.asst(self.fmt(r.choice(A_CALL), title=title, label=label), calls)
            key = slug(label)
            idx = None
            for j, c in enumerate(calls):
                t = self.tool(
                    c, tool_output(r, self.dom, [(key, v)] if j == hit else [], c["name"])
                )
                if j == hit:
                    idx = t
            self.asst(self.fmt(r.choice(A_AFTER_TOOL), title=title, label=label, key=key))
            return idx
        # tool_args
        self.user(self.fmt(r.choice(U_ASK_ARGS), title=title, label=label))
        name, argk, tpl = r.choice(self.D["arg_tools"])
        c = self.call(name, {argk: tpl.format(v=v, label=label, title=title), "case": f["case"]})
        i = self.asst(self.fmt(r.choice(A_CALL_ARGS), title=title, label=label), [c])
        self.tool(c, tool_output(r, self.dom, [], c["name"]))
        self.asst(self.fmt(r.choice(A_AFTER_ARGS), title=title, label=label))
        return i

    def correct(self, f, title):
        r = self.r
        i = self.user(self.fmt(r.choice(U_CORRECT), title=title, label=f["label"], v=f["value"]))
        self.asst(self.fmt(r.choice(A_CORRECT_ACK), title=title, label=f["label"]))
        return i

    def probe(self, f, title):
        r = self.r
        i = self.user(self.fmt(r.choice(U_PROBE), title=title, label=f["label"]))
        self.asst(self.fmt(r.choice(A_PROBE), title=title, label=f["label"], v=f["value"]))
        return i

    def close(self, cid, title):
        r = self.r
        i = self.user(self.fmt(r.choice(U_CLOSE[self.dom] + U_CLOSE_GEN), title=title, cid=cid))
        self.asst(self.fmt(r.choice(A_CLOSE), title=title))
        return i


# ----------------------------------------------------------------------------------
# planning
# ----------------------------------------------------------------------------------
SOURCE_W = {"user": 25, "assistant": 12, "tool_output": 43, "tool_args": 20}
PROFILE_LABELS = {
    "person": ["manager I report to", "person to cc on everything"],
    "contact": ["best way to reach me", "contact for me when I'm away"],
    "address": ["office address I work from", "home address for deliveries"],
}


PROFILE_TITLE = {
    "coding_agent": "this repo in general",
    "data_analyst_agent": "all my analyses",
    "ops_agent": "the on-call rotation in general",
    "research_assistant_agent": "all my projects",
}


ASSISTANT_KINDS = {
    "decision",
    "technical",
    "identifier",
    "relative_date",
    "amount",
    "quantity",
    "preference",
}
# which tools plausibly return a fact of a kind (used 70% of the time for tool-output facts)
KIND_TOOLS = {
    "coding_agent": {
        "identifier": ["run_tests", "git_log", "git_blame", "search_code", "ci_logs"],
        "technical": ["ci_logs", "run_tests", "read_file"],
        "quantity": ["run_tests", "ci_logs"],
        "person": ["git_blame", "git_log"],
        "date": ["git_log", "read_file"],
        "address": ["read_file", "run_shell"],
    },
    "data_analyst_agent": {
        "quantity": ["run_sql", "notebook_cell"],
        "amount": ["run_sql", "notebook_cell"],
        "identifier": ["catalog_search", "describe_table"],
        "technical": ["notebook_cell", "chart_render"],
        "person": ["catalog_search"],
        "contact": ["catalog_search"],
    },
    "ops_agent": {
        "person": ["oncall_lookup"],
        "contact": ["oncall_lookup"],
        "identifier": ["kubectl", "ticket_get", "logs_query"],
        "technical": ["kubectl", "logs_query", "cloud_cli"],
        "quantity": ["metrics_query"],
        "date": ["ticket_get", "logs_query"],
    },
    "research_assistant_agent": {
        "amount": ["flight_search", "hotel_search", "shop_search"],
        "address": ["hotel_search", "fetch_url"],
        "identifier": ["citations", "web_search", "flight_search"],
        "person": ["citations", "fetch_url"],
        "quantity": ["fetch_url", "shop_search"],
        "date": ["flight_search", "hotel_search"],
    },
}


class Plan(Exception):
    pass


def case_prefix(dom, title):
    for words_, prefix in PREFIX_RULES[dom]:
        if any(w in title for w in words_):
            return prefix
    return DOMAIN[dom]["prefixes"][0]


PREFIX_RULES = {
    "coding_agent": [
        (["flaky"], "flake"),
        (["bug", "crash", "leak", "storm", "stampede"], "bug"),
        (["upgrade", "squash"], "upgrade"),
        (["feature", "rewrite", "limiter"], "feature"),
        (["handling", "speed"], "refactor"),
    ],
    "data_analyst_agent": [
        (["experiment"], "experiment"),
        (["dashboard"], "dashboard"),
        (["forecast"], "forecast"),
        (["deck", "bridge", "audit", "split"], "report"),
    ],
    "ops_agent": [
        (["migration", "evacuation"], "migration"),
        (["rotation", "drill", "restore", "failover"], "change"),
        (["neighbour", "cost"], "capacity"),
        (["incident", "alerts", "502s", "loop", "problem"], "incident"),
    ],
    "research_assistant_agent": [
        (["trip", "visit", "workshop"], "trip"),
        (["purchase", "order"], "purchase"),
        (["citations", "references"], "citation"),
        (["review", "study"], "lit-review"),
    ],
}
# research sub-types that only make sense for some kinds of matter (first label -> prefixes)
AFFINITY = {
    "research_assistant_agent": {
        "trip": [
            "booking code",
            "flight",
            "seat",
            "fare class",
            "luggage allowance",
            "room size",
            "booking decision",
            "flight preference",
            "hotel preference",
        ],
        "purchase": ["order number", "stock left", "purchase decision", "budget rule"],
        "lit-review citation": [
            "DOI",
            "ISBN",
            "source URL",
            "arXiv id",
            "citation key",
            "quote",
            "sample size of the study",
            "effect size",
            "page count",
            "scope decision",
            "citation style",
        ],
    },
}


def fits(dom, prefix, labels):
    for prefixes, heads in AFFINITY.get(dom, {}).items():
        if any(labels[0].startswith(h) for h in heads):
            return prefix is None or prefix in prefixes.split()
    return True


def new_value(r, dom, kind, used, want_labels=None, prefix=None):
    gen = DOMAIN_VALUES[dom][kind]
    fallback = None
    for _ in range(400):
        labels, v = gen(r)
        n = norm(v)
        if any(n in u or u in n for u in used):
            continue
        if want_labels is None and not fits(dom, prefix, labels):
            continue
        if want_labels is None or labels == want_labels:
            used.append(n)
            return labels, v
        fallback = fallback or (labels, v)
    if fallback is None:
        raise Plan(f"no value for {kind}")
    used.append(norm(fallback[1]))
    return fallback


def build_once(dom, seed, split, r):
    used = []
    D = DOMAIN[dom]
    n_cases = r.randint(8, 12)
    titles = r.sample(D["titles"], n_cases)
    counters = {}
    cases = []
    for t in titles:
        p = case_prefix(dom, t)
        counters[p] = counters.get(p, 0) + 1
        cases.append({"id": f"{p}-{counters[p]}", "title": t})
    profile = {"id": "profile", "title": PROFILE_TITLE[dom]}

    facts = []

    def add(case, kind, target, source=None, labels=None):
        pre = None if case is profile else case["id"].rsplit("-", 1)[0]
        lbls, v = new_value(r, dom, kind, used, labels, pre)
        if case is profile and kind in PROFILE_LABELS and labels is None:
            lbls = PROFILE_LABELS[kind]
        if source is None:
            w = dict(SOURCE_W)
            if kind == "preference":
                w = {"user": 60, "assistant": 10, "tool_output": 15, "tool_args": 15}
            source = r.choices(list(w), list(w.values()))[0]
            if source == "assistant" and kind not in ASSISTANT_KINDS:
                source = "tool_output"
        f = {
            "kind": kind,
            "case": case["id"],
            "title": case["title"],
            "value": v,
            "labels": lbls,
            "label": r.choice(lbls) if labels is None else None,
            "source": source,
            "target": target,
            "end": None,
            "correct_at": None,
        }
        facts.append(f)
        return f

    # profile: standing facts
    extra = r.sample(["address", "preference", "contact"], r.randint(1, 2))
    for k in ["person", "contact", "preference", *extra]:
        add(
            profile,
            k,
            r.randint(0, 90),
            source=r.choice(["user", "user", "tool_output", "tool_args"]),
        )
    case_kinds = [
        *KINDS,
        "identifier",
        "technical",
        "quantity",
        "identifier",
        "decision",
        "date",
    ]
    closed = set(r.sample(range(n_cases), round(0.7 * n_cases)))
    starts = sorted(r.uniform(4, 250) for _ in range(n_cases))
    close_events = []
    for ci, c in enumerate(cases):
        t = starts[ci]
        nf = r.randint(3, 7)
        last = t
        for _ in range(nf):
            add(c, r.choice(case_kinds), int(t))
            last = t
            t += r.uniform(4, 26)
        end = 480
        if ci in closed:
            end = min(470, int(last + r.uniform(45, 190)))
            close_events.append((end, c))
        for f in facts:
            if f["case"] == c["id"]:
                f["end"] = end
    for f in facts:
        if f["end"] is None:
            f["end"] = 495
    # every kind present
    present = {f["kind"] for f in facts}
    for k in KINDS:
        if k not in present:
            kinds_count = {}
            for f in facts:
                kinds_count[f["kind"]] = kinds_count.get(f["kind"], 0) + 1
            cand = [f for f in facts if f["case"] != "profile" and kinds_count[f["kind"]] > 1]
            f = r.choice(cand)
            used.remove(norm(f["value"]))
            f["kind"] = k
            f["labels"], f["value"] = new_value(r, dom, k, used, None, f["case"].rsplit("-", 1)[0])
            f["label"] = r.choice(f["labels"])
    # tool share among originals, leaving room for user-stated corrections
    orig = list(facts)
    while sum(f["source"] in TOOL_SOURCES for f in orig) < 0.5 * (len(orig) + 8):
        r.choice([f for f in orig if f["source"] not in TOOL_SOURCES])["source"] = r.choice(
            TOOL_SOURCES
        )

    # corrections
    n_corr = r.randint(6, 8)
    cand = [f for f in orig if f["end"] - f["target"] >= 60]
    if len(cand) < n_corr:
        raise Plan("few correction candidates")
    corrections = []
    for f in r.sample(cand, n_corr):
        at = r.randint(f["target"] + 22, f["end"] - 20)
        f["correct_at"] = at
        case = profile if f["case"] == "profile" else next(c for c in cases if c["id"] == f["case"])
        nf = add(case, f["kind"], at, source="user", labels=f["labels"])
        nf["label"] = f["label"]
        nf["end"] = f["end"]
        corrections.append((at, f, nf))
    # probes
    n_probe = r.randint(8, 12)
    cand = []
    for f in facts:
        wend = f["correct_at"] if f["correct_at"] is not None else f["end"]
        if wend - f["target"] >= 95:
            cand.append((f, wend))
    if len(cand) < n_probe:
        raise Plan("few probe candidates")
    probes = []
    for f, wend in r.sample(cand, n_probe):
        probes.append((r.randint(f["target"] + 68, wend - 14), f))

    events = []
    corr_new = {id(nf) for _, _, nf in corrections}
    for f in facts:
        if id(f) not in corr_new:
            events.append((f["target"], 0, "intro", f))
    for at, f, nf in corrections:
        events.append((at, 1, "correct", (f, nf)))
    for at, f in probes:
        events.append((at, 2, "probe", f))
    for at, c in close_events:
        events.append((at, 3, "close", c))
    events.sort(key=lambda e: (e[0], e[1]))

    b = Builder(r, dom)
    open_titles = set()
    probe_out = []
    closed_cases = set()
    for target, _, typ, payload in events:
        while len(b.msgs) + 1 < target:
            b.filler(sorted(open_titles))
        if typ == "intro":
            f = payload
            f["introduced_at"] = b.intro(f, f["title"])
            if f["case"] != "profile":
                open_titles.add(f["title"])
        elif typ == "correct":
            f, nf = payload
            if "introduced_at" not in f:
                raise Plan("correction before intro")
            nf["introduced_at"] = b.correct(nf, nf["title"])
            f["superseded_at"] = nf["introduced_at"]
            f["superseded_by"] = nf
        elif typ == "probe":
            f = payload
            if (
                "introduced_at" not in f
                or f.get("superseded_at") is not None
                or f["case"] in closed_cases
            ):
                raise Plan("probe on a non-open fact")
            while len(b.msgs) - f["introduced_at"] < 60:
                b.filler(sorted(open_titles))
            probe_out.append({"at": b.probe(f, f["title"]), "fact_id": None, "_f": f})
        else:
            c = payload
            at = b.close(c["id"], c["title"])
            closed_cases.add(c["id"])
            open_titles.discard(c["title"])
            for f in facts:
                if f["case"] == c["id"]:
                    if "introduced_at" not in f:
                        raise Plan("close before intro")
                    f["closed_at"] = at
        if len(b.msgs) > N_MESSAGES - 2:
            raise Plan("overflow")
    while len(b.msgs) < N_MESSAGES:
        rem = N_MESSAGES - len(b.msgs)
        titles_now = sorted(open_titles)
        if rem >= 7:
            b.filler(titles_now)
        elif rem in (2, 4, 5):
            b.filler(titles_now, size=rem)
        elif rem in (3, 6):
            b.filler(titles_now, size=2)
        else:  # one message left: the conversation ends on a user turn
            b.user(
                b.fmt(
                    r.choice(U_FILLER), title=r.choice(titles_now) if titles_now else "the backlog"
                )
            )

    facts.sort(key=lambda f: (f["introduced_at"], f["case"]))
    for i, f in enumerate(facts):
        f["id"] = f"f{i + 1:03d}"
    out_facts = [
        {
            "id": f["id"],
            "kind": f["kind"],
            "value": f["value"],
            "case": f["case"],
            "introduced_at": f["introduced_at"],
            "closed_at": f.get("closed_at"),
            "superseded_at": f.get("superseded_at"),
            "superseded_by": f["superseded_by"]["id"] if f.get("superseded_by") else None,
        }
        for f in facts
    ]
    for p in probe_out:
        p["fact_id"] = p.pop("_f")["id"]
    probe_out.sort(key=lambda p: p["at"])
    return {
        "id": f"agentic-{dom}-{split}-{seed}",
        "domain": dom,
        "split": split,
        "seed": seed,
        "messages": b.msgs,
        "facts": out_facts,
        "probes": probe_out,
        "checkpoints": [100, 200, 300, 400, 500],
    }


# ----------------------------------------------------------------------------------
# validation
# ----------------------------------------------------------------------------------
def _leaves(x):
    if isinstance(x, str):
        yield x
    elif isinstance(x, dict):
        for k, v in x.items():
            yield from _leaves(k)
            yield from _leaves(v)
    elif isinstance(x, list):
        for v in x:
            yield from _leaves(v)
    elif x is not None:
        yield str(x)


def message_texts(m):
    """(content, raw arguments strings, decoded argument leaves) of one message."""
    raw = [c["arguments"] for c in m.get("tool_calls", [])]
    dec = []
    for a in raw:
        try:
            dec.append(" ".join(_leaves(json.loads(a))))
        except Exception:
            dec.append("")
    return m.get("content") or "", raw, dec


def fact_source(conv, f):
    m = conv["messages"][f["introduced_at"]]
    if m["role"] == "tool":
        return "tool_output"
    if m["role"] == "assistant":
        content, raw, _ = message_texts(m)
        n = norm(f["value"])
        if n not in norm(content) and any(n in norm(a) for a in raw):
            return "tool_args"
        return "assistant"
    return "user"


def validate(conv):
    errs = []
    E = errs.append
    for k in ["id", "domain", "split", "seed", "messages", "facts", "probes", "checkpoints"]:
        if k not in conv:
            E(f"missing key {k}")
    if errs:
        return errs
    msgs, facts, probes = conv["messages"], conv["facts"], conv["probes"]
    if conv["domain"] not in DOMAIN:
        E("unknown domain")
    if conv["split"] not in ("dev", "heldout"):
        E("bad split")
    if conv["checkpoints"] != [100, 200, 300, 400, 500]:
        E("bad checkpoints")
    if len(msgs) != N_MESSAGES:
        E(f"{len(msgs)} messages")
    if not msgs or msgs[0]["role"] != "user":
        E("first message not user")
    # roles, lengths, tool blocks
    i = 0
    call_ids = set()
    while i < len(msgs):
        m = msgs[i]
        role = m.get("role")
        if role not in ("user", "assistant", "tool") or not isinstance(m.get("content"), str):
            E(f"msg {i}: bad role/content")
        w = words(m.get("content") or "")
        if role == "user":
            if not 15 <= w <= 120 or "tool_calls" in m or "tool_call_id" in m:
                E(f"msg {i}: user words {w}")
        elif role == "assistant":
            if not 40 <= w <= 250 or "tool_call_id" in m:
                E(f"msg {i}: assistant words {w}")
        elif role == "tool":
            E(f"msg {i}: tool message outside a tool-call block")
        if role == "assistant" and m.get("tool_calls"):
            calls = m["tool_calls"]
            for c in calls:
                if set(c) != {"id", "name", "arguments"} or not isinstance(c["arguments"], str):
                    E(f"msg {i}: bad tool call shape")
                    continue
                try:
                    json.loads(c["arguments"])
                except ValueError:
                    E(f"msg {i}: arguments not JSON")
                if c["id"] in call_ids:
                    E(f"msg {i}: duplicate call id")
                call_ids.add(c["id"])
            for j, c in enumerate(calls):
                t = msgs[i + 1 + j] if i + 1 + j < len(msgs) else None
                if not t or t["role"] != "tool" or t.get("tool_call_id") != c["id"]:
                    E(f"msg {i}: tool result {j} missing or out of order")
                elif words(t["content"]) < 60:
                    E(f"msg {i + 1 + j}: tool output too short")
            k = i + 1 + len(calls)
            if k >= len(msgs) or msgs[k]["role"] != "assistant" or msgs[k].get("tool_calls"):
                E(f"msg {i}: tool block not closed by a plain assistant message")
            i = k
            continue
        i += 1
    # facts
    byid = {f["id"]: f for f in facts}
    if len(byid) != len(facts):
        E("duplicate fact ids")
    fkeys = {
        "id",
        "kind",
        "value",
        "case",
        "introduced_at",
        "closed_at",
        "superseded_at",
        "superseded_by",
    }
    for f in facts:
        if set(f) != fkeys:
            E(f"fact {f.get('id')}: keys {sorted(f)}")
            return errs
        if f["kind"] not in KINDS:
            E(f"fact {f['id']}: kind")
    if {f["kind"] for f in facts} != set(KINDS):
        E(f"kinds missing: {set(KINDS) - {f['kind'] for f in facts}}")
    norms = [norm(f["value"]) for f in facts]
    for a in range(len(facts)):
        for b2 in range(len(facts)):
            if a != b2 and norms[a] in norms[b2]:
                E(f"value of {facts[a]['id']} contained in {facts[b2]['id']}")
    probe_replies = {}
    for p in probes:
        probe_replies.setdefault(p["fact_id"], set()).add(p["at"] + 1)
    texts = []
    for m in msgs:
        content, raw, dec = message_texts(m)
        texts.append(norm(" \n ".join([content, *raw, *dec])))
    for f, n in zip(facts, norms, strict=True):
        ia = f["introduced_at"]
        if not (isinstance(ia, int) and 0 <= ia < len(msgs)):
            E(f"fact {f['id']}: introduced_at")
            continue
        content, raw, dec = message_texts(msgs[ia])
        in_args = any(n in norm(a) for a in raw) and any(n in norm(d) for d in dec)
        if n not in norm(content) and not in_args:
            E(f"fact {f['id']}: value not verbatim in message {ia}")
        allowed = {ia} | probe_replies.get(f["id"], set())
        for mi, t in enumerate(texts):
            if n in t and mi not in allowed:
                E(f"fact {f['id']}: value also in message {mi}")
        if f["closed_at"] is not None and f["closed_at"] <= ia:
            E(f"fact {f['id']}: closed before introduced")
        if f["case"] == "profile" and f["closed_at"] is not None:
            E(f"fact {f['id']}: profile fact closed")
    # corrections
    n_corr = 0
    for f in facts:
        if (f["superseded_at"] is None) != (f["superseded_by"] is None):
            E(f"fact {f['id']}: superseded fields inconsistent")
        if f["superseded_by"] is not None:
            n_corr += 1
            nf = byid.get(f["superseded_by"])
            if not nf or nf["kind"] != f["kind"] or nf["case"] != f["case"]:
                E(f"fact {f['id']}: bad superseded_by")
            elif (
                nf["introduced_at"] != f["superseded_at"]
                or msgs[nf["introduced_at"]]["role"] != "user"
            ):
                E(f"fact {f['id']}: correction not at a user message")
            if f["superseded_at"] <= f["introduced_at"]:
                E(f"fact {f['id']}: superseded before introduced")
            if f["closed_at"] is not None and f["closed_at"] <= f["superseded_at"]:
                E(f"fact {f['id']}: superseded after close")
    if not 6 <= n_corr <= 8:
        E(f"{n_corr} corrections")
    # cases and closures
    corr_targets = {f["superseded_by"] for f in facts if f["superseded_by"]}
    cases = {}
    for f in facts:
        cases.setdefault(f["case"], []).append(f)
    if "profile" not in cases:
        E("no profile case")
    real = [c for c in cases if c != "profile"]
    if not 8 <= len(real) <= 12:
        E(f"{len(real)} cases")
    n_closed = 0
    for c in real:
        fs = cases[c]
        n_orig = sum(f["id"] not in corr_targets for f in fs)
        if not 3 <= n_orig <= 7:
            E(f"case {c}: {n_orig} facts")
        closes = {f["closed_at"] for f in fs}
        if closes != {None}:
            if len(closes) != 1:
                E(f"case {c}: several close points {closes}")
                continue
            n_closed += 1
            ca = closes.pop()
            if msgs[ca]["role"] != "user":
                E(f"case {c}: close not at a user message")
            if any(f["introduced_at"] >= ca for f in fs):
                E(f"case {c}: fact introduced after close")
    if real and not 0.55 <= n_closed / len(real) <= 0.85:
        E(f"closed share {n_closed}/{len(real)}")
    # probes
    if not 8 <= len(probes) <= 12:
        E(f"{len(probes)} probes")
    for p in probes:
        f = byid.get(p["fact_id"])
        at = p["at"]
        if f is None or not 0 <= at < len(msgs) - 1:
            E(f"probe {p}: bad")
            continue
        if msgs[at]["role"] != "user":
            E(f"probe at {at}: not a user message")
        if at - f["introduced_at"] < 60:
            E(f"probe at {at}: only {at - f['introduced_at']} after intro")
        for end in (f["closed_at"], f["superseded_at"]):
            if end is not None and end <= at + 1:
                E(f"probe at {at}: fact not open")
        rep = msgs[at + 1]
        if (
            rep["role"] != "assistant"
            or rep.get("tool_calls")
            or norm(f["value"]) not in norm(rep["content"])
        ):
            E(f"probe at {at}: reply does not state the value")
    # tool share
    share = sum(fact_source(conv, f) in TOOL_SOURCES for f in facts) / max(1, len(facts))
    if share < 0.4:
        E(f"tool-stated share {share:.2f}")
    return errs


# ----------------------------------------------------------------------------------
SPLITS = {"dev": [1, 2, 3], "heldout": [101, 102]}
DOMAINS = ["coding_agent", "data_analyst_agent", "ops_agent", "research_assistant_agent"]


def build(dom, seed, split):
    last = None
    for attempt in range(200):
        r = random.Random(f"agentic|{dom}|{seed}|{attempt}")
        try:
            conv = build_once(dom, seed, split, r)
        except Plan as e:
            last = str(e)
            continue
        errs = validate(conv)
        if not errs:
            return conv
        last = errs[:3]
    raise SystemExit(f"{dom} seed {seed}: no valid conversation ({last})")


def stats(convs):
    nf = sum(len(c["facts"]) for c in convs)
    npb = sum(len(c["probes"]) for c in convs)
    nc = sum(f["superseded_by"] is not None for c in convs for f in c["facts"])
    src = {}
    for c in convs:
        for f in c["facts"]:
            s = fact_source(c, f)
            src[s] = src.get(s, 0) + 1
    tool = src.get("tool_output", 0) + src.get("tool_args", 0)
    shares = [
        sum(fact_source(c, f) in TOOL_SOURCES for f in c["facts"]) / len(c["facts"]) for c in convs
    ]
    return (
        f"{len(convs)} conversations, {nf} facts, {npb} probes, {nc} corrections, "
        f"tool-stated {tool}/{nf} = {tool / nf:.1%} (per conversation min {min(shares):.1%}), sources {src}"
    )


def main():
    here = Path(__file__).resolve().parent
    failed = False
    for split, seeds in SPLITS.items():
        convs = [build(d, s, split) for d in DOMAINS for s in seeds]
        path = here / f"{split}.jsonl"
        with open(path, "w", encoding="utf-8") as fh:
            for c in convs:
                fh.write(json.dumps(c, ensure_ascii=False) + "\n")
        reread = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        for c in reread:
            errs = validate(c)
            if errs:
                failed = True
                print(f"{c['id']}: {errs[:5]}", file=sys.stderr)
        if reread != convs:
            failed = True
            print(f"{split}: re-read differs from built objects", file=sys.stderr)
        print(f"{split}: {stats(reread)}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
