"""Value generators. Every generator takes (rng, split) and returns a string; dev and heldout use
disjoint notations ("value styles") for the same kind of thing."""
import string
import uuid

from .phrasings import PHRASINGS

DIG, UP, LO, HEX = string.digits, string.ascii_uppercase, string.ascii_lowercase, "0123456789abcdef"
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
          "October", "November", "December"]


def r(rng, alphabet, n):
    return "".join(rng.choice(alphabet) for _ in range(n))


def n_(rng, n):  # n digits, no leading zero
    return rng.choice("123456789") + r(rng, DIG, n - 1)


def group(n, sep, size=3):
    s = str(n)
    parts = []
    while len(s) > size:
        parts.insert(0, s[-size:])
        s = s[:-size]
    return sep.join([s] + parts)


def indian(n):
    s = str(n)
    if len(s) <= 3:
        return s
    head, tail = s[:-3], s[-3:]
    parts = []
    while len(head) > 2:
        parts.insert(0, head[-2:])
        head = head[:-2]
    return ",".join([head] + parts + [tail])


def pick(*fns):
    return lambda rng: rng.choice(fns)(rng)


# ---- dates -------------------------------------------------------------------------------
def _ymd(rng):
    return rng.choice([2026, 2027]), rng.randint(1, 12), rng.randint(13, 28)  # day > 12: unambiguous


def _ord(d):
    return f"{d}{ {1: 'st', 2: 'nd', 3: 'rd'}.get(d % 10 if d not in (11, 12, 13) else 0, 'th') }"


def date_dev(rng):
    y, m, d = _ymd(rng)
    return rng.choice([f"{d}/{m:02d}/{y}", f"{y}-{m:02d}-{d:02d}", f"{d} {MONTHS[m - 1]} {y}"])


def date_heldout(rng):
    y, m, d = _ymd(rng)
    return rng.choice([f"{m}/{d}/{y}", f"{d:02d}.{m:02d}.{y}", f"{MONTHS[m - 1]} {_ord(d)}"])


REL = {"dev": ["next Tuesday", "the day after tomorrow", "in two weeks", "this coming Friday",
               "a week on Saturday", "early next month"],
       "heldout": ["a week from Monday", "in ten days", "the Thursday after next", "tomorrow afternoon",
                   "the last weekend of the month", "in three weeks' time"]}

# ---- money -------------------------------------------------------------------------------
AMOUNT_DEV = pick(
    lambda g: "SEK {},{:02d}".format(group(g.randint(100, 9999), " "), g.randint(1, 99)),
    lambda g: "${},{:03d}.{:02d}".format(g.randint(1, 9), g.randint(0, 999), g.randint(0, 99)),
    lambda g: "€{},{:02d}".format(g.randint(5, 99), g.randint(1, 99)),
    lambda g: "¥{}".format(group(g.randint(12, 480) * 100, ",")),
    lambda g: "GBP {}.{:02d}".format(g.randint(11, 899), g.randint(1, 99)),
)
AMOUNT_HELDOUT = pick(
    lambda g: "{},{:02d} zł".format(group(g.randint(1000, 9999), "."), g.randint(1, 99)),
    lambda g: "₹{}".format(indian(g.randint(10000, 999999))),
    lambda g: "CHF {}.{:02d}".format(group(g.randint(1000, 9999), "'"), g.randint(1, 99)),
    lambda g: "{} USD".format(g.randint(120, 2999)),
    lambda g: "{} kr".format(g.randint(150, 2999)),
    lambda g: "A${}.{:02d}".format(g.randint(40, 999), g.randint(1, 99)),
)

# ---- contacts ----------------------------------------------------------------------------
EMAIL_DEV = lambda g: "{}.{}{}@{}".format(
    g.choice(["anna", "marek", "lucia", "tom", "ines", "oskar", "wen", "amir"]),
    g.choice(["berg", "nowak", "costa", "reid", "haddad", "lind", "okafor", "moreau"]), g.randint(1, 99),
    g.choice(["mailbox.se", "example.com", "posteo.de", "fastmail.fm"]))
EMAIL_HELDOUT = lambda g: "{}_{}+{}@{}".format(
    g.choice(["k", "j", "m", "t", "s", "r"]),
    g.choice(["tanaka", "dvorak", "nguyen", "ortega", "silva", "kowal", "fischer", "ito"]),
    g.choice(["shop", "travel", "uni", "dev", "bills"]), g.choice(["proton.me", "gmx.net", "web.de", "outlook.jp"]))
PHONE_DEV = pick(
    lambda g: "07{}-{} {} {}".format(g.choice("0236"), r(g, DIG, 3), r(g, DIG, 2), r(g, DIG, 2)),
    lambda g: "({}) 555-{}".format(n_(g, 3), r(g, DIG, 4)),
    lambda g: "+49 30 {}".format(n_(g, 7)),
)
PHONE_HELDOUT = pick(
    lambda g: "0{} {} {} {} {}".format(g.choice("67"), r(g, DIG, 2), r(g, DIG, 2), r(g, DIG, 2), r(g, DIG, 2)),
    lambda g: "+44 20 7946 {}".format(r(g, DIG, 4)),
    lambda g: "090-{}-{}".format(r(g, DIG, 4), r(g, DIG, 4)),
)
URL_HOSTS = {"dev": {"team_url": ["status.acme-tools.dev", "ci.internal.example.org"],
                     "tour_url": ["tours.example.com", "daytrips.example.net"]},
             "heldout": {"team_url": ["buildwatch.io", "board.devhub.example"],
                         "tour_url": ["trailhub.org", "explore-more.travel"]}}
URL_DEV = lambda g, key: "https://{}/{}/{}".format(g.choice(URL_HOSTS["dev"][key]),
                                                   g.choice(["board", "book", "view"]), n_(g, 5))
URL_HELDOUT = lambda g, key: "www.{}/{}?ref={}".format(g.choice(URL_HOSTS["heldout"][key]),
                                                        g.choice(["p", "go", "s"]), r(g, LO + DIG, 6))

# ---- addresses ---------------------------------------------------------------------------
ADDRESS_DEV = pick(
    lambda g: "{} {}, lgh {}, {} {} {}".format(g.choice(["Storgatan", "Ringvägen", "Björkvägen"]),
                                               g.randint(1, 99), n_(g, 4), n_(g, 3), r(g, DIG, 2),
                                               g.choice(["Stockholm", "Göteborg", "Malmö"])),
    lambda g: "{} {}, {}. OG, {} {}".format(g.choice(["Lindenstraße", "Schönhauser Allee", "Müllerweg"]),
                                           g.randint(1, 150), g.randint(1, 5), n_(g, 5),
                                           g.choice(["Berlin", "München", "Köln"])),
    lambda g: "{} {} {}, Apt {}{}, {}".format(n_(g, 4), g.choice(["Maple", "Cedar", "Juniper"]),
                                             g.choice(["Ave", "St", "Blvd"]), g.randint(1, 9), g.choice("ABCD"),
                                             g.choice(["Portland, OR 97205", "Austin, TX 78704", "Denver, CO 80203"])),
    lambda g: "Flat {}, {} {} Road, {}".format(g.randint(1, 30), g.randint(2, 120), g.choice(["Elm", "Harrow", "Mill"]),
                                            g.choice(["Leeds LS6 2AB", "Bristol BS7 8EE", "York YO10 4DD"])),
)
ADDRESS_HELDOUT = pick(
    lambda g: "{} rue {}, {}e étage, {} {}".format(g.randint(1, 80), g.choice(["des Lilas", "Émile Zola", "de la Gare"]),
                                                g.randint(2, 7), g.choice(["69003", "75011", "31000"]),
                                                g.choice(["Lyon", "Paris", "Toulouse"])),
    lambda g: "ul. {} {} m. {}, {}-{} {}".format(g.choice(["Długa", "Świętojańska", "Żelazna"]), g.randint(1, 90),
                                                 g.randint(1, 40), r(g, DIG, 2), r(g, DIG, 3),
                                                 g.choice(["Warszawa", "Kraków", "Gdańsk"])),
    lambda g: "Via {} {}, scala {}, int. {}, {} {}".format(g.choice(["Roma", "Garibaldi", "dei Mille"]),
                                                          g.randint(1, 99), g.choice("ABC"), g.randint(1, 20),
                                                          n_(g, 5), g.choice(["Milano", "Torino", "Bologna"])),
    lambda g: "〒{}-{} 東京都{}{}丁目{}-{} {}号室".format(n_(g, 3), r(g, DIG, 4), g.choice(["渋谷区神宮前", "世田谷区三軒茶屋", "目黒区中目黒"]),
                                                 g.randint(1, 5), g.randint(1, 30), g.randint(1, 20), n_(g, 3)),
    lambda g: "Flat {}{}, {} Floor, {} {} Road, {} {}".format(g.randint(1, 12), g.choice("ABC"),
                                                             g.choice(["2nd", "3rd", "5th"]), g.randint(3, 200),
                                                             g.choice(["MG", "Residency", "Linking"]),
                                                             g.choice(["Bengaluru", "Pune", "Mumbai"]), n_(g, 6)),
)

# ---- identifiers -------------------------------------------------------------------------
def _uuid(g):
    return str(uuid.UUID(int=g.getrandbits(128), version=4))


IDENT = {
    "order_id": (pick(lambda g: f"{r(g, LO, 2)}{r(g, DIG, 2)}-{r(g, DIG, 2)}{r(g, LO, 1)}",
                      lambda g: f"ORD-{n_(g, 6)}"),
                 pick(lambda g: f"po-{g.choice([2026, 2027])}-{r(g, DIG, 4)}",
                      lambda g: f"Ord#{n_(g, 2)}-{r(g, DIG, 4)}")),
    "tracking": (lambda g: "1Z" + r(g, UP + DIG, 16), lambda g: "JJD" + r(g, DIG, 18)),
    "sku": (lambda g: f"SKU-{n_(g, 5)}-{r(g, UP, 3)}", lambda g: f"{r(g, LO, 2)}-{n_(g, 4)}/{g.choice('smlx')}"),
    "rma": (lambda g: f"RMA-{n_(g, 4)}-{r(g, UP, 1)}", lambda g: f"ret_{n_(g, 5)}{r(g, LO, 1)}"),
    "serial": (lambda g: f"SN {r(g, UP + DIG, 4)}-{r(g, UP + DIG, 4)}", lambda g: r(g, UP, 2) + r(g, DIG, 1) + r(g, UP + DIG, 6)),
    "invoice": (lambda g: f"INV-{g.choice([2026, 2027])}-{r(g, DIG, 5)}", lambda g: f"FV/{g.choice([2026, 2027])}/{r(g, DIG, 4)}"),
    "fee_invoice": (lambda g: f"TUI-{n_(g, 5)}", lambda g: f"rech-{g.choice([2026, 2027])}-{n_(g, 3)}"),
    "iban": (lambda g: "DE{} {} {} {} {} {}".format(r(g, DIG, 2), *(r(g, DIG, 4) for _ in range(4)), r(g, DIG, 2)),
             lambda g: "PL" + r(g, DIG, 26)),
    "member_no": (lambda g: f"M-{n_(g, 9)}", lambda g: f"CN {n_(g, 4)} {r(g, DIG, 4)} {r(g, DIG, 2)}"),
    "ticket": (lambda g: f"Tkt#{n_(g, 6)}", lambda g: f"case-{r(g, LO, 2)}{n_(g, 4)}"),
    "loyalty": (lambda g: f"FF-{n_(g, 8)}", lambda g: f"{n_(g, 3)} {r(g, DIG, 3)} {r(g, DIG, 3)}"),
    "flight_no": (lambda g: f"{g.choice(['LH', 'SK', 'TP', 'AY', 'KL'])} {n_(g, g.choice([3, 4]))}",
                  lambda g: f"{g.choice(['AC', 'VN', 'A3', 'LA', 'QR'])}{n_(g, g.choice([3, 4]))}"),
    "booking_code": (lambda g: r(g, UP, 6), lambda g: r(g, LO, 6)),
    "hotel_conf": (lambda g: f"HX-{n_(g, 8)}", lambda g: f"Bkg {n_(g, 4)} {r(g, DIG, 4)}"),
    "car_conf": (_uuid, lambda g: _uuid(g).replace("-", "")),
    "issue_no": (lambda g: f"#{n_(g, 4)}", lambda g: f"{g.choice(['PAY', 'WEB', 'CORE'])}-{n_(g, g.choice([3, 4]))}"),
    "commit": (lambda g: r(g, HEX, 7), lambda g: r(g, HEX, 12)),
    "pr_no": (lambda g: f"PR-{n_(g, 4)}", lambda g: f"!{n_(g, 3)}"),
    "release_ticket": (lambda g: f"REL-{n_(g, 3)}", lambda g: f"CHG{n_(g, 7)}"),
    "student_id": (lambda g: f"s{n_(g, 7)}", lambda g: f"{g.choice([2025, 2026])}/STU/{n_(g, 4)}"),
    "assignment_id": (lambda g: f"HW-{n_(g, 2)}{r(g, LO, 1)}", lambda g: f"ps{g.randint(2, 9)}-q{g.randint(2, 9)}{r(g, LO, 1)}"),
}

# ---- technical ---------------------------------------------------------------------------
TECH = {
    "file_path": (lambda g: "src/{}/{}.py".format(g.choice(["billing", "exporter", "auth", "uploads", "reports"]),
                                                 g.choice(["invoice_export", "csv_writer", "session_store",
                                                           "chunked_upload", "rounding", "tax_rules"])),
                  lambda g: "packages/{}/src/{}.ts".format(g.choice(["cart", "sso", "scheduler", "worker"]),
                                                           g.choice(["priceTotals", "redirectGuard", "tzConvert",
                                                                     "jobQueue", "sessionBridge"]))),
    "error_msg": (pick(lambda g: "KeyError: '{}'".format(g.choice(["shipping_zone", "vat_rate", "row_id", "upload_token"])),
                       lambda g: "ValueError: invalid literal for int() with base 10: '{}'".format(r(g, LO, 3)),
                       lambda g: "AssertionError: assert {} == {}".format(n_(g, 3), n_(g, 3))),
                  pick(lambda g: "TypeError: Cannot read properties of undefined (reading '{}')".format(
                           g.choice(["zoneId", "lineItems", "redirectUri", "tz"])),
                       lambda g: "ECONNREFUSED 127.0.0.1:{}".format(n_(g, 4)),
                       lambda g: "RangeError: Maximum call stack size exceeded at {}".format(
                           g.choice(["flattenCart", "walkTree", "resolveDeps"])))),
    "func_name": (lambda g: "{}_{}()".format(g.choice(["parse", "normalise", "flush", "compute", "load"]),
                                             g.choice(["header_block", "vat_lines", "upload_chunks", "session_map"])),
                  lambda g: "{}{}()".format(g.choice(["resolve", "hydrate", "serialize", "reconcile"]),
                                            g.choice(["TaxRegion", "CartState", "RedirectTarget", "JobLease"]))),
    "version": (lambda g: "{}=={}.{}.{}".format(g.choice(["requests", "django", "numpy", "pydantic"]),
                                                g.randint(1, 5), g.randint(0, 40), g.randint(0, 9)),
                lambda g: "{}@{}.{}.{}".format(g.choice(["react", "lodash", "typescript", "vite"]),
                                               g.randint(2, 19), g.randint(0, 30), g.randint(0, 21))),
    "command": (pick(lambda g: "pytest -k test_{} -x".format(g.choice(["refund_rounding", "csv_quotes", "expired_session"])),
                     lambda g: "python manage.py {} --settings=conf.{}".format(g.choice(["migrate", "check"]),
                                                                              g.choice(["staging", "local"]))),
                pick(lambda g: "pnpm vitest run {}".format(g.choice(["src/cart", "src/auth", "test/tz"])),
                     lambda g: "npx tsc --noEmit -p {}".format(g.choice(["tsconfig.build.json", "apps/web"])))),
    "config_key": (lambda g: "{}.{}".format(g.choice(["cache", "uploads", "ratelimit", "export"]),
                                            g.choice(["ttl_seconds", "max_chunk_mb", "burst_size", "delimiter"])),
                   lambda g: "{}_{}_{}".format(g.choice(["FEATURE", "PREVIEW", "PROXY"]),
                                               g.choice(["FLAGS", "AUTH", "UPSTREAM"]), g.choice(["ENDPOINT", "TOKEN", "MODE"]))),
    "port": (lambda g: f"port {g.randint(1025, 9999)}", lambda g: f"localhost:{g.randint(3000, 9999)}"),
    "env_path": (lambda g: "/etc/{}/settings.toml".format(g.choice(["ledger", "exporter", "uploadsvc"])),
                 lambda g: "~/.config/{}/.env.{}".format(g.choice(["cartapp", "ssoproxy"]), g.choice(["preview", "local"]))),
    "repo_path": (lambda g: "~/work/{}".format(g.choice(["ledger-api", "billing-core", "upload-service"])),
                  lambda g: "C:\\Users\\dev\\src\\{}".format(g.choice(["storefront", "checkout-web", "sso-gateway"]))),
    "exercise_file": (lambda g: "week{}/{}_practice.ipynb".format(g.randint(1, 12), g.choice(["limits", "vectors", "series"])),
                      lambda g: "ch{:02d}-exercises-v{}.pdf".format(g.randint(1, 20), g.randint(2, 5))),
}

WORDS = ["two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"]
QUANT = {
    "seat": (lambda g: f"seat {g.randint(3, 45)}{g.choice('ABCDEF')}", lambda g: f"row {g.randint(3, 45)} seat {g.choice('ABCDEFK')}"),
    "rooms": (lambda g: f"{g.randint(2, 6)} double rooms", lambda g: f"{g.choice(WORDS[:5])} twin rooms"),
    "item_count": (lambda g: f"{g.randint(2, 40)} units", lambda g: f"a pack of {g.choice(WORDS[4:])}"),
    "quiz_score": (lambda g: f"{g.randint(31, 99)}/100", lambda g: f"{g.randint(31, 99)} percent"),
    "timeout": (lambda g: f"{g.randint(5, 180)} seconds", lambda g: f"{g.randint(2, 60)}00 milliseconds"),
    "test_count": (lambda g: f"{g.randint(120, 990)} tests", lambda g: f"{group(g.randint(1001, 4999), ',')} test cases"),
    "session_count": (lambda g: f"{g.randint(3, 19)} sessions left", lambda g: f"{g.choice(WORDS)} lessons"),
}

CHOICES = {
    "dev": {
        "contact_pref": ["never call before 10 am", "email only, no phone calls", "text me rather than calling",
                         "don't contact me on weekends"],
        "account_pref": ["no marketing emails whatsoever", "send invoices as PDF attachments",
                         "keep two-factor login switched on"],
        "seat_pref": ["aisle seat, no red-eye flights", "window seat near the front", "never book middle seats"],
        "pace_pref": ["no more than two activities a day", "keep mornings free for sleeping in",
                      "avoid anything involving boats"],
        "style_pref": ["use tabs, not spaces", "keep lines under 88 characters", "prefer f-strings over format()"],
        "workflow_pref": ["one commit per logical change", "never force-push to main",
                          "run the linter before every commit"],
        "explain_pref": ["explain with examples, not formulas", "draw a picture before the algebra",
                         "short steps, check in often"],
        "return_choice": ["take store credit instead of cash", "ask for a replacement unit",
                          "keep it with a partial refund"],
        "billing_choice": ["switch to annual billing", "pay the disputed amount under protest",
                           "move to invoice payment"],
        "flight_choice": ["go with the Lisbon option", "take the early morning connection",
                          "book the direct flight after all"],
        "car_choice": ["rent the compact hatchback", "add the full insurance cover", "skip the GPS add-on"],
        "tour_choice": ["book the half-day vineyard tour", "do the glacier hike on day three",
                        "join the small-group food walk"],
        "fix_choice": ["guard against empty rows upstream", "revert the caching change first",
                       "rewrite the rounding with Decimal"],
        "pin_choice": ["pin requests to 2.31", "stay on Django 4.2 LTS for now", "upgrade numpy in a separate PR"],
        "study_plan": ["focus on past papers from now on", "do two practice sets a week",
                       "drop the optional chapter on series"],
    },
    "heldout": {
        "contact_pref": ["only reach me by WhatsApp", "calls after 6 pm are fine", "never leave voicemails",
                         "write in German if possible"],
        "account_pref": ["paper statements by post only", "notify me of every login",
                         "merge all receipts into one monthly email"],
        "seat_pref": ["exit row whenever available", "no seats near the toilets", "sit together with my son"],
        "pace_pref": ["nothing starting before nine", "one rest day in every three", "prefer walking over taxis"],
        "style_pref": ["two-space indent and single quotes", "no default exports anywhere",
                       "name booleans with an is prefix"],
        "workflow_pref": ["squash merges only", "rebase instead of merge commits", "always open a draft MR first"],
        "explain_pref": ["use analogies from cooking", "show the worked solution first", "quiz me before explaining"],
        "return_choice": ["swap it for the larger size", "get the money back to my card",
                          "have it repaired under warranty"],
        "billing_choice": ["split the payment into three instalments", "cancel the annual renewal",
                           "accept the goodwill credit"],
        "flight_choice": ["fly via Frankfurt to save money", "take the overnight flight out",
                          "upgrade to premium economy"],
        "car_choice": ["take the electric model", "get the four-wheel drive", "return it at a different branch"],
        "tour_choice": ["do the two-night cruise", "hire a private porter for the trek", "book the evening tour slot"],
        "fix_choice": ["add a feature flag around the fix", "patch the reducer and add a regression test",
                       "move the calculation to the server"],
        "pin_choice": ["hold React at the current major", "replace lodash with native helpers",
                       "migrate to Node 22 next sprint"],
        "study_plan": ["revise one module per weekend", "redo every quiz I failed",
                       "skip the lab write-ups until after the exam"],
    },
}

ALIASES = {"alt_email": "email", "teacher_email": "email", "hotel_phone": "phone", "team_url": "url",
           "tour_url": "url"}
SIMPLE = {"email": (EMAIL_DEV, EMAIL_HELDOUT), "phone": (PHONE_DEV, PHONE_HELDOUT)}


def make_value(rng, split, kind, key):
    s = 0 if split == "dev" else 1
    if kind == "person":
        return rng.choice(PHRASINGS[split]["names"])
    if kind in ("preference", "decision"):
        return rng.choice(CHOICES[split][key])
    if kind == "relative_date":
        return rng.choice(REL[split])
    if kind == "date":
        return (date_dev, date_heldout)[s](rng)
    if kind == "amount":
        return (AMOUNT_DEV, AMOUNT_HELDOUT)[s](rng)
    if kind == "address":
        return (ADDRESS_DEV, ADDRESS_HELDOUT)[s](rng)
    k = ALIASES.get(key, key)
    if k == "url":
        return (URL_DEV, URL_HELDOUT)[s](rng, key)
    for table in (SIMPLE, IDENT, TECH, QUANT):
        if k in table:
            return table[k][s](rng)
    raise KeyError(key)
