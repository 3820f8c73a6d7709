#!/usr/bin/env python3
"""Deterministic generator for a fresh long-conversation memory test set.

Usage: python3 generate.py            -> writes fresh.jsonl next to this file and validates it.
Stdlib only. Every conversation is a pure function of (domain, seed).
"""
import datetime
import json
import os
import random
import re
import sys
import unicodedata

OUT_DIR = os.path.dirname(os.path.abspath(__file__))
N_MSG = 500
CHECKPOINTS = [100, 200, 300, 400, 500]
ALL_KINDS = ["identifier", "person", "address", "date", "relative_date", "amount",
             "contact", "preference", "decision", "technical", "quantity"]


def norm(s):
    return " ".join(unicodedata.normalize("NFC", s).casefold().split())


def wc(s):
    return len(s.split())


# ---------------------------------------------------------------------------
# Generic value generators (each takes an rng)
# ---------------------------------------------------------------------------
EN_M = ["", "January", "February", "March", "April", "May", "June", "July", "August",
        "September", "October", "November", "December"]
EN_AB = ["", "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
ES_M = ["", "enero", "febrero", "marzo", "abril", "mayo", "junio", "julio", "agosto",
        "septiembre", "octubre", "noviembre", "diciembre"]
FR_M = ["", "janvier", "février", "mars", "avril", "mai", "juin", "juillet", "août",
        "septembre", "octobre", "novembre", "décembre"]
DE_M = ["", "Januar", "Februar", "März", "April", "Mai", "Juni", "Juli", "August",
        "September", "Oktober", "November", "Dezember"]
RU_M = ["", "января", "февраля", "марта", "апреля", "мая", "июня", "июля", "августа",
        "сентября", "октября", "ноября", "декабря"]
PT_M = ["", "janeiro", "fevereiro", "março", "abril", "maio", "junho", "julho", "agosto",
        "setembro", "outubro", "novembro", "dezembro"]


def ordsuf(d):
    return "th" if 11 <= d <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(d % 10, "th")


def g_date(r):
    day, month, year = r.randint(13, 28), r.randint(1, 12), r.choice([2025, 2026, 2026])
    dow = datetime.date(year, month, day).strftime("%A")
    fmts = [
        lambda: f"{day:02d}/{month:02d}/{year}",
        lambda: f"{year}-{month:02d}-{day:02d}",
        lambda: f"{day}.{month:02d}.{year}",
        lambda: f"{day} {EN_M[month]} {year}",
        lambda: f"{EN_M[month]} {day}{ordsuf(day)}",
        lambda: f"{EN_AB[month]} {day}, {year}",
        lambda: f"{day}-{EN_AB[month]}-{year % 100:02d}",
        lambda: f"{year}年{month}月{day}日",
        lambda: f"{day} de {ES_M[month]} de {year}",
        lambda: f"le {day} {FR_M[month]} {year}",
        lambda: f"{day}. {DE_M[month]} {year}",
        lambda: f"{month}/{day}/{year}",
        lambda: f"{dow} the {day}{ordsuf(day)} of {EN_M[month]}",
        lambda: f"{dow[:3]} {day} {EN_AB[month]}",
        lambda: f"{day} {RU_M[month]} {year} г.",
        lambda: f"{day} de {PT_M[month]}",
        lambda: f"{day}{ordsuf(day)} {EN_AB[month]} '{year % 100}",
        lambda: f"{year}/{month:02d}/{day:02d}",
    ]
    return r.choice(fmts)()


REL_DATES = [
    "the Friday after next", "a week from Tuesday", "the tail end of next month",
    "three weeks from today", "the Monday after the bank holiday", "first thing tomorrow morning",
    "sometime the week after Easter", "in about ten days", "the last weekend of this month",
    "two Saturdays from now", "right after the school holidays", "before the end of the quarter",
    "this coming Thursday afternoon", "the day after my birthday", "a fortnight on Wednesday",
    "no later than Friday week", "over the long weekend", "mid-next month", "48 hours from now",
    "by close of business Monday", "once the sprint wraps up", "the second week of the new term",
    "just after Chinese New Year", "during half-term", "übermorgen", "la semaine prochaine",
    "mañana por la tarde", "over anderhalve week", "来週の金曜日", "до конца месяца",
    "the Wednesday before Thanksgiving", "end of play tomorrow", "within the next 72 hours",
    "a month from yesterday", "the first working day of the new year", "in a couple of weeks, roughly",
    "tomorrow fortnight", "the morning after the inspection", "straight after Ramadan",
    "next Tuesday at the earliest", "daqui a quinze dias", "dopo Ferragosto",
]


def g_rel(r):
    return r.choice(REL_DATES)


PERSONS = [
    "Zoë Brandt-Okafor", "José Ángel Núñez", "Nguyễn Thị Lan", "李文博", "Дмитрий Соколов",
    "Αικατερίνη Παπαδοπούλου", "Siobhán Ní Bhriain", "Łukasz Wróblewski", "Ayşe Kılıç",
    "محمد العتيبي", "Priya Raghunathan", "Björn Åkesson", "Chloé Lefèvre", "Olúwaseun Adébáyọ̀",
    "田中 浩", "Małgorzata Dąbrowska", "Jürgen Weiß", "Ngozi Eze", "Kwame Mensah-Boateng",
    "Søren Østergaard", "Mariana Gonçalves", "Ilse van der Berg", "Anaïs Duvall", "Tomás Ó Ceallaigh",
    "Bùi Minh Khôi", "Jae-won Park", "김서연", "Ravi Shankar Iyer", "Fatima Zahra Benali",
    "Eliška Dvořáková", "Mateus Araújo", "Hana Nováková", "Iñaki Etxeberria", "Kaito Watanabe",
    "Oksana Hrytsenko", "Rūta Petrauskaitė", "Gábor Szűcs", "Nilufar Rashidova", "Thandiwe Dlamini",
    "Aleksander Þórsson", "Camille Rousseau-Bah", "Yusuf Özdemir", "Marta Żuraw", "Pedro Ibáñez",
    "Wiremu Ngata", "Sione Fifita", "Leilani Kahananui", "Daniela Ćosić", "Ömer Faruk Aydın",
    "Anh Thư Trần", "Sarah-Jane McAllister", "Dr. Amara Okonkwo", "Prof. Heinrich Möller",
    "Mrs. Beatriz Castañeda", "Mr. Declan O'Rourke", "Ms. Ingrid Hålands", "Rahel Tesfaye",
    "Vikram Bhattacharya", "Shira Ben-David", "Emeka Nwosu", "Lucía Fernández de Córdoba",
    "Sven-Erik Lindqvist", "Noémie Girard", "Ilya Kuznetsov", "Paulo Tavares", "Wen-Hsin Chu",
    "王芳", "Ana Paula Vieira", "Grzegorz Brzęczyszczykiewicz", "Hiroko Sato", "Chiara Bellandi",
]


def g_person(r):
    return r.choice(PERSONS)


def _street_no(r):
    return r.randint(2, 240)


def g_address(r):
    n = _street_no(r)
    fmts = [
        lambda: f"{r.choice(['Lindenstraße', 'Kastanienallee', 'Bergmannstraße', 'Schillerweg'])} {n}, {r.randint(10115, 14199)} Berlin",
        lambda: f"{n} rue {r.choice(['des Martyrs', 'de la Roquette', 'Oberkampf', 'du Faubourg Saint-Denis'])}, 750{r.randint(10, 20)} Paris",
        lambda: f"Flat {r.randint(1, 9)}, {n} {r.choice(['Holloway Road', 'Mare Street', 'Cowley Road', 'Gloucester Place'])}, {r.choice(['London N7 8JG', 'London E8 3RH', 'Oxford OX4 1HR', 'Bristol BS8 1TH'])}",
        lambda: f"〒{r.randint(100, 199)}-{r.randint(1000, 9999):04d} 東京都{r.choice(['渋谷区神宮前', '世田谷区太子堂', '目黒区中目黒'])}{r.randint(1, 6)}-{r.randint(1, 20)}-{r.randint(1, 15)}",
        lambda: f"{r.randint(1, 6)}-{r.randint(1, 20)}-{r.randint(1, 15)} {r.choice(['Jingumae, Shibuya-ku', 'Nakameguro, Meguro-ku', 'Sakyo-ku, Kyoto'])} {r.randint(100, 699)}-{r.randint(1000, 9999)}",
        lambda: f"{n * 7 + 100} {r.choice(['Maple Ave', 'W Belmont St', 'Cedar Ln', 'Mission St'])}, Apt {r.randint(1, 9)}{r.choice('ABCD')}, {r.choice(['Evanston, IL 60201', 'Chicago, IL 60657', 'San Francisco, CA 94110', 'Austin TX 78704'])}",
        lambda: f"{r.choice(['Keizersgracht', 'Prinsengracht', 'Oudegracht'])} {n}-{r.choice(['H', 'I', 'II'])}, {r.randint(1011, 1099)} {r.choice(['DV', 'KL', 'AB'])} {r.choice(['Amsterdam', 'Utrecht'])}",
        lambda: f"Rua {r.choice(['Oscar Freire', 'Augusta', 'Harmonia'])}, {n * 3} – apto {r.randint(11, 99)}, São Paulo – SP, 0{r.randint(1000, 5999)}-{r.randint(0, 999):03d}",
        lambda: f"B-{r.randint(101, 909)}, {r.choice(['Lotus Residency', 'Prestige Shantiniketan', 'Sobha Amethyst'])}, {(lambda k: f'{k}{ordsuf(k)}')(r.randint(2, 18))} Cross, Indiranagar, Bengaluru {r.randint(560001, 560099)}",
        lambda: f"{n * 2} rue {r.choice(['Saint-Paul O', 'Saint-Denis', 'Rachel E'])}, Montréal QC H2{r.choice('JTXY')} {r.randint(1, 9)}{r.choice('ABCK')}{r.randint(1, 9)}",
        lambda: f"C/ de {r.choice(['Mallorca', 'Provença', 'Verdi'])}, {n}, {r.randint(1, 6)}º {r.randint(1, 4)}ª, 080{r.randint(10, 40)} Barcelona",
        lambda: f"ул. {r.choice(['Пушкина', 'Рубинштейна', 'Марата'])}, д. {n}, кв. {r.randint(1, 90)}, Санкт-Петербург, 19{r.randint(1000, 9999)}",
        lambda: f"Unit {r.randint(1, 20)}/{n} {r.choice(['Smith St, Fitzroy VIC 3065', 'Crown St, Surry Hills NSW 2010', 'Brunswick St, New Farm QLD 4005'])}",
        lambda: f"Via {r.choice(['Garibaldi', 'del Pratello', 'Santo Stefano'])} {n}, 401{r.randint(21, 41)} Bologna BO",
        lambda: f"{r.choice(['Bahnhofstrasse', 'Langstrasse', 'Seefeldstrasse'])} {n}, 80{r.randint(1, 55):02d} Zürich",
        lambda: f"서울특별시 {r.choice(['마포구 양화로', '종로구 율곡로', '강남구 테헤란로'])} {n}, {r.randint(101, 1509)}호",
        lambda: f"ul. {r.choice(['Długa', 'Mokotowska', 'Floriańska'])} {n}/{r.randint(1, 40)}, {r.randint(0, 99):02d}-{r.randint(100, 999)} {r.choice(['Warszawa', 'Kraków'])}",
        lambda: f"{r.choice(['Calle Alcalá', 'Paseo de la Castellana', 'Calle de Toledo'])} {n}, {r.randint(1, 8)}º izq., 280{r.randint(10, 50)} Madrid",
        lambda: f"Av. {r.choice(['Insurgentes Sur', 'Álvaro Obregón', 'Amsterdam'])} {n * 5}, Col. {r.choice(['Roma Nte.', 'Condesa', 'Del Valle'])}, 06{r.randint(100, 799)} CDMX",
        lambda: f"{r.randint(1, 40)} {r.choice(['Ponsonby Road, Grey Lynn', 'Cuba Street, Te Aro'])}, {r.choice(['Auckland 1021', 'Wellington 6011'])}",
    ]
    return r.choice(fmts)()


def _eu(x, dec=True):
    s = f"{x:,.2f}" if dec else f"{int(x):,}"
    return s.replace(",", "X").replace(".", ",").replace("X", ".")


def _indian(n):
    s = str(int(n))
    if len(s) <= 3:
        return s
    head, tail = s[:-3], s[-3:]
    parts = []
    while len(head) > 2:
        parts.insert(0, head[-2:])
        head = head[:-2]
    if head:
        parts.insert(0, head)
    return ",".join(parts) + "," + tail


def g_amount(r, lo=20, hi=3000):
    x = round(r.uniform(lo, hi), 2)
    if r.random() < 0.3:
        x = float(int(x))
    i = int(x)
    fmts = [
        lambda: f"€{_eu(x)}",
        lambda: f"{_eu(x)} €",
        lambda: f"${x:,.2f}",
        lambda: f"£{x:,.2f}",
        lambda: f"CHF {i:,}".replace(",", "'") + ".–",
        lambda: f"¥{i * 150:,}",
        lambda: f"₹{_indian(i * 85)}",
        lambda: f"{_eu(x * 4).replace('.', ' ')} zł",
        lambda: f"R$ {_eu(x * 5)}",
        lambda: f"{i * 11:,} kr".replace(",", " "),
        lambda: f"AUD {x:,.2f}",
        lambda: f"US${i:,}",
        lambda: f"₩{i * 1300:,}",
        lambda: f"CA${x:,.2f}",
        lambda: f"MXN {i * 18:,}.00",
        lambda: f"EUR {i}",
        lambda: f"{round(x / 1000, 1)}k EUR" if x > 1100 else f"{i} euros",
        lambda: f"{i} quid",
        lambda: f"USD {x:.2f}",
        lambda: f"{_eu(x)} EUR",
    ]
    return r.choice(fmts)()


EMAIL_LOCAL = ["m.kowalska", "j.nunez", "priya.r", "bjorn.akesson", "chloe.lefevre", "s.ostergaard",
               "kwame.mb", "ayse.kilic", "hana.n", "lucia.fdc", "r.tesfaye", "wen.chu", "declan.or",
               "info", "support-eu", "claims", "bookings", "noreply-not", "frontdesk", "team.alpha"]
EMAIL_DOM = ["przyklad.pl", "correo.es", "posteo.de", "example.co.uk", "mail.example.jp",
             "clinic-example.nl", "fastmail.example", "example.com.br", "proton.example", "outlook.example"]


def g_contact(r):
    fmts = [
        lambda: f"{r.choice(EMAIL_LOCAL)}{r.randint(2, 99)}@{r.choice(EMAIL_DOM)}",
        lambda: f"+49 30 {r.randint(2000000, 99999999)}",
        lambda: f"({r.randint(201, 989)}) 555-0{r.randint(100, 199)}",
        lambda: f"020 7946 0{r.randint(100, 999)}",
        lambda: f"+81 3-{r.randint(1000, 9999)}-{r.randint(1000, 9999)}",
        lambda: f"0{r.randint(6, 7)} {r.randint(10, 99)} {r.randint(10, 99)} {r.randint(10, 99)} {r.randint(10, 99)}",
        lambda: f"+44 7700 900{r.randint(100, 999)}",
        lambda: f"+55 11 9{r.randint(1000, 9999)}-{r.randint(1000, 9999)}",
        lambda: f"+91 9{r.randint(1000, 9999)} {r.randint(10000, 99999)}",
        lambda: f"+33 (0)1 {r.randint(10, 99)} {r.randint(10, 99)} {r.randint(10, 99)} {r.randint(10, 99)}",
        lambda: f"04{r.randint(10, 99)} {r.randint(100, 999)} {r.randint(100, 999)}",
        lambda: f"+7 (812) {r.randint(200, 999)}-{r.randint(10, 99)}-{r.randint(10, 99)}",
        lambda: f"https://{r.choice(['portal', 'app', 'my', 'service'])}.{r.choice(['example-clinic.de', 'example-air.com', 'example-shop.eu', 'example-school.org'])}/{r.choice(['termine', 'claims', 'help/contact', 'booking', 'u'])}/{r.randint(1000, 99999)}",
        lambda: f"wa.me/{r.choice(['55', '34', '351', '62'])}{r.randint(100000000, 999999999)}",
        lambda: f"+353 87 {r.randint(100, 999)} {r.randint(1000, 9999)}",
        lambda: f"{r.choice(EMAIL_LOCAL).upper()}@{r.choice(EMAIL_DOM).upper()}",
    ]
    return r.choice(fmts)()


def rand_hex(r, n):
    return "".join(r.choice("0123456789abcdef") for _ in range(n))


def rand_alnum(r, n, alphabet="ABCDEFGHJKLMNPQRSTUVWXYZ23456789"):
    return "".join(r.choice(alphabet) for _ in range(n))


def g_uuid(r):
    h = rand_hex(r, 32)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"


def g_iban(r):
    fmts = [
        lambda: f"DE{r.randint(10, 99)} {r.randint(1000, 9999)} {r.randint(1000, 9999)} {r.randint(1000, 9999)} {r.randint(1000, 9999)} {r.randint(10, 99)}",
        lambda: f"NL{r.randint(10, 99)}INGB{r.randint(1000000000, 9999999999)}",
        lambda: f"FR76 {r.randint(1000, 9999)} {r.randint(1000, 9999)} {r.randint(1000, 9999)} {r.randint(1000, 9999)} {r.randint(1000, 9999)} {r.randint(100, 999)}",
        lambda: f"ES{r.randint(10, 99)} {r.randint(1000, 9999)} {r.randint(1000, 9999)} {r.randint(10, 99)} {r.randint(1000000000, 9999999999)}",
        lambda: f"GB{r.randint(10, 99)}MIDL{r.randint(10000000000000, 99999999999999)}",
    ]
    return r.choice(fmts)()


def pick(pool):
    return lambda r: r.choice(pool)


def fmt(*templates):
    """Return a generator that fills one of the format templates.
    Placeholders: {d4} digits, {A3} letters/digits, {h7} hex, {n2} number up to 99 etc."""
    def g(r):
        t = r.choice(templates)

        def rep(m):
            code, n = m.group(1), int(m.group(2))
            if code == "d":
                return str(r.randint(10 ** (n - 1), 10 ** n - 1))
            if code == "A":
                return rand_alnum(r, n)
            if code == "a":
                return rand_alnum(r, n, "abcdefghijkmnpqrstuvwxyz").lower()
            if code == "h":
                return rand_hex(r, n)
            if code == "n":
                return str(r.randint(2, n))
            if code == "f":
                return f"{r.uniform(1, n):.1f}"
            raise ValueError(code)
        return re.sub(r"\{([dAahnf])(\d+)\}", rep, t)
    return g


GEN = {"date": g_date, "relative_date": g_rel, "person": g_person, "address": g_address,
       "amount": g_amount, "contact": g_contact}


# ---------------------------------------------------------------------------
# Generic phrasing pools (domain pools are merged with these)
# ---------------------------------------------------------------------------
def cap(s):
    return s[:1].upper() + s[1:] if s else s


INTRO_GENERIC = [
    "For {topic}, the {label} is {v}.",
    "Quick note about {topic} — {label}: {v}.",
    "{v} is the {label} for {topic}, in case you need it later.",
    "Writing this down before I forget: {label} for {topic} = {v}.",
    "The {label}? It's {v}. That's for {topic}.",
    "Regarding {topic}: they told me the {label} would be {v}.",
    "Please keep hold of the {label} for {topic}, which is {v}.",
    "ok so {topic} — {label} is {v}",
    "Found it in my emails. {topic}, {label}: {v}.",
    "Just so it's somewhere: {v} ({label}, {topic}).",
]
INTRO_KIND = {
    "preference": ["For {topic} I'd much rather have {v}.", "My one real requirement for {topic}: {v}.",
                   "Please keep in mind that I want {v} — that goes for {topic}.",
                   "If there's any choice at all with {topic}, {v}.", "honestly for {topic}, {v} is a must for me"],
    "decision": ["Okay, I've made up my mind on {topic}: {v}.", "We're going with {v} for {topic}.",
                 "Final call on {topic} — {v}.", "After sleeping on it: {v}. That settles {topic}.",
                 "Talked it over at dinner and the verdict on {topic} is {v}."],
    "date": ["{topic} is set for {v}.", "They've put {topic} down for {v}.", "The {label} for {topic} is {v}."],
    "relative_date": ["{topic} is happening {v}.", "They said {v} for {topic}.",
                      "Apparently {topic} should be sorted {v}.", "Expect {topic} {v}, supposedly."],
    "person": ["The {label} for {topic} is {v}.", "I spoke to {v} about {topic} — that's the {label}.",
               "{v} is handling {topic} now, as the {label}."],
    "address": ["The {label} for {topic} is {v}.", "{topic} goes to {v}.", "Address for {topic}: {v}."],
    "contact": ["You can reach them about {topic} at {v}.", "The {label} for {topic} is {v}.",
                "For {topic} the {label} they gave is {v}."],
}
ASST_INTRO = [
    "Done. The {label} for {topic} is {v}.",
    "I've set that up — {label} for {topic}: {v}.",
    "Here you go: {v}. That's the {label} for {topic}.",
    "Confirmed on my side. {cap_topic} now has {label} {v}.",
    "Everything went through, and the {label} for {topic} is {v}.",
]
REQUEST = [
    "Could you sort out the {label} for {topic}?",
    "Can you get me the {label} for {topic}? I don't think I have it yet.",
    "Next thing: I need the {label} for {topic}, whenever you can.",
    "Would you mind handling the {label} side of {topic}?",
    "What's the {label} going to be for {topic}? Can you set that up?",
]
CORRECTION = [
    "Correction on {topic}: the {label} is {v}, not what I told you before.",
    "Oh wait, it's actually {v} — the {label} for {topic}. I misread it earlier.",
    "{v} — that's the right {syn} for {topic}. I gave you the wrong one before, sorry.",
    "Small fix: the {syn} for {topic} should be {v}.",
    "Scratch the earlier {syn} for {topic}; it's now {v}.",
    "Just got an update — {topic} changed, {label} is {v} now.",
    "Hmm, I double-checked and the {syn} for {topic} is really {v}. Please update it.",
    "Ignore what I said about the {label} for {topic}. Make that {v}.",
    "Update on {topic}: {v} is the {syn} from now on.",
    "my mistake, {topic} {syn} = {v}",
    "They changed it. {topic}: {v}, that's the new {syn}.",
    "Heads up, the {syn} for {topic} isn't what I said — it's {v}.",
]
CORRECTION_KIND = {
    "date": ["They moved {topic} to {v}.", "{topic} got rescheduled — it's {v} now.",
             "New date for {topic}: {v}. The old one is off."],
    "relative_date": ["{topic} slipped; now it's {v}.", "They pushed {topic} back, it'll be {v} instead."],
    "person": ["{topic} has been reassigned — {v} is the {syn} now.", "Turns out the {syn} for {topic} is {v}, not the person I mentioned."],
    "amount": ["They revised the figure for {topic}: {v}.", "The {syn} for {topic} came back different, {v}."],
    "decision": ["Change of plan on {topic}: {v}.", "I've reconsidered {topic} — {v} instead."],
    "preference": ["Actually, for {topic} I've changed my mind: {v}.", "Different preference for {topic} now: {v}."],
    "address": ["{topic} goes somewhere else now: {v}.", "They moved — the {syn} for {topic} is {v}."],
}
PROBE = [
    "Sorry, what was the {syn} for {topic} again?",
    "Can you remind me of the {label} we have for {topic}?",
    "I've lost track — {topic}: which {syn} are we working with?",
    "Quick one: what's the current {syn} for {topic}?",
    "What did I tell you the {label} was for {topic}? I need it now.",
    "Do you still have the {syn} for {topic} handy?",
    "remind me the {syn} on {topic}?",
    "Before I forget, could you read me back the {label} for {topic}?",
    "I'm filling in a form and need the {syn} for {topic}. What is it?",
    "Which {syn} did we end up with for {topic}?",
]
PROBE_REPLY = [
    "The {label} for {topic} is {v}.",
    "It's {v} — that's the {label} for {topic}.",
    "You have {v} as the {label} for {topic}.",
    "For {topic}, the {label} I have noted is {v}.",
    "Sure: {v}.",
]
CLOSE = [
    "We can close the book on {topic} — all sorted now.",
    "{topic} is done and dusted, no need to keep tracking it.",
    "Good news, {topic} got resolved this morning. You can forget about it.",
    "Let's drop {topic}; I've decided not to pursue it any further.",
    "Consider {topic} finished. Thanks for the help with it.",
    "Finally! {topic} is completely wrapped up.",
    "No more action needed on {topic}, it's closed.",
    "That's {topic} off the list for good.",
    "{topic}: sorted, finished, over. Let's never speak of it again.",
    "You can archive {topic}. It all worked out in the end.",
]
CLOSE_ACK = [
    "Great, I've marked {topic} as closed.",
    "Glad that one is over — {topic} is off the list.",
    "Noted, {topic} is closed and I won't bring it up again.",
    "Perfect, I'll stop tracking {topic}.",
]
ACK = [
    "Got it, I've noted that for {topic}.",
    "Thanks, that's recorded against {topic}.",
    "Noted — I'll keep that in mind for {topic}.",
    "Okay, updated {topic} with that.",
    "Understood. I've added it to {topic}.",
    "Perfect, that's the piece I needed for {topic}.",
]
CORR_ACK = [
    "No problem, I've replaced the old {label} for {topic} with the new one.",
    "Thanks for catching that — {topic} is updated and the previous {label} is discarded.",
    "Updated. I'll only use the new {label} for {topic} from here on.",
    "Got it, the {label} for {topic} has been corrected.",
]


# ---------------------------------------------------------------------------
# Conversation engine
# ---------------------------------------------------------------------------
class Case:
    def __init__(self, cid, topic, slots, start, closable):
        self.cid, self.topic, self.slots = cid, topic, slots
        self.next_slot, self.next_due = 0, start
        self.closable, self.close_at, self.closed = closable, None, False
        self.facts = []            # fact dicts, in order of introduction


LOWERABLE = {"What", "Can", "Is", "Do", "Could", "Should", "Any", "How", "Quick", "Sorry", "For", "Regarding", "Please",
             "The", "Just", "Okay", "We", "Final", "After", "Talked", "They", "Apparently", "Expect", "Address", "You",
             "Writing", "Found", "Correction", "Oh", "Small", "Scratch", "Update", "Ignore", "Heads", "New", "Change",
             "Different", "Turns", "Next", "Would", "Honestly", "Does", "Did", "Before", "Which", "My", "Good", "Let's",
             "Consider", "Finally!", "No", "That's", "You", "Got", "Went", "Insurer", "Sat", "Handed", "Council", "Everything",
             "Checked", "Flights", "We're", "What's", "Where's", "It's", "Pull", "Run", "Find", "Start", "Look", "Check",
             "CI", "Go", "Something", "Did", "Please,", "Shipped", "QA", "Refund", "Hmm,", "Actually,", "Ugh,", "Have", "Packing", "Why", "Our"}


class TopicView:
    def __init__(self, case, topic):
        self.case, self.topic = case, topic


class Builder:
    def __init__(self, dom, seed):
        self.dom, self.seed = dom, seed
        self.r = random.Random(f"{dom['name']}-{seed}")
        self.msgs, self.facts, self.probes = [], [], []
        self.meta = {}             # fact id -> (case, slot)
        self.used_vals = []        # normalised values
        self.text_norm = []        # normalised text of every message so far

    # -- helpers -------------------------------------------------------------
    def fresh(self, pool, key=lambda x: x):
        """Pick the least-used item of pool (random among ties) so filler repeats as little as possible."""
        uc = self.__dict__.setdefault("use_count", {})
        lo = min(uc.get(key(x), 0) for x in pool)
        x = self.r.choice([x for x in pool if uc.get(key(x), 0) == lo])
        uc[key(x)] = lo + 1
        return x

    def fill(self, tpl, **kw):
        kw.setdefault("cap_topic", cap(kw.get("topic", "")))
        tpl = re.sub(r"(^|[.!?] |: )\{topic\}", lambda m: m.group(1) + "{cap_topic}", tpl)
        out = tpl.format(**kw)
        if tpl.startswith("{v}") or out.startswith(("ok ", "my ", "honestly", "remind", "hmm")):
            return out
        return cap(out)

    def new_value(self, slot):
        for _ in range(200):
            v = unicodedata.normalize("NFC", slot["gen"](self.r))
            nv = norm(v)
            if any(nv in u or u in nv for u in self.used_vals):
                continue
            if any(nv in t for t in self.text_norm):
                continue
            self.used_vals.append(nv)
            return v
        raise RuntimeError("could not find a fresh value for " + slot["key"])

    def user_text(self, core, pad=True):
        r, d = self.r, self.dom
        parts = []
        if r.random() < 0.35:
            op = r.choice(d["openers"])
            parts.append(op)
            first = core.split(" ", 1)[0]
            if op[-1] in ",—:" and not (first == "I" or first.startswith("I'") or first in ("QA", "CI")) \
                    and not any(norm(core).startswith(u) for u in self.used_vals):
                core = core[:1].lower() + core[1:]
        if core and core[-1] not in ".?!…)":
            core += "."
        parts.append(core)
        if pad and r.random() < 0.45:
            parts.append(self.fresh(d["smalltalk"]))
            if r.random() < 0.3:
                parts.append(self.fresh(d["smalltalk"]))
        if pad and r.random() < 0.22:
            parts.append(self.fresh(d["context"] + COMMON_CONTEXT))
        txt = " ".join(parts)
        while wc(txt) < 15:
            txt += " " + self.fresh(d["smalltalk"])
        return txt

    def asst_text(self, core, topic):
        r, d = self.r, self.dom
        txt = core
        extra = [a for a in r.sample(d["advice"], k=len(d["advice"])) if topic or "{topic}" not in a]
        others = [c.topic for c in self.cases if not c.closed and c.next_slot > 0 and c.cid != "profile" and c.topic != topic]
        if others and r.random() < 0.3:
            extra.insert(r.randint(0, 2), r.choice(BRIDGES).replace("{other}", r.choice(others)))
        i = 0
        target = r.randint(45, 110)
        while wc(txt) < target and i < len(extra):
            txt += " " + extra[i].format(topic=topic)
            i += 1
        return txt

    def add(self, m):
        self.msgs.append(m)
        blob = m.get("content", "") + " ".join(c["arguments"] for c in m.get("tool_calls", []))
        self.text_norm.append(norm(blob))
        return len(self.msgs) - 1

    def add_fact(self, case, slot, value, idx):
        fid = f"f{len(self.facts) + 1:02d}"
        f = {"id": fid, "kind": slot["kind"], "value": value, "case": case.cid, "introduced_at": idx,
             "closed_at": None, "superseded_at": None, "superseded_by": None}
        self.facts.append(f)
        self.meta[fid] = (case, slot)
        case.facts.append(f)
        return f

    def is_open(self, f, m):
        return f["introduced_at"] <= m and (f["closed_at"] is None or f["closed_at"] > m) and \
            (f["superseded_at"] is None or f["superseded_at"] > m)

    # -- planning --------------------------------------------------------------
    def plan_cases(self):
        r, d = self.r, self.dom
        cases = []
        prof = [dict(s) for s in d["profile"]]
        r.shuffle(prof)
        pc = Case("profile", d["profile_topic"], prof, r.randint(0, 12), False)
        pc.gap = (15, 70)
        cases.append(pc)
        types = list(d["case_types"])
        n_cases = r.randint(9, 11)
        chosen = []
        while len(chosen) < n_cases:
            r.shuffle(types)
            chosen.extend(types)
        chosen = chosen[:n_cases]
        starts = sorted([r.randint(0, 6)] + [r.randint(0, 380) for _ in chosen[1:]])
        counters, used_topics = {}, set()
        for ct, st in zip(chosen, starts):
            topic = r.choice([t for t in ct["topics"] if t not in used_topics] or ct["topics"])
            used_topics.add(topic)
            counters[ct["case"]] = counters.get(ct["case"], 0) + 1
            cid = f"{ct['case']}-{counters[ct['case']]}"
            slots = [s for s in apply_topic_pools(ct["case"], topic, ct["slots"]) if s.get("req") or r.random() < 0.8]
            c = Case(cid, topic, slots, st, r.random() < 0.72)
            c.gap = (2, 28)
            c.close_tpl = ct.get("close", [])
            cases.append(c)
        self.cases = cases

    # -- turn builders -----------------------------------------------------------
    def block_user_asst(self, utext, atext):
        ui = self.add({"role": "user", "content": utext})
        ai = self.add({"role": "assistant", "content": atext})
        return ui, ai

    def tool_block(self, k, topic, fact_slot=None, value=None):
        """assistant(tool_calls) + k tool messages + plain assistant. Returns (call_idx, tool_idxs)."""
        d, r = self.dom, self.r
        calls, outs = [], []
        inject_at = r.randrange(k) if fact_slot else -1
        for j in range(k):
            if j == inject_at:
                name = fact_slot["tool"]
            else:
                name = r.choice(d["tool_names"])
            cid = f"call_{rand_alnum(r, 10, 'abcdefghijklmnopqrstuvwxyz0123456789')}"
            args, out = d["tool_fn"](r, name, value if j == inject_at else None,
                                     fact_slot["speaker"] if j == inject_at else None)
            calls.append({"id": cid, "name": name, "arguments": json.dumps(args, ensure_ascii=False)})
            outs.append((cid, out))
        pre = self.asst_text(r.choice(d["tool_preambles"]).format(topic=topic), topic)
        ci = self.add({"role": "assistant", "content": pre, "tool_calls": calls})
        tis = [self.add({"role": "tool", "tool_call_id": cid, "content": out}) for cid, out in outs]
        post = self.asst_text(r.choice(d["tool_summaries"]).format(topic=topic), topic)
        self.add({"role": "assistant", "content": post})
        return ci, tis

    def maybe_tools(self, topic):
        """For agentic domains: sometimes insert a no-fact tool block after a user turn."""
        d = self.dom
        if not d.get("tool_fn"):
            return False
        rem = N_MSG - len(self.msgs)
        if self.r.random() < d.get("tool_rate", 0) and rem >= 8:
            self.tool_block(self.r.choice([1, 1, 1, 3]), topic)
            return True
        return False

    # -- main loop -------------------------------------------------------------
    def build(self):
        r, d = self.r, self.dom
        self.plan_cases()
        n_probe = r.randint(8, 12)
        step = 385 // n_probe
        probe_targets = [100 + step * k + r.randint(0, step * 2 // 3) for k in range(n_probe)]
        probe_targets = [p for p in probe_targets if p < 494]
        corr_targets = sorted(r.sample(range(30, 470), r.randint(6, 8)))
        probed = set()
        n_corr = 0
        while len(self.msgs) < N_MSG:
            i = len(self.msgs)
            rem = N_MSG - i
            active = [c for c in self.cases if c.next_due <= i and not c.closed]
            done = False
            # 1. probe
            if probe_targets and i >= probe_targets[0]:
                cands = [f for f in self.facts if self.is_open(f, i) and f["introduced_at"] <= i - 60
                         and f["id"] not in probed]
                if cands:
                    kinds_probed = [self.meta[p][1]["kind"] for p in probed]
                    cands.sort(key=lambda f: (kinds_probed.count(f["kind"]), r.random()))
                    f = cands[0]
                    case, slot = self.meta[f["id"]]
                    tp = slot.get("topic", case.topic)
                    syn = r.choice(slot["labels"])
                    u = self.user_text(self.fill(r.choice(PROBE), syn=syn, label=slot["labels"][0], topic=tp))
                    a = self.asst_text(self.fill(r.choice(PROBE_REPLY), v=f["value"], label=syn,
                                                 topic=tp), tp)
                    ui, _ = self.block_user_asst(u, a)
                    self.probes.append({"at": ui, "fact_id": f["id"]})
                    probed.add(f["id"])
                    probe_targets.pop(0)
                    done = True
                elif i > probe_targets[0] + 30:
                    probe_targets.pop(0)
            # 2. closure
            if not done:
                due = [c for c in self.cases if c.close_at is not None and c.close_at <= i and not c.closed]
                if due and r.random() < 0.7:
                    c = due[0]
                    tpl = r.choice(CLOSE + getattr(c, "close_tpl", []))
                    ui, _ = self.block_user_asst(self.user_text(self.fill(tpl, topic=c.topic)),
                                                 self.asst_text(self.fill(r.choice(CLOSE_ACK), topic=c.topic), c.topic))
                    for f in c.facts:
                        if f["introduced_at"] < ui and f["closed_at"] is None:
                            f["closed_at"] = ui
                    c.closed = True
                    done = True
            # 3. correction
            if not done and n_corr < len(corr_targets) and i >= corr_targets[n_corr] and rem > 6:
                cands = [f for f in self.facts if self.is_open(f, i) and f["introduced_at"] <= i - 8
                         and self.meta[f["id"]][1].get("correct", True)]
                if cands:
                    f = r.choice(cands)
                    case, slot = self.meta[f["id"]]
                    tp = slot.get("topic", case.topic)
                    v = self.new_value(slot)
                    syn = r.choice(slot["labels"])
                    tpl = r.choice(CORRECTION + CORRECTION_KIND.get(slot["kind"], []) * 2)
                    u = self.user_text(self.fill(tpl, v=v, syn=syn, label=slot["labels"][0], topic=tp))
                    a = self.asst_text(self.fill(r.choice(CORR_ACK), label=syn, topic=tp), tp)
                    ui, _ = self.block_user_asst(u, a)
                    nf = self.add_fact(case, slot, v, ui)
                    f["superseded_at"], f["superseded_by"] = ui, nf["id"]
                    n_corr += 1
                    done = True
            # 4. introduction
            if not done and active:
                pending = [c for c in active if c.next_slot < len(c.slots)]
                backlog = sum(len(c.slots) - c.next_slot for c in self.cases)
                p = 0.55 if backlog * 5 < rem else 0.95
                if pending and r.random() < p and rem >= 8:
                    c = r.choice(pending)
                    slot = c.slots[c.next_slot]
                    self.introduce(c, slot)
                    c.next_slot += 1
                    c.next_due = len(self.msgs) + r.randint(*c.gap)
                    if c.next_slot == len(c.slots) and c.closable:
                        c.close_at = len(self.msgs) + r.randint(20, 110)
                        if c.close_at > 480:
                            c.close_at = None
                    done = True
            # 5. filler
            if not done:
                live = [c for c in self.cases if not c.closed and c.next_slot > 0 and c.cid != "profile"]
                if not live or r.random() < 0.2:
                    q, a = self.fresh(d["chat"] + COMMON_CHAT)
                    self.block_user_asst(self.user_text(q), self.asst_text(a, None))
                    continue
                c, (q, a) = self.fresh([(c, qa) for c in live for qa in d["qa"] + COMMON_QA],
                                       key=lambda x: (x[0].cid, x[1][0]))
                u = self.user_text(q.format(topic=c.topic))
                ui = self.add({"role": "user", "content": cap(u)})
                if not (rem >= 10 and self.maybe_tools(c.topic)):
                    self.add({"role": "assistant", "content": self.asst_text(cap(a.format(topic=c.topic)), c.topic)})
        return self.finish()

    def introduce(self, case, slot):
        r, d = self.r, self.dom
        c = TopicView(case, slot.get("topic", case.topic))
        label = slot["labels"][0]
        sp = slot["speaker"]
        if sp == "user":
            v = self.new_value(slot)
            tpls = slot.get("intro") or (INTRO_GENERIC + INTRO_KIND.get(slot["kind"], []) * 2)
            u = self.user_text(self.fill(r.choice(tpls), v=v, label=label, topic=c.topic))
            a = self.asst_text(self.fill(r.choice(ACK), topic=c.topic), c.topic)
            ui, _ = self.block_user_asst(u, a)
            self.add_fact(case, slot, v, ui)
        elif sp == "assistant":
            v = self.new_value(slot)
            u = self.user_text(self.fill(r.choice(slot.get("request") or REQUEST), label=label, topic=c.topic))
            a = self.asst_text(self.fill(r.choice(slot.get("intro") or ASST_INTRO), v=v, label=label,
                                         topic=c.topic), c.topic)
            _, ai = self.block_user_asst(u, a)
            self.add_fact(case, slot, v, ai)
        else:  # "tool" (value in a tool output) or "args" (value in the call arguments)
            v = self.new_value(slot)
            u = self.user_text(self.fill(r.choice(TOOL_REQUEST.get(slot["key"]) or REQUEST), label=label, topic=c.topic))
            self.add({"role": "user", "content": u})
            ci, tis = self.tool_block(r.choice([1, 1, 3]), c.topic, slot, v)
            if sp == "args":
                idx = ci
            else:
                idx = next(t for t in tis if norm(v) in norm(self.msgs[t]["content"]))
            self.add_fact(case, slot, v, idx)

    def finish(self):
        return {"id": f"{self.dom['name']}-{self.seed}", "domain": self.dom["name"], "split": "fresh",
                "seed": self.seed, "messages": self.msgs, "facts": self.facts, "probes": self.probes,
                "checkpoints": CHECKPOINTS}


# ---------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------
def msg_blob(m):
    return m.get("content", "") + " " + " ".join(c["arguments"] for c in m.get("tool_calls", []))


def validate(conv, strict_counts=True):
    errs = []
    msgs, facts, probes = conv["messages"], conv["facts"], conv["probes"]
    E = errs.append
    if len(msgs) != N_MSG:
        E(f"len {len(msgs)}")
    # structure
    i = 0
    while i < len(msgs):
        m = msgs[i]
        role = m["role"]
        if role not in ("user", "assistant", "tool"):
            E(f"{i} bad role")
        w = wc(m["content"])
        if role == "user" and not 15 <= w <= 120:
            E(f"{i} user words {w}")
        if role == "assistant" and not 40 <= w <= 250:
            E(f"{i} assistant words {w}")
        if role == "tool":
            E(f"{i} orphan tool message")
        if "tool_calls" in m:
            if role != "assistant":
                E(f"{i} tool_calls on non-assistant")
            for j, c in enumerate(m["tool_calls"]):
                json.loads(c["arguments"])
                t = msgs[i + 1 + j] if i + 1 + j < len(msgs) else None
                if not t or t["role"] != "tool" or t.get("tool_call_id") != c["id"]:
                    E(f"{i} call {j} not followed by its tool result")
                elif wc(t["content"]) < 60:
                    E(f"{i + 1 + j} tool output too short")
            nxt = i + 1 + len(m["tool_calls"])
            if nxt >= len(msgs) or msgs[nxt]["role"] != "assistant" or "tool_calls" in msgs[nxt]:
                E(f"{i} tool block not closed by plain assistant")
            i = nxt
            continue
        i += 1
    nblobs = [norm(msg_blob(m)) for m in msgs]
    # facts
    if strict_counts and not 40 <= len(facts) <= 80:
        E(f"fact count {len(facts)}")
    ids = {f["id"]: f for f in facts}
    nvals = [norm(f["value"]) for f in facts]
    for a in range(len(facts)):
        for b in range(len(facts)):
            if a != b and nvals[a] in nvals[b]:
                E(f"value {facts[a]['id']} inside {facts[b]['id']}")
    probe_reply = {}
    for p in probes:
        probe_reply.setdefault(p["fact_id"], set()).add(p["at"] + 1)
    kinds = set()
    for f, nv in zip(facts, nvals):
        kinds.add(f["kind"])
        if f["kind"] not in ALL_KINDS:
            E(f"{f['id']} kind {f['kind']}")
        ia = f["introduced_at"]
        if nv not in nblobs[ia]:
            E(f"{f['id']} value not in introducing message")
        if f["value"] not in msg_blob(msgs[ia]) and json.dumps(f["value"], ensure_ascii=False)[1:-1] not in msg_blob(msgs[ia]):
            E(f"{f['id']} value not verbatim (case-sensitive) in introducing message")
        allowed = {ia} | probe_reply.get(f["id"], set())
        for k, b in enumerate(nblobs):
            if k not in allowed and nv in b:
                E(f"{f['id']} value {f['value']!r} also in message {k}")
        if f["superseded_by"]:
            nf = ids[f["superseded_by"]]
            if f["superseded_at"] != nf["introduced_at"] or msgs[nf["introduced_at"]]["role"] != "user":
                E(f"{f['id']} bad supersession")
            if nf["kind"] != f["kind"] or nf["case"] != f["case"]:
                E(f"{f['id']} supersession changes kind/case")
        elif f["superseded_at"] is not None:
            E(f"{f['id']} superseded_at without superseded_by")
        if f["closed_at"] is not None:
            ca = f["closed_at"]
            if msgs[ca]["role"] != "user" or ca <= ia:
                E(f"{f['id']} bad closed_at")
            for g in facts:
                if g["case"] == f["case"] and g["introduced_at"] < ca and g["closed_at"] != ca:
                    E(f"{g['id']} not closed with its case at {ca}")
    n_corr = sum(1 for f in facts if f["superseded_by"])
    if strict_counts and n_corr < 5:
        E(f"only {n_corr} corrections")
    if strict_counts and set(ALL_KINDS) - kinds:
        E(f"missing kinds {set(ALL_KINDS) - kinds}")

    def is_open(f, m):
        return f["introduced_at"] <= m and (f["closed_at"] is None or f["closed_at"] > m) and \
            (f["superseded_at"] is None or f["superseded_at"] > m)
    n_open_end = sum(is_open(f, N_MSG - 1) for f in facts)
    if strict_counts and not 10 <= n_open_end <= 30:
        E(f"open at end {n_open_end}")
    if strict_counts and not 8 <= len(probes) <= 12:
        E(f"probe count {len(probes)}")
    for p in probes:
        f, at = ids[p["fact_id"]], p["at"]
        if not 100 <= at <= 499 or msgs[at]["role"] != "user":
            E(f"probe at {at} bad position")
        if not is_open(f, at) or f["introduced_at"] > at - 60:
            E(f"probe at {at} fact {f['id']} not open / too recent")
        if norm(f["value"]) in nblobs[at]:
            E(f"probe at {at} leaks value")
        if at + 1 >= len(msgs) or msgs[at + 1]["role"] != "assistant" or norm(f["value"]) not in nblobs[at + 1]:
            E(f"probe at {at} reply lacks value")
    for f in facts:   # NFC: values as stored should already be NFC
        if unicodedata.normalize("NFC", f["value"]) != f["value"]:
            E(f"{f['id']} value not NFC")
    return errs


# ---------------------------------------------------------------------------
# Domain definitions
# ---------------------------------------------------------------------------
def S(key, kind, labels, gen=None, speaker="user", correct=True, req=False, **kw):
    d = dict(key=key, kind=kind, labels=labels, gen=gen or GEN[kind], speaker=speaker,
             correct=correct, req=req)
    d.update(kw)
    return d


def amt(lo, hi):
    return lambda r: g_amount(r, lo, hi)


COMMON_SMALLTALK = [
    "Sorry, typing this on my phone on the bus.", "It's been pouring all day here.",
    "The cat just walked across my keyboard, apologies.", "Long week, honestly.",
    "Coffee number three, so bear with me.", "I'm between meetings so this will be quick.",
    "My neighbour is drilling again, I can barely think.", "Thanks for being patient with me on all this.",
    "Anyway, hope your day's going better than mine.", "I keep losing the thread with everything going on.",
    "The kids are finally asleep so I have a minute.", "Just back from a run, still catching my breath.",
    "Writing this from the train, signal is patchy.", "Sorry if I repeat myself, lots of tabs open.",
    "Weather is gorgeous today for once.", "I promise I'm more organised than this sounds.",
]

SUPPORT = dict(
    name="customer_support",
    profile_topic="my customer account",
    profile=[
        S("home", "address", ["home address", "default shipping address", "address on file"], topic="my account"),
        S("phone", "contact", ["phone number", "callback number", "mobile"], topic="my account"),
        S("pref", "preference", ["delivery preference", "standing request", "delivery constraint"],
          pick(["no deliveries before 10am", "leave parcels with the neighbour at no. 12", "text me instead of calling",
                "paper invoices, never e-mail only", "English or Portuguese only on the phone",
                "no signature-required couriers on weekdays"]), topic="deliveries to me"),
        S("partner", "person", ["authorised pickup person", "authorised collector", "second account holder"], topic="my account"),
        S("loyalty", "identifier", ["loyalty card number", "membership number", "rewards ID"],
          fmt("KH-{d4}-{d4}-{d2}", "LOY{d9}", "{A4}-{A4}-{A4}"), topic="my account"),
    ],
    case_types=[
        dict(case="order", topics=["the espresso machine order", "the standing desk order", "my headphones order",
                                   "the order for the kids' bikes", "the garden furniture order", "the kettle and toaster bundle"],
             slots=[S("ord", "identifier", ["order number", "order ref", "order ID"], fmt("#A-{d5}-UK", "KH{d8}", "ord_{a4}{d4}", "{d3}-{d7}-{d7}"), req=True),
                    S("trk", "identifier", ["tracking number", "parcel tracking code", "shipment ID"],
                      fmt("1Z {A3} {A3} {d2} {d4} {d3}{d1}", "JD0146{d8}{d4}", "CX{d9}DE", "{d4} {d4} {d4} {d4}"), speaker="assistant", correct=False),
                    S("qty", "quantity", ["number of items", "quantity", "item count"],
                      pick(["2 units", "three boxes", "x4", "a pack of 6", "5 pieces", "1 of the 3 cartons", "12 bottles", "two sets of four"])),
                    S("eta", "relative_date", ["expected delivery", "delivery estimate", "ETA"]),
                    S("deladdr", "address", ["delivery address", "drop-off address", "shipping address"])],
             close=["The parcel for {topic} finally turned up today, everything intact.", "Got it! {topic} arrived, box a bit dented but fine."]),
        dict(case="return", topics=["the return of the blue sneakers", "returning the faulty blender", "the air fryer return",
                                    "the return for the wool coat", "sending back the cracked monitor"],
             slots=[S("rma", "identifier", ["return authorisation number", "RMA", "return code"], fmt("RMA-{d6}", "R{d3}-{A4}", "RET/{d4}/{d5}"), speaker="assistant", req=True),
                    S("refund", "amount", ["refund amount", "refund", "money owed back"], amt(15, 900)),
                    S("refpref", "preference", ["refund preference", "refund channel", "refund method"],
                      pick(["refund to the original card", "store credit is fine", "bank transfer only, no vouchers",
                            "PayPal rather than card", "exchange for the next size up"])),
                    S("pickup", "date", ["courier pickup date", "collection date", "pickup day"])],
             close=["The money for {topic} landed in my account, so that's done.", "Refund received for {topic}, all good."]),
        dict(case="billing", topics=["the double charge on my card", "the March invoice dispute", "the wrong VAT on my invoice",
                                     "the subscription billing mix-up", "the duplicate direct debit"],
             slots=[S("inv", "identifier", ["invoice number", "invoice no.", "bill reference"], fmt("INV/2026/{d5}", "FA-{d4}-{d4}", "{d4}-{A3}-{d3}", "RE{d7}"), req=True),
                    S("charged", "amount", ["amount charged", "charge", "amount debited"], amt(9, 1500)),
                    S("iban", "identifier", ["IBAN for the refund", "bank account", "IBAN"], g_iban),
                    S("case", "identifier", ["case number", "dispute reference", "ticket number"], fmt("CS-2026-{d6}", "CASE#{d7}", "DSP {d3} {d3} {d3}"), speaker="assistant", correct=False),
                    S("dec", "decision", ["decision", "plan", "course of action"],
                      pick(["escalate to a formal complaint", "accept the partial credit", "cancel the subscription entirely",
                            "switch to annual billing", "dispute it through my bank", "wait for the next statement before acting"]))]),
        dict(case="account", topics=["my account lockout", "the login problem on the app", "the email change on my account",
                                     "the two-factor reset", "the password reset loop"],
             slots=[S("err", "technical", ["error code", "error message", "error"],
                      pick(["ERR_AUTH_0x1F4", "error 0x80070643", "'token expired (code 4012)'", "E-LOGIN-77",
                            "SSL_ERROR_BAD_CERT_DOMAIN", "HTTP 429 Too Many Requests", "AUTH-RATE-LIMIT-3"]), req=True),
                    S("appver", "technical", ["app version", "version of the app", "build number"],
                      fmt("4.{n20}.{n9} (build {d4})", "v{n9}.{n30}.{n9}-android", "iOS app {n9}.{n9}.{n9}")),
                    S("backup", "contact", ["backup e-mail", "recovery address", "secondary e-mail"],
                      lambda r: f"{r.choice(EMAIL_LOCAL)}{r.randint(2, 99)}@{r.choice(EMAIL_DOM)}"),
                    S("agent", "person", ["agent", "support rep", "support agent"]),
                    S("tkt", "identifier", ["ticket number", "support ticket", "reference"], fmt("TCK-{d6}", "#{d5}-{A2}", "SR{d8}"), speaker="assistant", correct=False)]),
        dict(case="warranty", topics=["the warranty repair on the TV", "the laptop warranty claim", "the washing machine repair",
                                      "the robot vacuum warranty", "the dishwasher that won't drain"],
             slots=[S("serial", "identifier", ["serial number", "serial", "S/N"], fmt("SN: C02{A7}", "{A2}{d10}", "WM-{d4}-{A5}", "S/N {A3}{d6}"), req=True),
                    S("tech", "person", ["technician", "engineer", "repair person"]),
                    S("visit", "date", ["visit date", "appointment date", "repair date"]),
                    S("quote", "amount", ["repair quote", "quoted cost", "estimate"], amt(40, 700)),
                    S("wdec", "decision", ["decision", "choice", "call"],
                      pick(["repair rather than replace", "take the replacement unit", "pay for the extended warranty",
                            "ask for a full refund instead", "get a second opinion first"]))]),
    ],
    openers=["Hi again.", "Hello!", "Morning.", "Hey, me again.", "Hi there,", "Good evening.", "Okay, next thing."],
    smalltalk=COMMON_SMALLTALK + ["Your hold music yesterday was something else, by the way.", "I've had better months as a customer, let's say.",
                                  "My inbox is 90% your shipping notifications at this point.", "Still cheaper than going to the shop, I suppose."],
    questions=["Any idea how long {topic} usually takes to move along?", "Is there anything else you need from me on {topic}?",
               "Do I need to print anything for {topic}?", "Should I worry that nothing has changed on {topic} for days?",
               "What happens if {topic} drags on past the end of the month?", "Is it normal that the app shows nothing for {topic}?",
               "Can you tell me what the next step is for {topic}?", "I got a weird automated e-mail about {topic}. Should I ignore it?",
               "Would calling instead of chatting speed up {topic}?", "Is there a way to get notifications about {topic}?",
               "Honestly, is {topic} going to be worth the hassle?", "Can someone else in my household deal with {topic} if I'm away?"],
    answers=["Good question about {topic}. These usually move within a few working days once the warehouse team picks them up.",
             "For {topic}, nothing more is needed from you right now; I'll flag it if that changes.",
             "You don't need to print anything for {topic}; everything is handled digitally on our side.",
             "A quiet spell on {topic} isn't unusual; the status only updates when something physical happens.",
             "If {topic} runs past month end, it simply carries over and you keep all your rights.",
             "Automated e-mails about {topic} are generated by the system and are safe to ignore unless they ask for action."],
    advice=["I'll keep an eye on {topic} and update you as soon as anything changes.",
            "If you get any e-mail that asks for card details, please don't reply to it; we never ask that way.",
            "Status pages sometimes lag a day behind what the warehouse actually does.",
            "You can also check progress in the Orders tab of the app, under Recent activity.",
            "Let me know if any other details change so we keep everything consistent.",
            "Our returns policy gives you thirty days from delivery, so there's no rush on that front.",
            "I've added a short note to your account so any colleague can pick this up.",
            "Weekends are slower for couriers, so expect a small delay there.",
            "If anything looks off, screenshots help a lot when we escalate.",
            "Thanks for bearing with us on this one.", "Is there anything else I can look at while we're here?",
            "Refunds usually show up three to five banking days after they're issued.",
            "I know it's tedious, but keeping everything in one thread makes it much easier to follow."],
)

TRAVEL = dict(
    name="travel_planning",
    profile_topic="my traveller profile",
    profile=[
        S("ff", "identifier", ["frequent flyer number", "miles number", "loyalty number"], fmt("LH {d3} {d3} {d3} {d3}", "BA{d8}", "FB {d9}", "MM-{d10}"), topic="my airline account"),
        S("pass", "identifier", ["passport number", "passport no.", "travel document number"], fmt("C{A8}", "{d2}{A2}{d5}", "P<{A7}"), topic="my passport"),
        S("seatpref", "preference", ["seat preference", "seating preference", "preferred seat"],
          pick(["aisle seat, left side", "window seat over the wing", "never the last row", "bulkhead if there's a bassinet",
                "exit row whenever possible"]), topic="flights"),
        S("diet", "preference", ["dietary requirement", "meal preference", "food restriction"],
          pick(["strictly vegetarian, no fish", "halal meals only", "gluten-free (coeliac)", "no nuts at all", "low-sodium meals"]), topic="meals on this trip"),
        S("emerg", "contact", ["emergency contact number", "emergency contact", "ICE number"], topic="the trip paperwork"),
        S("companion", "person", ["travel companion", "travel buddy", "co-traveller"], topic="the trip"),
    ],
    case_types=[
        dict(case="flight", topics=["the Lisbon flights", "the flight to Osaka", "the Bogotá connection", "our flight home from Athens",
                                    "the Reykjavík hop", "the Nairobi flights"],
             slots=[S("pnr", "identifier", ["booking reference", "PNR", "confirmation code"], fmt("{A6}", "{A3}{d3}"), speaker="assistant", req=True),
                    S("etkt", "identifier", ["e-ticket number", "ticket number", "e-ticket"], fmt("{d3}-{d10}", "{d3} {d4} {d6}")),
                    S("dep", "date", ["departure date", "outbound date", "flight date"]),
                    S("fare", "amount", ["fare", "ticket price", "total fare"], amt(80, 2400)),
                    S("pax", "quantity", ["number of passengers", "passenger count", "headcount"],
                      pick(["2 adults + 1 infant", "four passengers", "3 adults, 2 kids", "just the two of us", "party of 5", "1 adult and a lap child"]))],
             close=["We landed, {topic} is behind us now.", "Flights done — {topic} can come off the list."]),
        dict(case="hotel", topics=["the hotel in Porto", "our ryokan stay in Kyoto", "the riad in Marrakech", "the Cape Town guesthouse",
                                   "the hotel near Termini", "the apartment in Ljubljana"],
             slots=[S("hconf", "identifier", ["hotel confirmation number", "reservation number", "booking number"], fmt("{d10}", "HTL-{A5}-{d2}", "#{d4}.{d3}.{d3}"), req=True),
                    S("haddr", "address", ["hotel address", "property address", "street address"]),
                    S("rooms", "quantity", ["number of rooms", "room count", "rooms booked"],
                      pick(["2 double rooms", "one family suite", "3 rooms (two twins, one king)", "a single room plus a cot", "two connecting rooms"])),
                    S("cin", "date", ["check-in date", "arrival day", "check-in"]),
                    S("rate", "amount", ["nightly rate", "price per night", "room rate"], amt(45, 420))],
             close=["Checked out of {topic} this morning, all paid up.", "{topic} is cancelled for good, refund confirmed."]),
        dict(case="car", topics=["the car hire in Faro", "the campervan rental", "the rental car in Crete", "the car for the Ring Road"],
             slots=[S("carres", "identifier", ["rental reservation", "car hire reference", "rental confirmation"], fmt("RA{d9}", "{A2}-{d6}-{A1}", "K{d4}{A4}"), req=True),
                    S("pickupdesk", "address", ["pickup location", "rental desk address", "collection point"]),
                    S("carcat", "preference", ["car requirement", "vehicle requirement", "vehicle constraint"],
                      pick(["automatic transmission only", "something with a big boot for two suitcases", "diesel, not electric",
                            "4x4 for the gravel roads", "child seat for a 3-year-old"])),
                    S("deposit", "amount", ["security deposit", "deposit hold", "excess amount"], amt(200, 2500)),
                    S("ret", "relative_date", ["return time", "drop-off day", "return deadline"])]),
        dict(case="excursion", topics=["the whale-watching trip", "the Douro wine tour", "the Fushimi Inari guided walk",
                                       "the sunrise hot-air balloon", "the glacier hike", "the cooking class in Hoi An"],
             slots=[S("guide", "person", ["guide", "tour leader", "host"], req=True),
                    S("meet", "address", ["meeting point", "rendezvous point", "start location"]),
                    S("excdate", "relative_date", ["day of the tour", "tour date", "tour day"]),
                    S("tickets", "quantity", ["number of tickets", "places booked", "spots"],
                      pick(["6 tickets", "two spots", "4 places, one concession", "eight seats", "3 adult passes"])),
                    S("opcontact", "contact", ["operator's contact", "tour company number", "their WhatsApp"])]),
        dict(case="admin", topics=["the visa application", "the travel insurance", "the eSIM setup", "the airport transfer"],
             slots=[S("admid", "identifier", ["application number", "policy number", "reference"], fmt("VISA-{d4}-{A6}", "TI/{d6}/{d2}", "{g}".replace("{g}", "{h8}-{h4}")), req=True),
                    S("tech", "technical", ["setting", "technical detail", "config value"],
                      pick(["APN internet.vodafone.pt", "eSIM activation code LPA:1$smdp.example$X7Q2", "roaming profile 'EU+ 5G'",
                            "port 5060 blocked by hotel Wi-Fi", "app error 'seat map unavailable (SM-409)'"])),
                    S("admdec", "decision", ["decision", "plan", "agreed plan"],
                      pick(["buy the premium cover with cancellation", "skip the eSIM and use a local SIM", "book the shuttle, not a taxi",
                            "apply for the multiple-entry visa", "go with the annual multi-trip policy"])),
                    S("admfee", "amount", ["fee", "cost", "price"], amt(12, 350))]),
    ],
    openers=["Hi!", "Okay, trip stuff again.", "Morning from the office.", "Hey.", "Back again with more planning."],
    smalltalk=COMMON_SMALLTALK + ["I've got about forty browser tabs of reviews open.", "My partner keeps sending me TikToks of street food.",
                                  "Can't believe how fast this year is going.", "I really need this holiday."],
    questions=["Is it worth paying extra for flexibility on {topic}?", "What should I double-check about {topic} before we go?",
               "Do you think {topic} is a good idea with kids?", "How early should I sort out {topic}?",
               "Any tips for {topic} that people usually miss?", "Would you change anything about {topic}?",
               "Is tipping expected for {topic}?", "What happens with {topic} if there's a strike?",
               "Should I screenshot everything for {topic} in case there's no signal?", "Is {topic} refundable, do you think?"],
    answers=["For {topic}, flexibility is usually worth it if your dates might move at all.",
             "With {topic}, double-check names match the passports exactly and that times are local.",
             "{topic} generally works fine with kids as long as you build in buffer time.",
             "I'd sort out {topic} a few weeks ahead; prices tend to creep up closer to the date.",
             "People often forget that {topic} may need printed confirmation at the desk.",
             "In case of a strike, {topic} is normally rebooked free of charge, but keep receipts."],
    advice=["Saving offline copies of every confirmation is a good habit.", "Local holidays can change opening hours, so worth a check.",
            "Travel insurance that covers cancellation is worth comparing.", "Let me know if dates shift so I can re-plan around them.",
            "I can also draft a day-by-day outline once the bookings are firm.", "Keep some cash in local currency for small places.",
            "Check-in windows open earlier than most people expect.", "Time zones will matter for the connections, so I'm keeping that in mind.",
            "A shared folder for documents saves a lot of stress at the airport.", "I'll keep everything for {topic} in one place for you.",
            "Happy to compare alternatives if anything falls through.", "Remember adapters and a power bank for long transit days."],
)

TUTORING = dict(
    name="tutoring",
    profile_topic="my studies",
    profile=[
        S("school", "address", ["school address", "school location", "campus address"], topic="my school"),
        S("parent", "contact", ["parent's contact", "mum's phone number", "guardian contact"], topic="my parents"),
        S("style", "preference", ["learning preference", "learning style", "study preference"],
          pick(["worked examples before any theory", "short sessions with breaks every 25 minutes", "diagrams over long text",
                "explain it like I'm twelve first", "practice questions straight away, theory later"]), topic="our sessions"),
        S("sid", "identifier", ["student ID", "candidate number", "student number"], fmt("s{d7}", "CAND-{d4}", "{d2}-{d5}-{A1}"), topic="exam registration"),
        S("fee", "amount", ["session fee", "hourly rate", "price per session"], amt(15, 80), topic="the tutoring"),
    ],
    case_types=[
        dict(case="exam", topics=["the calculus mock exam", "the chemistry final", "the IB Physics paper 2", "the A-level Further Maths exam",
                                  "the SAT retake", "the Abitur maths exam"],
             slots=[S("edate", "date", ["exam date", "date of the exam", "day of the test"], req=True),
                    S("eroom", "address", ["exam venue", "exam hall location", "test centre"]),
                    S("score", "quantity", ["mock score", "last test score", "practice mark"],
                      pick(["34/50", "62%", "grade 5 (just)", "B- with 71 points", "1180 total", "14 out of 20", "7,5 sur 20", "Note 2,3"])),
                    S("target", "quantity", ["target score", "goal", "required grade"],
                      pick(["at least an A*", "a 7 to get into the course", "1400+", "above 85 per cent", "16/20 minimum"])),
                    S("teacher", "person", ["teacher", "subject teacher", "examiner"])],
             close=["Sat {topic} today! Results later, but it's done.", "{topic} is over, I survived it."]),
        dict(case="assignment", topics=["the lab report on titration", "the essay on Things Fall Apart", "the Python coursework",
                                        "the history source analysis", "the statistics project on sleep data", "the French oral presentation"],
             slots=[S("aid", "identifier", ["assignment code", "assignment number", "coursework ID"], fmt("ASG-{d3}", "CW{d2}/{A2}", "Unit {n9} Task {n6}", "HW-{d4}"), req=True),
                    S("due", "relative_date", ["deadline", "due date", "hand-in"]),
                    S("tech", "technical", ["formula", "method", "key technique"],
                      pick(["np.linalg.solve(A, b)", "\\frac{dy}{dx} = 3x^2 - 4", "pandas df.groupby('night').mean()", "V = nRT / P",
                            "=VLOOKUP(B2,Sheet2!A:C,3,FALSE)", "for i in range(len(xs) - 1):", "pH = -log10[H+]", "\\usepackage{siunitx}"])),
                    S("words", "quantity", ["word limit", "length", "page limit"],
                      pick(["2,500 words max", "1500 mots", "12 pages double-spaced", "800–1000 words", "4 A4 pages"])),
                    S("adec", "decision", ["plan", "approach", "decision"],
                      pick(["write the conclusion first", "use the 2019 dataset instead", "focus on Okonkwo's pride as the theme",
                            "switch to a bar chart", "drop the second experiment", "present in French without notes"]))],
             close=["Handed in {topic} last night, finally.", "{topic} is submitted, no more edits."]),
        dict(case="application", topics=["the university application", "the summer school application", "the scholarship form",
                                          "the exchange-year application"],
             slots=[S("appid", "identifier", ["application ID", "UCAS ID", "application reference"], fmt("{d3}-{d3}-{d4}", "APP{d8}", "{A3}-{d6}"), req=True),
                    S("refperson", "person", ["referee", "recommender", "reference writer"]),
                    S("appfee", "amount", ["application fee", "fee", "application cost"], amt(20, 150)),
                    S("interview", "date", ["interview date", "interview day", "interview"]),
                    S("portal", "contact", ["portal link", "admissions e-mail", "contact for admissions"])]),
        dict(case="admin", topics=["rescheduling our sessions", "the online whiteboard setup", "the revision timetable", "the textbook order"],
             slots=[S("slot", "relative_date", ["next session", "session time", "next meeting"], req=True),
                    S("tool", "technical", ["online tool link", "setting", "software bit"],
                      pick(["meet.example.org/room/kx-77", "Zoom ID 831 2290 4471", "OneNote section 'Mechanics'", "Excalidraw room #q9Lm", "Anki deck 'Orgo v3'"])),
                    S("hours", "quantity", ["hours per week", "weekly hours", "study hours"],
                      pick(["6 hours a week", "two 90-minute blocks", "45 minutes daily", "10 h/week in April"])),
                    S("mdec", "decision", ["decision", "plan", "agreed change"],
                      pick(["move to Saturdays", "stop using the textbook and use past papers", "add a weekly quiz", "keep it online only"]))]),
    ],
    openers=["Hi!", "hey", "Hello, new session.", "Hi, I'm back.", "Okay so", "Good afternoon!"],
    smalltalk=COMMON_SMALLTALK + ["School was exhausting today.", "I had football practice so I'm a bit tired.",
                                  "My sister keeps stealing my calculator.", "I actually did some revision this weekend!"],
    questions=["Can you explain again why we need that step in {topic}?", "Honestly I'm stressed about {topic}. Any tips?",
               "How much time should I spend on {topic} this week?", "Is it bad that I left {topic} so late?",
               "Could we go over a practice question related to {topic}?", "What do examiners usually look for in {topic}?",
               "I keep making silly mistakes in {topic}. How do I stop?", "Do you think I'm on track with {topic}?",
               "Can you give me a mnemonic for something in {topic}?", "Should I ask my teacher for help with {topic} too?"],
    answers=["That step in {topic} matters because it keeps the units consistent; without it the rest falls apart.",
             "Stress about {topic} is normal. Break it into small pieces and tick them off one at a time.",
             "For {topic} I'd aim for short, focused sessions spread through the week rather than one long cram.",
             "Starting {topic} late isn't ideal, but there's still time if we prioritise the high-mark areas.",
             "Examiners reward clear working in {topic}, even when the final answer slips.",
             "Silly mistakes in {topic} usually come from rushing; try checking each line against the previous one."],
    advice=["Try explaining the idea out loud to yourself; it shows the gaps quickly.", "Past papers are the best practice we have.",
            "Make sure you sleep properly before anything important.", "Write down any question that confuses you so we can tackle it next time.",
            "A small win every day adds up faster than you think.", "Colour-coding your notes can help for revision.",
            "We can adjust the plan whenever you need.", "Remember to show all your working, examiners love it.",
            "I'll prepare a couple of exercises on {topic} for next time.", "You're improving, even if it doesn't feel like it.",
            "Flashcards work well for definitions and formulas.", "Let me know how the last homework went."],
)

RENOVATION = dict(
    name="home_renovation",
    profile_topic="the house",
    profile=[
        S("addr", "address", ["property address", "site address", "address of the house"], topic="the house"),
        S("budget", "amount", ["overall budget", "total budget", "spending cap"], amt(15000, 90000), topic="the whole renovation"),
        S("style", "preference", ["style preference", "design direction", "design constraint"],
          pick(["matte black fixtures everywhere", "no glossy tiles", "keep the original 1930s doors", "warm white lighting, 2700K",
                "nothing that needs sealing every year"]), topic="the finishes"),
        S("partner", "person", ["partner", "co-owner", "co-decision-maker"], topic="decisions on the house"),
        S("surveyor", "contact", ["surveyor's contact", "architect's e-mail", "designer contact"], topic="the design side"),
    ],
    case_types=[
        dict(case="kitchen", topics=["the kitchen remodel", "the kitchen worktops", "the new kitchen units"],
             slots=[S("kcontr", "person", ["contractor", "builder", "fitter"], req=True),
                    S("kquote", "amount", ["quote", "quoted price", "estimate"], amt(2000, 25000)),
                    S("kqty", "quantity", ["worktop length", "measurement", "size"],
                      pick(["4.2 m of worktop", "3 m run plus 1.8 m island", "14 linear feet", "2 × 3050 mm slabs", "11 drawer units"])),
                    S("kstart", "date", ["start date", "first day on site", "kick-off date"]),
                    S("kdec", "decision", ["decision", "choice", "final choice"],
                      pick(["go with the second quote", "quartz instead of oak", "move the sink under the window", "keep the old layout",
                            "induction hob, no gas"]))]),
        dict(case="bathroom", topics=["the bathroom retile", "the en-suite", "the downstairs loo"],
             slots=[S("tiles", "quantity", ["tile quantity", "tile count", "tile order size"],
                      pick(["14 boxes of tiles", "9.5 m² plus 10% waste", "320 mosaic sheets", "6 boxes of 60×60"]), req=True),
                    S("bcontr", "person", ["tiler", "plumber", "tradesperson"]),
                    S("adhesive", "technical", ["adhesive spec", "product spec", "technical spec"],
                      pick(["C2TE S1 flexible adhesive", "Ditra 25 membrane", "Schlüter-KERDI-BOARD 12.5 mm", "epoxy grout RG 3 mm joints"])),
                    S("bquote", "amount", ["quote", "labour cost", "price"], amt(600, 9000)),
                    S("bwhen", "relative_date", ["earliest start", "start", "availability"])]),
        dict(case="permit", topics=["the extension permit", "the loft conversion approval", "the dropped kerb application", "the balcony permit"],
             slots=[S("permit", "identifier", ["permit number", "application reference", "planning reference"], fmt("BP-2026-{d5}", "PA/{d2}/{d5}/FUL", "{d4}-{A2}-{d3}"), req=True),
                    S("inspect", "date", ["inspection date", "site visit", "inspection"]),
                    S("officer", "person", ["planning officer", "inspector", "case officer"]),
                    S("pfee", "amount", ["permit fee", "application fee", "council fee"], amt(80, 1200)),
                    S("pportal", "contact", ["council portal", "planning contact", "officer's e-mail"])],
             close=["{topic} got approved! Stamp and everything.", "Council signed off {topic}, we're clear."]),
        dict(case="electrics", topics=["the rewiring", "the consumer unit swap", "the EV charger install", "the garden lighting"],
             slots=[S("espec", "technical", ["cable spec", "breaker rating", "spec"],
                      pick(["2.5 mm² twin and earth", "MCB B32 type A RCBO", "6 mm² SWA to the garage", "Type 2 socket, 7.4 kW", "IP65 fittings, 12 V DC"]), req=True),
                    S("sparky", "person", ["electrician", "sparky", "installer"]),
                    S("equote", "amount", ["quote", "price", "cost estimate"], amt(300, 6000)),
                    S("circuits", "quantity", ["number of circuits", "points", "sockets"],
                      pick(["9 circuits", "22 double sockets", "6 downlights per room", "three new spurs"])),
                    S("ecert", "identifier", ["certificate number", "EICR reference", "notification number"], fmt("EIC-{d6}", "NICEIC {d7}", "{A2}{d5}/{d2}"))]),
        dict(case="materials", topics=["the flooring order", "the window replacement", "the insulation delivery", "the paint order"],
             slots=[S("mord", "identifier", ["order number", "supplier order ref", "PO number"], fmt("PO-{d5}", "SO{d7}", "{A3}/{d6}"), req=True),
                    S("mqty", "quantity", ["quantity", "amount ordered", "order quantity"],
                      pick(["42 m² of oak", "18 rolls of 100 mm loft roll", "7 windows, 2 of them bays", "12 litres of eggshell", "65 sq ft of cork"])),
                    S("supplier", "contact", ["supplier's number", "supplier contact", "depot phone"]),
                    S("deliv", "relative_date", ["delivery", "delivery day", "drop"]),
                    S("mcost", "amount", ["cost", "invoice total", "price"], amt(150, 8000))],
             close=["{topic} is all delivered and paid, closing that out.", "Everything from {topic} is in and fitted."]),
    ],
    openers=["Right,", "Update from the house:", "Hi!", "Evening.", "Quick one."],
    smalltalk=COMMON_SMALLTALK + ["There's plaster dust in places I didn't know existed.", "We're living on takeaway until the kitchen's done.",
                                  "The dog hates the builders' radio.", "Skip is full again."],
    questions=["Is it normal for {topic} to take this long?", "What should I check before paying for {topic}?",
               "Do you think we need a structural engineer for {topic}?", "How do I know if the price for {topic} is fair?",
               "Any red flags I should look out for with {topic}?", "Should we be on site while {topic} happens?",
               "What questions should I ask about {topic} tomorrow?", "Could {topic} affect our home insurance?"],
    answers=["Delays on {topic} are very common, usually due to materials or other jobs overrunning.",
             "Before paying for {topic}, check the work against the written scope and take photos.",
             "Whether {topic} needs an engineer depends on whether anything load-bearing changes.",
             "For {topic}, comparing at least three itemised quotes is the best way to judge fairness.",
             "Red flags with {topic} include cash-only requests and large upfront deposits.",
             "It's worth telling your insurer about {topic}, some policies change during major works."],
    advice=["Keep every receipt and warranty in one folder.", "Photos of hidden pipes and cables before they're covered are gold later.",
            "A stage-payment schedule protects both sides.", "Building control sign-off matters when you sell.",
            "Leave a contingency of ten to fifteen percent.", "I'll track {topic} alongside the rest of the works.",
            "Ask for written variations if the scope changes.", "Materials lead times are long right now.",
            "Let me know when anything is confirmed so I can update the plan.", "Agree working hours with the neighbours in advance."],
)

HEALTH = dict(
    name="health_admin",
    profile_topic="my health admin",
    profile=[
        S("policy", "identifier", ["insurance policy number", "policy no.", "membership number"], fmt("POL-{d2}-{d4}-{A2}", "{A3}{d9}", "VK {d3} {d3} {d3}"), topic="my health insurance"),
        S("gp", "person", ["GP", "family doctor", "Hausarzt"], topic="my regular care"),
        S("pharm", "contact", ["pharmacy phone", "pharmacy contact", "chemist's number"], topic="my pharmacy"),
        S("apptpref", "preference", ["appointment preference", "scheduling constraint", "availability constraint"],
          pick(["morning appointments only", "nothing on Wednesdays", "video calls where possible", "female doctor preferred",
                "after 4pm because of work"]), topic="booking appointments"),
        S("homeaddr", "address", ["home address", "address on my file", "postal address"], topic="my patient record"),
    ],
    case_types=[
        dict(case="appointment", topics=["the dermatology referral", "the cardiology check-up", "the eye test", "the physio assessment",
                                         "the dentist follow-up", "the allergy clinic"],
             slots=[S("doc", "person", ["specialist", "doctor", "consultant"], req=True),
                    S("adate", "date", ["appointment date", "appointment", "appointment slot"]),
                    S("clinic", "address", ["clinic address", "clinic location", "location"]),
                    S("ref", "identifier", ["referral number", "booking reference", "e-referral code"], fmt("UBRN {d4} {d4} {d4}", "REF-{A6}", "{d3}/{d5}")),
                    S("copay", "amount", ["co-pay", "fee", "out-of-pocket cost"], amt(10, 250))],
             close=["Went to {topic} today, all fine, nothing more to follow up.", "{topic} happened, doctor says no need to go back."]),
        dict(case="claim", topics=["the claim for the MRI", "the physio reimbursement", "the dental claim", "the claim for the ER visit"],
             slots=[S("claimno", "identifier", ["claim number", "claim reference", "claim ID"], fmt("CLM 2026 {d6}", "{d2}-{A4}-{d5}", "CL{d9}"), req=True),
                    S("camount", "amount", ["amount claimed", "claim amount", "invoice total"], amt(60, 4500)),
                    S("billcode", "technical", ["billing code", "procedure code", "code on the invoice"],
                      pick(["CPT 72148", "GOÄ Ziffer 5700", "ICD-10 M54.5", "item 0115 (ADA)", "ICD-10 J45.909", "HCPCS G0283"])),
                    S("handler", "person", ["claims handler", "case handler", "insurer contact person"]),
                    S("cdec", "decision", ["decision", "plan", "next step"],
                      pick(["appeal the rejection in writing", "resubmit with the itemised bill", "pay it myself and drop the claim",
                            "ask the clinic to bill the insurer directly"]))],
             close=["Insurer paid out for {topic}! Done.", "{topic} is settled, money arrived."]),
        dict(case="rx", topics=["the repeat prescription", "the new inhaler prescription", "the blood pressure meds", "the antibiotic course"],
             slots=[S("med", "quantity", ["dosage", "dose", "daily dose"],
                      pick(["10 mg once daily", "2 puffs twice a day", "500 mg every 8 hours", "½ tablet at night", "5 ml three times daily", "25 µg each morning"]), req=True),
                    S("rxno", "identifier", ["prescription number", "Rx number", "script reference"], fmt("RX#{d7}", "E-Rezept {A4}-{A4}", "{d2}{A3}{d4}")),
                    S("refill", "relative_date", ["next refill", "refill date", "run-out date"]),
                    S("rxcost", "amount", ["prescription charge", "cost", "price at the pharmacy"], amt(5, 120)),
                    S("rxpref", "preference", ["pharmacy preference", "pickup preference", "dispensing preference"],
                      pick(["delivery to home, not pickup", "generic brand is fine", "blister packs please", "collect from the 24h pharmacy"]))]),
        dict(case="portal", topics=["the patient portal login", "the lab results upload", "the vaccination record", "the medical certificate for work"],
             slots=[S("perr", "technical", ["error", "error message", "portal error"],
                      pick(["ERR_SESSION_EXPIRED", "'Dokument konnte nicht geladen werden' (Code 17)", "HTTP 502 Bad Gateway", "BankID timeout 0x2A"]), req=True),
                    S("purl", "contact", ["portal URL", "link", "helpdesk contact"]),
                    S("pdue", "relative_date", ["deadline", "submission deadline", "due"]),
                    S("pcount", "quantity", ["number of documents", "pages", "files"],
                      pick(["3 PDFs", "7 pages of results", "two vaccination entries", "one 4-page form"]))]),
    ],
    openers=["Hi.", "Hello again.", "Ugh, admin time.", "Morning!", "Hey."],
    smalltalk=COMMON_SMALLTALK + ["Waiting rooms are my least favourite place.", "Feeling a bit better this week, thanks for asking.",
                                  "I hate being on hold with insurers.", "Slept badly again."],
    questions=["How long does {topic} normally take to process?", "Is there anything I should bring for {topic}?",
               "Could {topic} affect my premium next year?", "What should I ask the doctor about {topic}?",
               "Do you think I should chase {topic} or wait?", "Is it normal that nobody has called back about {topic}?",
               "Can my partner deal with {topic} on my behalf?", "Should I keep paper copies for {topic}?"],
    answers=["Processing for {topic} typically takes a couple of weeks, sometimes longer around holidays.",
             "For {topic}, bring ID, your insurance card and any previous letters.",
             "A single item like {topic} rarely changes premiums, but it's worth reading the policy terms.",
             "For {topic}, ask what the next steps are and how results will be communicated.",
             "If you haven't heard about {topic} in ten working days, a polite chase is reasonable.",
             "Someone can act for you on {topic} if you give written consent."],
    advice=["This isn't medical advice, just help with the paperwork side.", "Keeping copies of all letters helps enormously.",
            "I'll keep {topic} on the list until it's resolved.", "Let me know if your symptoms change, and contact a clinician if worried.",
            "Insurers often need itemised invoices rather than receipts.", "Diary reminders for refills are handy.",
            "Most portals log you out after fifteen minutes.", "Writing down questions before appointments helps a lot.",
            "I can help draft e-mails if that saves time.", "Take care of yourself in the meantime."],
)

# --- coding-agent domain: tool calls and long tool outputs -------------------
MODULES = ["billing/invoice.py", "billing/rounding.py", "api/webhooks.py", "api/auth.py", "workers/settle.py",
           "exports/csv_export.py", "core/money.py", "core/tz.py", "db/repo.py", "ratelimit/bucket.py"]
FUNCS = ["compute_totals", "apply_discount", "verify_signature", "refresh_token", "settle_batch", "render_rows",
         "quantize_amount", "to_local", "fetch_ledger", "take_token", "parse_iso_week", "retry_with_backoff"]
AUTHORS = ["Priya R <priya@ledgerly.dev>", "Jonas Weber <jw@ledgerly.dev>", "M. Okafor <mo@ledgerly.dev>",
           "Lea Nguyen <lea@ledgerly.dev>", "ci-bot <ci@ledgerly.dev>"]
MSGS = ["fix(billing): guard against empty line items", "chore: bump deps", "feat(api): add pagination cursor",
        "refactor(core): split money helpers", "test: stabilise webhook fixtures", "docs: update runbook",
        "perf(worker): batch ledger reads", "fix(tz): use zoneinfo for DST edges", "ci: cache pip wheels"]


def ts(r):
    return f"2024-{r.randint(1, 12):02d}-{r.randint(10, 28):02d}T{r.randint(0, 23):02d}:{r.randint(0, 59):02d}:{r.randint(0, 59):02d}.{r.randint(0, 999):03d}Z"


def out_log(r, inject=None):
    lvls = ["INFO", "INFO", "INFO", "DEBUG", "WARN"]
    lines = []
    n = r.randint(18, 34)
    pos = r.randrange(n)
    for k in range(n):
        if k == pos and inject:
            lines.append(f"{ts(r)} ERROR [worker-{r.randint(1, 8)}] {r.choice(FUNCS)} failed: {inject}")
            lines.append(f"Traceback (most recent call last):\n  File \"src/ledgerly/{r.choice(MODULES)}\", line {r.randint(20, 400)}, in {r.choice(FUNCS)}")
        else:
            lines.append(f"{ts(r)} {r.choice(lvls)} [worker-{r.randint(1, 8)}] {r.choice(FUNCS)} "
                         f"req={rand_hex(r, 8)} dur_ms={r.randint(2, 900)} status={r.choice([200, 200, 201, 204, 409])}")
    return "\n".join(lines)


def out_tests(r, inject=None):
    rows = ["TEST                                                   RESULT   TIME"]
    n = r.randint(20, 30)
    pos = r.randrange(n)
    fails = 0
    for k in range(n):
        mod = r.choice(MODULES).replace("/", "/test_")
        if k == pos and inject:
            rows.append(f"{inject:<55} FAILED   {r.uniform(0.01, 3):.2f}s")
            fails += 1
        else:
            rows.append(f"tests/{mod}::test_{r.choice(FUNCS)}_{rand_alnum(r, 3, 'abcdefghijklmnopqrstuvwxyz')}".ljust(55) +
                        f" PASSED   {r.uniform(0.01, 2):.2f}s")
    rows.append(f"==== {n - fails} passed, {fails} failed, {r.randint(0, 4)} skipped in {r.uniform(4, 90):.1f}s ====")
    return "\n".join(rows)


def out_gitlog(r, inject=None):
    n = r.randint(7, 11)
    pos = r.randrange(n)
    chunks = []
    for k in range(n):
        h = inject if (k == pos and inject) else rand_hex(r, 40)
        chunks.append(f"commit {h}\nAuthor: {r.choice(AUTHORS)}\nDate:   {ts(r)}\n\n    {r.choice(MSGS)}\n")
    return "\n".join(chunks)


def out_json(r, inject=None, key="html_url"):
    doc = {"id": r.randint(100000, 999999), "state": r.choice(["open", "closed", "merged"]),
           "title": r.choice(MSGS), "user": {"login": r.choice(["priya-r", "jweber", "mokafor", "lean"])},
           "labels": r.sample(["bug", "billing", "p1", "needs-review", "backend", "flaky"], 3),
           "checks": [{"name": n, "conclusion": r.choice(["success", "success", "failure"]), "duration_s": r.randint(20, 900)}
                      for n in ["lint", "unit", "integration", "typecheck"]],
           "changed_files": r.randint(1, 30), "additions": r.randint(5, 900), "deletions": r.randint(0, 400),
           "created_at": ts(r), "updated_at": ts(r), "mergeable_state": r.choice(["clean", "blocked", "unstable"])}
    if inject:
        doc[key] = inject
    return json.dumps(doc, indent=2, ensure_ascii=False)


def out_file(r, inject=None):
    lines = ["# ledgerly service configuration", "service:", f"  name: ledgerly-{r.choice(['api', 'worker', 'export'])}",
             f"  workers: {r.randint(2, 16)}", "  log_level: info", "database:", f"  pool_size: {r.randint(5, 40)}",
             f"  statement_timeout_ms: {r.randint(1000, 30000)}", "features:"]
    for k in range(r.randint(14, 22)):
        lines.append(f"  # {r.choice(['toggle for', 'rollout of', 'see ADR on'])} {r.choice(FUNCS)}")
        lines.append(f"  {r.choice(['enable', 'use', 'allow'])}_{r.choice(FUNCS)}: {r.choice(['true', 'false'])}")
    if inject:
        lines.insert(r.randint(3, len(lines)), f"  {inject}: {r.randint(10, 5000)}")
    lines += ["retry:", f"  max_attempts: {r.randint(2, 9)}", f"  backoff_base_s: {r.uniform(0.1, 2):.2f}"]
    return "\n".join(lines)


def out_diff(r, inject=None):
    mod = r.choice(MODULES)
    lines = [f"diff --git a/src/ledgerly/{mod} b/src/ledgerly/{mod}", f"index {rand_hex(r, 7)}..{rand_hex(r, 7)} 100644",
             f"--- a/src/ledgerly/{mod}", f"+++ b/src/ledgerly/{mod}", f"@@ -{r.randint(10, 200)},12 +{r.randint(10, 200)},14 @@"]
    for k in range(r.randint(20, 30)):
        sign = r.choice([" ", " ", "+", "-"])
        lines.append(f"{sign}    {r.choice(['result = ', 'if not ', 'return ', 'log.debug(', 'amount = '])}{r.choice(FUNCS)}(ctx, {r.choice(['items', 'row', 'batch', 'token'])})")
    if inject:
        lines.insert(r.randint(6, len(lines)), f"+    {inject}")
    return "\n".join(lines)


def out_grep(r, inject=None):
    lines = []
    for k in range(r.randint(20, 30)):
        lines.append(f"src/ledgerly/{r.choice(MODULES)}:{r.randint(5, 600)}:    {r.choice(FUNCS)}(ctx, {r.choice(['items', 'row', 'amount'])})")
    if inject:
        lines.insert(r.randrange(len(lines)), f"src/ledgerly/{r.choice(MODULES)}:{r.randint(5, 600)}:    {inject}")
    lines.append(f"-- {len(lines)} matches in {r.randint(3, 12)} files")
    return "\n".join(lines)


def out_shell(r, inject=None):
    return out_log(r, inject) if r.random() < 0.6 or inject else "\n".join(
        f"{rand_hex(r, 12)}  ledgerly-{r.choice(['api', 'worker'])}-{rand_hex(r, 5)}  Running  {r.randint(0, 3)}  {r.randint(1, 90)}m"
        for _ in range(r.randint(16, 24)))


def coding_tool(r, name, value=None, speaker=None):
    """Return (arguments dict, output text). value is placed in the output (speaker 'tool')
    or in the arguments (speaker 'args')."""
    inj = value if speaker == "tool" else None
    argv = value if speaker == "args" else None
    if name == "read_file":
        args = {"path": argv or f"src/ledgerly/{r.choice(MODULES)}"}
        if r.random() < 0.5 or inj:
            return args, out_file(r, inj)
        return args, out_diff(r).replace("+", " ").replace("-", " ")
    if name == "run_shell":
        args = {"cmd": argv or r.choice(["kubectl get pods -n staging", "tail -n 200 /var/log/ledgerly/worker.log",
                                         "docker compose ps", "journalctl -u ledgerly-api --since '1 hour ago'"]),
                "timeout_s": r.choice([60, 120, 300])}
        return args, out_shell(r, inj)
    if name == "run_tests":
        return {"target": f"tests/{r.choice(['billing', 'api', 'workers', 'exports'])}", "flags": r.choice(["-x -q", "-q", "-k 'not slow'"])}, out_tests(r, inj)
    if name == "git_log":
        return {"max_count": r.randint(5, 15), "path": f"src/ledgerly/{r.choice(MODULES)}"}, out_gitlog(r, inj)
    if name == "git_diff":
        return {"ref": r.choice(["origin/main...HEAD", "HEAD~3", "release/3.x...HEAD"])}, out_diff(r, inj)
    if name == "search_code":
        return {"query": r.choice(FUNCS), "glob": "*.py"}, out_grep(r, inj)
    if name == "gh_api":
        return {"endpoint": f"/repos/ledgerly/core/pulls?head={r.choice(['fix', 'feat'])}-{rand_hex(r, 4)}"}, out_json(r, inj)
    raise ValueError(name)


CODING = dict(
    name="coding_agent",
    profile_topic="the ledgerly repo",
    tool_fn=coding_tool, tool_rate=0.45,
    tool_names=["read_file", "run_shell", "run_tests", "git_log", "git_diff", "search_code", "gh_api"],
    tool_preambles=["Let me look at the current state for {topic} before changing anything. I'll run the relevant command and read the output.",
                    "I'll gather some context on {topic} first: checking the code and recent history so I don't guess.",
                    "Running a quick check related to {topic}; I want to see the real output rather than assume.",
                    "Before I touch {topic}, I'll inspect the repository and the test results."],
    tool_summaries=["I've gone through the output above. Nothing there contradicts the plan for {topic}.",
                    "The results are in the tool output above; the relevant line is near the middle.",
                    "That confirms my suspicion about {topic}. The details are in the output above if you want to look.",
                    "Output reviewed. I'll keep the findings in mind for {topic}."],
    profile=[
        S("lead", "person", ["tech lead", "lead reviewer", "person who approves merges"], topic="code review on this repo"),
        S("pref", "preference", ["coding preference", "house rule", "constraint"],
          pick(["no new dependencies without asking", "small commits with conventional messages", "type hints on every public function",
                "never force-push to main", "keep the test suite under two minutes"]), topic="working in this repo"),
        S("oncall", "contact", ["on-call contact", "pager contact", "incident contact"], topic="incidents"),
        S("staging", "technical", ["staging DB host", "staging database", "staging endpoint"],
          fmt("staging-db-{n9}.internal:6{d3}", "pg-stg.{a5}.eu-west-1.rds.example:5432", "10.40.{n200}.{n200}:5433"), topic="the staging environment"),
        S("office", "address", ["office address", "shipping address for devices", "delivery address for hardware"], topic="shipping the test devices"),
    ],
    case_types=[
        dict(case="bug", topics=["the login timeout bug", "the CSV export crash", "the flaky webhook test", "the currency rounding bug",
                                 "the memory leak in the worker", "the timezone bug in invoices"],
             slots=[S("issue", "identifier", ["issue number", "ticket", "issue"], fmt("PAY-{d4}", "#{d4}", "GH-{d3}", "INC-{d5}", "LEDG-{d3}"), req=True),
                    S("ftest", "technical", ["failing test", "broken test", "red test"],
                      lambda r: f"tests/{r.choice(['billing', 'api', 'workers'])}/test_{r.choice(FUNCS)}.py::test_{r.choice(['edge', 'dst', 'empty', 'large', 'retry'])}_{rand_alnum(r, 4, 'abcdefghijklmnopqrstuvwxyz')}",
                      speaker="tool", tool="run_tests", correct=False),
                    S("errfrag", "technical", ["error message", "exception", "error in the logs"],
                      pick(["KeyError: 'currency_code'", "psycopg.errors.DeadlockDetected", "TimeoutError: waited 30.0s for lock",
                            "decimal.InvalidOperation: [<class 'decimal.DivisionUndefined'>]", "RecursionError: maximum recursion depth exceeded",
                            "ZoneInfoNotFoundError: 'Europe/Kyiv'", "MemoryError in settle_batch chunk 7"]), speaker="tool", tool="run_shell", correct=False),
                    S("fix", "identifier", ["fix commit", "commit hash", "the commit with the fix"], lambda r: rand_hex(r, 40), speaker="tool", tool="git_log", correct=False),
                    S("reviewer", "person", ["reviewer", "code reviewer", "approver"]),
                    S("bdec", "decision", ["decision", "approach", "plan"],
                      pick(["revert rather than hotfix", "ship the fix behind a feature flag", "pin urllib3 instead of upgrading",
                            "rewrite the rounding with Decimal", "add a retry with jitter", "drop support for the legacy endpoint"])),
                    S("bdue", "relative_date", ["deadline", "fix deadline", "due"])],
             close=["{topic} is verified fixed in prod, close it out.", "QA signed off on {topic}. Done."]),
        dict(case="feature", topics=["the SEPA export feature", "the rate-limiter rewrite", "the audit log endpoint", "the bulk refund API",
                                     "the invoice PDF redesign"],
             slots=[S("fpath", "technical", ["main file", "target file", "module"],
                      lambda r: f"src/ledgerly/{r.choice(['exports', 'ratelimit', 'audit', 'refunds', 'pdf'])}/{r.choice(['service', 'handlers', 'models', 'render'])}_{rand_alnum(r, 3, 'abcdefghijklmnopqrstuvwxyz')}.py",
                      speaker="args", tool="read_file", correct=False, req=True),
                    S("pr", "identifier", ["PR link", "pull request", "PR"], lambda r: f"https://github.com/ledgerly/core/pull/{r.randint(1000, 9999)}",
                      speaker="tool", tool="gh_api", correct=False),
                    S("branch", "technical", ["branch name", "branch", "feature branch"],
                      lambda r: f"feat/{r.choice(['sepa', 'rl', 'audit', 'refund', 'pdf'])}-{rand_alnum(r, 5, 'abcdefghijklmnopqrstuvwxyz0123456789')}", speaker="assistant", correct=False),
                    S("fkey", "technical", ["config key", "setting", "env var"],
                      lambda r: f"LEDGERLY_{r.choice(['SEPA', 'RL', 'AUDIT', 'REFUND'])}_{r.choice(['BATCH_SIZE', 'MAX_BURST', 'RETENTION_DAYS', 'CONCURRENCY'])}_{rand_alnum(r, 2, 'ABCDEFGHJKLMNPQRSTUVWXYZ')}",
                      speaker="tool", tool="read_file", correct=False),
                    S("flimit", "quantity", ["limit", "size limit", "throughput target"],
                      pick(["max 120 requests per minute", "batches of 500 rows", "p95 under 250 ms", "retain 400 days", "at most 8 concurrent jobs", "coverage ≥ 85 %"])),
                    S("fdec", "decision", ["decision", "design choice", "approach"],
                      pick(["token bucket per API key", "stream the CSV instead of buffering", "store audit rows in a separate schema",
                            "generate PDFs asynchronously via the queue"]))]),
        dict(case="release", topics=["the 3.x release", "the hotfix release", "the Q3 release train", "the mobile SDK release"],
             slots=[S("ver", "technical", ["version", "release tag", "version number"], fmt("v{n4}.{n30}.{n9}-rc.{n5}", "{n4}.{n30}.{n9}", "release-20{d2}.{n12}"), req=True),
                    S("freeze", "date", ["code freeze", "freeze date", "cut-off date"]),
                    S("rm", "person", ["release manager", "release owner", "RM"]),
                    S("rtime", "relative_date", ["go-live", "release day", "ship date"])],
             close=["{topic} is out the door, tagging it closed.", "Shipped {topic}. Close it."]),
        dict(case="infra", topics=["the staging cluster resize", "the Postgres upgrade", "the CI runner costs", "the Redis migration"],
             slots=[S("replicas", "quantity", ["replica count", "number of replicas", "node count"],
                      pick(["6 replicas", "three nodes of 8 vCPU", "2 primaries + 4 read replicas", "12 runners", "a 5-node cluster"]), req=True),
                    S("budget", "amount", ["monthly budget", "cost cap", "spend limit"], amt(300, 9000)),
                    S("cmd", "technical", ["command", "script", "migration command"],
                      lambda r: r.choice([f"kubectl scale deploy/ledgerly-worker --replicas={r.randint(3, 9)} -n staging",
                                          f"pg_upgrade -b /usr/lib/postgresql/{r.randint(12, 14)}/bin -B /usr/lib/postgresql/16/bin",
                                          f"terraform apply -target=module.ci_runners -var runner_count={r.randint(4, 20)}",
                                          f"redis-cli --cluster reshard 10.0.{r.randint(1, 9)}.{r.randint(10, 99)}:6379"]),
                      speaker="args", tool="run_shell", correct=False),
                    S("window", "date", ["maintenance window", "cutover date", "migration date"]),
                    S("vendor", "contact", ["vendor contact", "account manager's e-mail", "support line"])],
             close=["{topic} is finished and stable, drop it from the list.", "We're done with {topic}, dashboards look fine."]),
        dict(case="devices", topics=["the test device shipment", "the YubiKey order", "the Android test phones"],
             slots=[S("dtrack", "identifier", ["tracking number", "shipment number", "tracking code"], fmt("1Z{A6}{d10}", "JJD{d14}", "{A2}{d9}GB"), req=True),
                    S("dcount", "quantity", ["number of devices", "device count", "units"], pick(["9 devices", "four Pixels and two Galaxies", "15 keys", "6 handsets"])),
                    S("dcost", "amount", ["cost", "invoice amount", "price"], amt(150, 4000)),
                    S("dperson", "person", ["recipient", "recipient name", "signatory"])]),
    ],
    openers=["ok,", "Hey,", "Next:", "Morning.", "quick one —", "Alright,"],
    smalltalk=COMMON_SMALLTALK + ["CI is slow as treacle today.", "Standup ran long again.", "I'm on my second monitor setup finally.",
                                  "Half the team is out with the flu."],
    questions=["Can you take a look at where {topic} stands in the code?", "What do you think is the riskiest part of {topic}?",
               "Can you check the tests around {topic}?", "Anything in the recent history relevant to {topic}?",
               "Is there dead code we could remove as part of {topic}?", "How would you split {topic} into smaller PRs?",
               "Can you grep for other callers affected by {topic}?", "Does the CI config need changes for {topic}?"],
    answers=["For {topic}, the riskiest part is the boundary between the API layer and the workers.",
             "I'd split {topic} into a refactor PR with no behaviour change, then the actual change.",
             "The tests around {topic} are thin; I'd add a couple of edge cases first.",
             "Nothing in recent history looks directly related to {topic}, which is mildly reassuring.",
             "There's some dead code near {topic}, but I'd remove it in a separate commit.",
             "CI probably doesn't need changes for {topic}, unless we add a new service container."],
    advice=["I'll keep changes minimal and easy to review.", "Happy to write a short summary for the PR description.",
            "Running the full suite locally takes a while, so I'll target the relevant tests first.",
            "Let me know if you'd rather I stop and ask before each commit.", "I'll avoid touching unrelated files.",
            "Worth double-checking migrations before merging anything that touches the database.",
            "I'll note any follow-ups as TODOs in the issue rather than in the code.", "The linters are happy so far.",
            "I'll keep {topic} in mind while working on the rest.", "If anything looks off in the output, tell me and I'll dig deeper."],
)


# --- paired filler (question -> matching answer) and topic-free chit-chat ------
SUPPORT["qa"] = [
    ("Any idea how long {topic} usually takes to move along?", "For {topic}, most cases move within three to five working days once a colleague picks them up."),
    ("Is there anything else you need from me on {topic}?", "Nothing more needed from you on {topic} right now; I'll flag it if that changes."),
    ("Do I need to print anything for {topic}?", "No printing needed for {topic}; everything is handled digitally, the courier scans a code."),
    ("Should I worry that nothing has changed on {topic} for days?", "A quiet spell on {topic} isn't unusual; the status only updates when something physical happens."),
    ("What happens if {topic} drags on past the end of the month?", "If {topic} runs past month end it simply carries over, and you keep all your consumer rights."),
    ("I got a weird automated e-mail about {topic}. Should I ignore it?", "Automated e-mails about {topic} are safe to ignore unless they ask you to do something. Never click links asking for card details."),
    ("Would calling instead of chatting speed up {topic}?", "Calling wouldn't really speed up {topic}; phone and chat agents use the same queue and tools."),
    ("Is there a way to get push notifications about {topic}?", "Yes, for {topic} you can switch on push notifications in the app under Settings, then Notifications."),
    ("Honestly, is {topic} going to be worth the hassle?", "I understand the frustration with {topic}. Given the amount involved, I think it's worth seeing through."),
    ("Can someone else in my household deal with {topic} if I'm away?", "Someone else can handle {topic} if they're added as an authorised person on the account."),
    ("Can you explain in plain words where {topic} is stuck?", "Plainly: {topic} is waiting on the warehouse or finance team to act, not on you."),
    ("Would a complaint to the ombudsman be over the top for {topic}?", "An ombudsman complaint about {topic} is possible after eight weeks without resolution, but let's try the normal route first."),
]
SUPPORT["chat"] = [
    ("Do you ever get customers who are nice to you? Asking for a friend.", "Plenty, and it always makes the day better! Thanks for asking, and for being patient with all of this."),
    ("Is your shop doing a Black Friday thing this year? I might wait for it.", "There's usually a sale in late November, though I can't promise which products will be included."),
    ("Honestly I just want one month without a problem with an online order.", "That's completely fair. Let's get everything in this thread sorted so next month is quieter."),
    ("Can I keep using this chat for everything, or should I open new ones?", "Keeping everything in this one thread is perfect; it means all the context stays in one place."),
]
TRAVEL["qa"] = [
    ("Is it worth paying extra for flexibility on {topic}?", "For {topic}, flexibility is usually worth it if your dates might move at all; the difference is often small."),
    ("What should I double-check about {topic} before we go?", "For {topic}, check that names match passports exactly and that all times are local times."),
    ("Do you think {topic} is a good idea with kids?", "{topic} generally works with kids if you build in buffer time and snacks. Lots of snacks."),
    ("How early should I sort out {topic}?", "I'd sort out {topic} a few weeks ahead; prices tend to creep up closer to the date."),
    ("Any tips for {topic} that people usually miss?", "People often forget that {topic} may need a printed confirmation or the physical card used to pay."),
    ("Is tipping expected for {topic}?", "For {topic}, tipping is appreciated but rarely expected; ten percent for great service is plenty."),
    ("What happens with {topic} if there's a strike?", "If there's a strike, {topic} is normally rebooked free of charge; keep all receipts for any extra costs."),
    ("Should I screenshot everything for {topic} in case there's no signal?", "Yes, screenshots for {topic} are a good idea, plus an offline PDF in your files app."),
    ("Is {topic} refundable, do you think?", "Refundability for {topic} depends on the fare rules; the cheapest options are usually non-refundable."),
    ("How far is {topic} from everything else we're doing?", "Distances around {topic} look manageable; I'd allow extra time on the first day while you find your bearings."),
]
TRAVEL["chat"] = [
    ("Have you got a favourite city? I know, weird question for an assistant.", "I don't travel myself, but people come back glowing about Lisbon and Kyoto, for what it's worth."),
    ("I've started learning a few phrases in the local language. Too ambitious?", "Not at all! Even a greeting and a thank-you goes a long way with locals."),
    ("Packing question: do people actually use packing cubes or is it a scam?", "Packing cubes genuinely help if you move between places a lot; less so for a single stay."),
    ("My partner wants to plan every hour and I want to wing it. Help.", "A middle ground works well: one anchor activity a day, everything else improvised."),
]
CODING["qa"] = [
    ("Can you take a look at where {topic} stands in the code?", "From what I've seen, {topic} is partly done: the core logic exists, but the edge cases and tests are missing."),
    ("What do you think is the riskiest part of {topic}?", "For {topic}, the riskiest part is the boundary between the API layer and the workers, where retries happen."),
    ("Can you check the tests around {topic}?", "The tests around {topic} are thin; I'd add a couple of edge cases before changing behaviour."),
    ("Anything in the recent history relevant to {topic}?", "Nothing in the recent history looks directly related to {topic}, which is mildly reassuring."),
    ("Is there dead code we could remove as part of {topic}?", "There's some dead code near {topic}, but I'd remove it in a separate commit to keep the diff readable."),
    ("How would you split {topic} into smaller PRs?", "I'd split {topic} into a refactor PR with no behaviour change, then the actual change, then cleanup."),
    ("Can you grep for other callers affected by {topic}?", "Other callers affected by {topic} are mostly in the workers package; two call sites in the API need care."),
    ("Does the CI config need changes for {topic}?", "CI probably doesn't need changes for {topic}, unless we add a new service container for integration tests."),
]
CODING["chat"] = [
    ("Do you prefer pytest fixtures or plain setup functions? Just curious.", "Fixtures, mostly, as long as they stay small and local. Deep fixture chains get hard to follow."),
    ("The coffee machine on our floor broke, productivity is doomed.", "Sorry to hear it. I'll try to keep things moving on my side in the meantime."),
    ("What's your take on monorepos, in one paragraph?", "They're great for atomic changes across services and painful for CI times; tooling decides which side wins."),
    ("I'm tempted to rewrite the whole billing module. Talk me out of it.", "A full rewrite would stall everything else; incremental refactors behind tests are safer and show progress sooner."),
]
TUTORING["qa"] = [
    ("Can you explain again why we need that step in {topic}?", "That step in {topic} keeps everything consistent; skip it and later lines stop following from earlier ones."),
    ("Honestly I'm stressed about {topic}. Any tips?", "Stress about {topic} is normal. Break it into small pieces and tick them off one at a time."),
    ("How much time should I spend on {topic} this week?", "For {topic}, three or four short focused sessions this week would be better than one long cram."),
    ("Is it bad that I left {topic} so late?", "Starting {topic} late isn't ideal, but there's still time if we prioritise the high-mark parts."),
    ("Could we go over a practice question related to {topic}?", "Sure. For {topic}, try the first part on your own, then we'll mark it together line by line."),
    ("What do examiners or teachers usually look for in {topic}?", "For {topic}, markers reward clear working and precise vocabulary, even when the final answer slips."),
    ("I keep making silly mistakes in {topic}. How do I stop?", "Silly mistakes in {topic} usually come from rushing; check each line against the one before it."),
    ("Do you think I'm on track with {topic}?", "Yes, you're broadly on track with {topic}; a bit more practice on the harder questions will help."),
    ("Should I ask my teacher for help with {topic} too?", "Asking your teacher about {topic} is a great idea; they know exactly what the marking scheme wants."),
]
TUTORING["chat"] = [
    ("Did you know octopuses have three hearts? We learned it in bio.", "I did! And blue blood too. Biology is full of those — maybe that's a sign you'd enjoy it more than you think."),
    ("My friends think tutoring is for people who are bad at school.", "Lots of top students have tutors. It's just extra practice with feedback, nothing to be embarrassed about."),
    ("I played video games all Sunday instead of revising. Oops.", "Rest matters too. Let's just make the next few sessions count."),
    ("What subject did you like most? If that makes sense for you.", "If I had to pick, maths: there's something satisfying about a proof clicking into place."),
]
RENOVATION["qa"] = [
    ("Is it normal for {topic} to take this long?", "Delays on {topic} are very common, usually because of materials or other jobs overrunning."),
    ("What should I check before paying for {topic}?", "Before paying for {topic}, check the work against the written scope and take dated photos."),
    ("Do you think we need a structural engineer for {topic}?", "Whether {topic} needs an engineer depends on whether anything load-bearing changes."),
    ("How do I know if the price for {topic} is fair?", "For {topic}, compare at least three itemised quotes; lump sums hide a lot."),
    ("Any red flags I should look out for with {topic}?", "Red flags with {topic}: cash-only requests, big upfront deposits and no written contract."),
    ("Should we be on site while {topic} happens?", "You don't need to be on site for all of {topic}, but be there for the first morning and key decisions."),
    ("What questions should I ask about {topic} tomorrow?", "For {topic}, ask about timescales, who is on site each day, and what happens if something unexpected turns up."),
    ("Could {topic} affect our home insurance?", "Tell your insurer about {topic}; some policies change cover during major works."),
]
RENOVATION["chat"] = [
    ("We found an old newspaper from 1958 under the floorboards!", "What a find! Worth keeping — people often frame those or leave a new one behind for the next owners."),
    ("Is it mad to live in a house while it's being renovated?", "Not mad, but tiring. A sealed-off clean room and a strict dust routine help a lot."),
    ("Our neighbours brought the builders cake. Should we do the same?", "It's a nice gesture and it buys a surprising amount of goodwill."),
    ("I spent an hour looking at door handles online. Is this my life now?", "Welcome to renovation! The small decisions pile up; it helps to batch them."),
]
HEALTH["qa"] = [
    ("How long does {topic} normally take to process?", "Processing for {topic} typically takes a couple of weeks, sometimes longer around holidays."),
    ("Is there anything I should bring for {topic}?", "For {topic}, bring ID, your insurance card and any previous letters or results."),
    ("Could {topic} affect my premium next year?", "A single item like {topic} rarely changes premiums, but the policy terms say for sure."),
    ("What should I ask the doctor about {topic}?", "For {topic}, ask about next steps and how and when results will be communicated."),
    ("Do you think I should chase {topic} or wait?", "If you haven't heard about {topic} within ten working days, a polite chase is reasonable."),
    ("Is it normal that nobody has called back about {topic}?", "Unfortunately slow callbacks on things like {topic} are common; a short e-mail leaves a paper trail."),
    ("Can my partner deal with {topic} on my behalf?", "Someone can act for you on {topic} if you give written consent to the provider."),
    ("Should I keep paper copies for {topic}?", "Yes, keep copies for {topic}; insurers sometimes ask for originals months later."),
]
HEALTH["chat"] = [
    ("Why is every health form asking for the same information five times?", "It really is maddening. Different systems rarely talk to each other, so everyone re-asks."),
    ("I started walking at lunchtime, feeling smug about it.", "Good for you! Small habits like that add up."),
    ("My phone has seven different health apps and I use none of them.", "Very relatable. One calendar for appointments and one folder for documents is usually enough."),
    ("Do you think it's silly to bring a list of questions to the doctor?", "Not silly at all — doctors generally appreciate it, and you won't forget anything."),
]
SUPPORT["advice"] += ["The warehouse works in waves, so updates often come in bursts.", "Your consumer rights aren't affected by any of these delays.",
                      "I'm happy to summarise everything open whenever that helps.", "Sorry again for the hassle on this."]
TRAVEL["advice"] += ["Prices I see can differ slightly from what you'll see at checkout.", "Some sites charge card fees only at the last step.",
                     "I can pull everything into a single itinerary document later.", "It's shaping up to be a lovely trip."]
CODING["advice"] += ["I'm keeping an eye on flaky tests so they don't mask real failures.", "I'll keep commit messages descriptive.",
                     "Nothing I've done so far touches production config."]
TUTORING["advice"] += ["Try one question tonight without notes, then check.", "Remember, mistakes now are cheaper than mistakes in the exam.",
                       "We'll revisit this next session to make sure it stuck."]
RENOVATION["advice"] += ["Dust sheets and a good vacuum save your sanity.", "Check that any trades are properly insured.",
                         "Keep a snag list as you go, it's easier than at the end."]
HEALTH["advice"] += ["Ask for everything in writing if possible.", "Many insurers have a complaints route separate from normal claims.",
                     "Your GP surgery can often help with referral paperwork."]
BRIDGES = ["Meanwhile, {other} is still open on my list.", "I haven't forgotten about {other} either.",
           "Separately, I'm still keeping {other} in view.", "Once this is settled we can get back to {other}."]


# --- topic-specific value pools: (case, topic) -> {slot key: values} -----------
TOPIC_POOLS = {
    ("feature", "the SEPA export feature"): {"fdec": ["one XML file per mandate batch", "validate IBANs before queueing", "stream pain.001 files to S3"],
                                             "flimit": ["batches of 500 rows", "max 9,999 transactions per file", "exports finish within 90 s"]},
    ("feature", "the rate-limiter rewrite"): {"fdec": ["token bucket per API key", "sliding window in Redis", "return Retry-After on every 429"],
                                              "flimit": ["max 120 requests per minute", "burst of 40", "p99 overhead below 2 ms"]},
    ("feature", "the audit log endpoint"): {"fdec": ["store audit rows in a separate schema", "append-only table with hash chaining", "cursor pagination only"],
                                            "flimit": ["retain 400 days", "page size capped at 200", "p95 under 250 ms"]},
    ("feature", "the bulk refund API"): {"fdec": ["idempotency key required on every call", "process refunds through the settle queue", "partial failures return 207"],
                                         "flimit": ["at most 8 concurrent jobs", "1,000 refunds per request", "coverage ≥ 85 %"]},
    ("feature", "the invoice PDF redesign"): {"fdec": ["generate PDFs asynchronously via the queue", "switch to WeasyPrint", "embed fonts, no remote assets"],
                                              "flimit": ["PDFs under 300 KB", "render in < 1.5 s", "A4 and US Letter only"]},
    ("bug", "the login timeout bug"): {"bdec": ["raise the session TTL to 12 h", "revert rather than hotfix", "refresh tokens in the background"]},
    ("bug", "the CSV export crash"): {"bdec": ["stream rows instead of loading all", "skip rows with null currency", "ship the fix behind a feature flag"]},
    ("bug", "the flaky webhook test"): {"bdec": ["freeze time in the fixture", "quarantine the test for a week", "add a retry with jitter"]},
    ("bug", "the currency rounding bug"): {"bdec": ["rewrite the rounding with Decimal", "round half-even everywhere", "store amounts in minor units"]},
    ("bug", "the memory leak in the worker"): {"bdec": ["recycle workers every 500 tasks", "pin urllib3 instead of upgrading", "profile with memray first"]},
    ("bug", "the timezone bug in invoices"): {"bdec": ["store UTC, render local", "drop pytz for zoneinfo", "backfill the affected invoices"]},
    ("assignment", "the lab report on titration"): {"tech": ["pH = -log10[H+]", "c1V1 = c2V2", "mean titre ± 0.05 cm³"], "adec": ["drop the rough titre", "write the conclusion first", "add an error-propagation table"]},
    ("assignment", "the essay on Things Fall Apart"): {"tech": ["MLA 9th edition citations", "PEEL paragraph structure", "Achebe (1958), p. 117"], "adec": ["focus on Okonkwo's pride as the theme", "compare with No Longer at Ease", "cut the historical intro"]},
    ("assignment", "the Python coursework"): {"tech": ["for i in range(len(xs) - 1):", "np.linalg.solve(A, b)", "IndexError: list index out of range"], "adec": ["use a dictionary instead of two lists", "write tests with pytest first", "drop the GUI part"]},
    ("assignment", "the history source analysis"): {"tech": ["NOP: nature, origin, purpose", "Source C (1917 poster)", "OPVL table"], "adec": ["use Source B as the main one", "argue it's only partly reliable", "structure it chronologically"]},
    ("assignment", "the statistics project on sleep data"): {"tech": ["pandas df.groupby('night').mean()", "=VLOOKUP(B2,Sheet2!A:C,3,FALSE)", "Spearman's rho = 0.62"], "adec": ["use the 2019 dataset instead", "switch to a bar chart", "remove the outliers above 14 h"]},
    ("assignment", "the French oral presentation"): {"tech": ["le subjonctif après 'bien que'", "passé composé vs imparfait", "liaison in 'les enfants'"], "adec": ["present in French without notes", "talk about Marseille instead of Paris", "open with a question to the class"]},
    ("materials", "the flooring order"): {"mqty": ["42 m² of oak", "65 sq ft of cork", "38 packs of 8 mm laminate"]},
    ("materials", "the window replacement"): {"mqty": ["7 windows, 2 of them bays", "5 sash units", "four triple-glazed casements"]},
    ("materials", "the insulation delivery"): {"mqty": ["18 rolls of 100 mm loft roll", "24 sheets of 50 mm PIR", "30 bags of blown fibre"]},
    ("materials", "the paint order"): {"mqty": ["12 litres of eggshell", "9 × 2.5 L tins of matt emulsion", "5 gallons of primer"]},
    ("admin", "the visa application"): {"admdec": ["apply for the multiple-entry visa", "pay for the express processing", "use the visa agency"], "tech": ["photo 35×45 mm, white background", "form DS-160 confirmation page", "biometrics slot via VFS portal"]},
    ("admin", "the travel insurance"): {"admdec": ["buy the premium cover with cancellation", "go with the annual multi-trip policy", "skip the gadget add-on"], "tech": ["excess waiver option 'XW-2'", "claims app error 'POLICY_NOT_ACTIVE'", "cover code EU-PLUS-5"]},
    ("admin", "the eSIM setup"): {"admdec": ["skip the eSIM and use a local SIM", "take the 20 GB plan", "activate it at the airport, not at home"], "tech": ["APN internet.vodafone.pt", "eSIM activation code LPA:1$smdp.example$X7Q2", "roaming profile 'EU+ 5G'"]},
    ("admin", "the airport transfer"): {"admdec": ["book the shuttle, not a taxi", "take the train into town", "pre-pay the private transfer"], "tech": ["app error 'pickup zone invalid (PZ-12)'", "meeting code shown in the app: TX-GREEN", "driver tracking via SMS link only"]},
}

LOCAL_ADDR = {
    "the hotel in Porto": lambda r: f"Rua das Flores {r.randint(10, 220)}, {r.randint(4000, 4099)}-{r.randint(100, 599)} Porto",
    "our ryokan stay in Kyoto": lambda r: f"{r.randint(100, 999)} Gionmachi Minamigawa, Higashiyama-ku, Kyoto {605}-{r.randint(1000, 9999):04d}",
    "the riad in Marrakech": lambda r: f"Derb Sidi Bouloukat {r.randint(2, 90)}, Riad Zitoun el Kedim, Marrakech 40000",
    "the Cape Town guesthouse": lambda r: f"{r.randint(2, 99)} Kloof Nek Road, Tamboerskloof, Cape Town, 8001",
    "the hotel near Termini": lambda r: f"Via Principe Amedeo {r.randint(2, 190)}, 00185 Roma RM",
    "the apartment in Ljubljana": lambda r: f"Trubarjeva cesta {r.randint(2, 80)}, 1000 Ljubljana",
    "the car hire in Faro": lambda r: f"Aeroporto de Faro, Terminal {r.randint(1, 2)}, Piso 0, 8006-901 Faro",
    "the campervan rental": lambda r: f"{r.randint(2, 400)} Richard Pearse Dr, Māngere, Auckland 2022",
    "the rental car in Crete": lambda r: f"Leoforos Ikarou {r.randint(2, 150)}, Irakleio 713 07",
    "the car for the Ring Road": lambda r: f"Blikavöllur {r.randint(2, 9)}, 235 Reykjanesbær",
    "the whale-watching trip": lambda r: f"Hafnarstétt {r.randint(2, 40)}, 640 Húsavík",
    "the Douro wine tour": lambda r: f"Avenida de Ovar {r.randint(2, 60)}, 5050-{r.randint(200, 299)} Peso da Régua",
    "the Fushimi Inari guided walk": lambda r: f"JR Inari Station, exit {r.randint(1, 4)}, {r.randint(20, 99)} Fukakusa Yabunouchichō, Fushimi-ku, Kyoto",
    "the sunrise hot-air balloon": lambda r: f"Müze Cd. No:{r.randint(2, 60)}, 50180 Göreme/Nevşehir",
    "the glacier hike": lambda r: f"Skaftafell Visitor Centre, car park {r.choice('ABC')}, 785 Öræfi",
    "the cooking class in Hoi An": lambda r: f"{r.randint(10, 300)} Trần Phú, Minh An, Hội An, Quảng Nam",
}
for _t, _g in LOCAL_ADDR.items():
    for _case, _key in (("hotel", "haddr"), ("car", "pickupdesk"), ("excursion", "meet")):
        TOPIC_POOLS.setdefault((_case, _t), {})[_key] = _g


def apply_topic_pools(cid, topic, slots):
    over = TOPIC_POOLS.get((cid, topic), {})
    return [dict(s, gen=(over[s["key"]] if callable(over[s["key"]]) else pick(over[s["key"]])))
            if s["key"] in over else s for s in slots]


COMMON_QA = [
    ("What's the status on {topic}, in one line?", "One line on {topic}: we're waiting on the other side, and nothing is needed from you today."),
    ("Remind me what's still outstanding on {topic}, roughly?", "For {topic}, what's outstanding is mostly confirmation from the other party; the details are all noted."),
    ("Is {topic} something I can ignore this week?", "You can park {topic} this week; nothing on it has a hard deadline in the next few days."),
    ("If you had to guess, will {topic} cause trouble later?", "I don't expect {topic} to cause trouble, as long as we keep the paperwork tidy."),
    ("Should I write anything down myself about {topic}?", "No need to write anything down for {topic}; I'm keeping track of the details here."),
    ("Could {topic} wait until after the weekend?", "Yes, {topic} can comfortably wait until after the weekend."),
]
COMMON_CHAT = [
    ("Do you ever get tired of people like me asking the same things?", "Not at all. Repeating things is part of keeping everything straight, and I'm glad to help."),
    ("Random question, but what's a good podcast for a long commute?", "People seem to love long-form history and science shows for commutes; pick one with short episodes to start."),
    ("I reorganised my whole desk instead of doing real work this morning.", "Sounds like productive procrastination. A tidy desk does help for the rest of the day."),
    ("Is it just me or has this year gone by ridiculously fast?", "It's not just you! Almost everyone says the same."),
    ("I should probably drink more water. Noted for myself, not for you.", "Ha, noted anyway. A glass next to the keyboard helps."),
    ("Thanks for keeping all of this straight, by the way. It's a lot.", "You're welcome! It is a lot, but it's manageable when it's all in one place."),
    ("Do you think handwriting lists is better than apps?", "Whichever one you actually look at is the better one. Some people do both."),
    ("My mum called and asked if I'd eaten lunch. I hadn't.", "Mums are usually right about these things. Maybe grab something now?"),
]


COMMON_CONTEXT = [
    "I'm trying to get everything tidied up before things get busy again, so apologies for the flood of messages today.",
    "Honestly, keeping all these threads straight in my head is the hardest part, which is why I'm dumping it all on you.",
    "I was going to deal with this yesterday but the evening disappeared into dinner, washing up and one episode too many.",
    "If I sound a bit scattered it's because I'm doing three things at once, as usual, and none of them particularly well.",
]
SUPPORT["context"] = [
    "The last time I ordered something from you it arrived in two days, so this whole saga has been a bit of a surprise.",
    "My partner thinks I should just give up and buy things in person, but I'm stubborn about getting this sorted properly.",
    "I've already spent more time on the phone with couriers this month than with my own family, which says a lot.",
]
TRAVEL["context"] = [
    "We've been saving for this trip for almost two years, so I really want every piece of it to go smoothly.",
    "My partner is in charge of restaurants and I'm in charge of logistics, which is how I ended up doing all of this.",
    "Last holiday we missed a connection because of a silly mistake on my part, so I'm being extra careful this time.",
]
CODING["context"] = [
    "Product keeps asking for dates I can't give them until we understand the failures, so any clarity helps.",
    "The on-call rotation this week is thin, so I'd like to avoid anything risky late in the day.",
    "I've got a design review in the afternoon, so I'll be in and out of this chat for a bit.",
]
TUTORING["context"] = [
    "My parents keep asking how revision is going and I keep saying 'fine', which is only partly true.",
    "We had a supply teacher all week who mostly showed videos, so I feel a bit behind compared to the other set.",
    "I did three practice papers on the weekend and the second one went surprisingly well, the others not so much.",
]
RENOVATION["context"] = [
    "We're camping in the living room with a microwave and a kettle until the kitchen is usable again.",
    "Every trade we talk to seems to blame whoever was there before them, which makes comparing opinions tricky.",
    "The neighbours have been patient so far but I can tell the skip on the driveway is testing them.",
]
HEALTH["context"] = [
    "I've got a folder of letters on the kitchen table that keeps growing faster than I can file it.",
    "Work has been understanding about the appointments, but I'd like to bunch them together where possible.",
    "Every portal wants a different password and I've reset three of them this month already.",
]


TOOL_REQUEST = {
    "ftest": ["Can you run the tests for {topic} and tell me which one is red?", "Run the suite around {topic}, something's failing and I don't know what.",
              "CI is red on {topic}. Can you reproduce locally and find the culprit test?"],
    "errfrag": ["Can you dig through the worker logs for {topic}? I want the actual exception.", "Pull the logs for {topic} please, I need to know what's blowing up.",
                "Something is erroring on {topic}; can you grab the exact message from the logs?"],
    "fix": ["Did someone already push a fix for {topic}? Check the git history please.", "Can you find the commit that fixed {topic}? I need it for the release notes.",
            "Look through git log for the fix to {topic}, I want to cherry-pick it."],
    "pr": ["Is there an open PR for {topic} yet? Check GitHub please.", "Can you find the pull request for {topic}? I need to link it in the ticket."],
    "fkey": ["Which config setting controls {topic}? Can you look in the service config?", "Check the YAML for {topic} — there should be a new setting for it."],
    "fpath": ["Find the main module for {topic} and open it, let's see what we're dealing with.", "Start with the core file for {topic} — open it and have a look."],
    "cmd": ["Go ahead and run the command for {topic} on staging, carefully.", "Please kick off the next step of {topic} on staging and show me the output."],
}

DOMAINS = [SUPPORT, TRAVEL, CODING, TUTORING, RENOVATION, HEALTH]


def generate(dom, seed):
    return Builder(dom, seed).build()


def main():
    base_seeds = [11, 29]
    out, log = [], []
    for dom in DOMAINS:
        for bs in base_seeds:
            for attempt in range(200):
                seed = bs * 1000 + attempt
                try:
                    conv = generate(dom, seed)
                except RuntimeError:
                    continue
                errs = validate(conv)
                if not errs:
                    break
                log.append((dom["name"], seed, errs[:3]))
            else:
                raise SystemExit(f"no valid conversation for {dom['name']} {bs}: {log[-3:]}")
            out.append(conv)
            print(f"{conv['id']}: {len(conv['facts'])} facts, {sum(1 for f in conv['facts'] if f['superseded_by'])} corrections, "
                  f"{len(conv['probes'])} probes (tries {attempt + 1})", file=sys.stderr)
    with open(os.path.join(OUT_DIR, "fresh.jsonl"), "w", encoding="utf-8") as fh:
        for conv in out:
            fh.write(json.dumps(conv, ensure_ascii=False) + "\n")
    # re-read and re-validate what was written
    with open(os.path.join(OUT_DIR, "fresh.jsonl"), encoding="utf-8") as fh:
        for line in fh:
            conv = json.loads(line)
            errs = validate(conv)
            assert not errs, (conv["id"], errs[:5])
    print(f"wrote {len(out)} conversations, all valid", file=sys.stderr)


if __name__ == "__main__":
    main()
