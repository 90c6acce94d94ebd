"""Numbers, units, dosages, percentages, money, dates, times and durations found in text, normalised.

The heuristic verifier treats these as high-precision claims: a quantity in a
sentence is supported only by an equal quantity in the evidence, and a
different value of the same kind near the same words is a contradiction::

    [q.kind, q.value, q.unit for q in extract_quantities("potassium at 4.2 mmol/L on March 3, 2024")]
    # [('number', 4.2, 'mmol/l'), ('date', (2024, 3, 3), '')]

Times are minutes after midnight and durations are seconds, so that a gap
between two evidence times can be compared with a duration in a sentence.
"""

from __future__ import annotations

import re
from bisect import bisect_right, insort
from datetime import date
from functools import lru_cache
from typing import NamedTuple

from transforms.text.tokens import citation_marker_spans, stem

__all__ = ["Quantity", "counted", "extract_quantities", "same_value", "time_gaps"]

_MONTHS = {
    name: i + 1
    for i, names in enumerate(
        "january,jan february,feb march,mar april,apr may june,jun july,jul august,aug "
        "september,sep,sept october,oct november,nov december,dec".split()
    )
    for name in names.split(",")
}
_MONTH_RE = (
    r"(?P<mon>Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sept?(?:ember)?"
    r"|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\.?"
)
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>1\d{3}|20\d{2})"

_DATE_PATTERNS = [
    re.compile(rf"\b{_MONTH_RE}\s+{_DAY},?\s+{_YEAR}\b"),
    re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH_RE},?\s+{_YEAR}\b"),
    re.compile(r"\b(?P<year>1\d{3}|20\d{2})-(?P<mon>[01]\d)-(?P<day>[0-3]\d)\b"),
    re.compile(r"\b(?P<mon>[01]?\d)/(?P<day>[0-3]?\d)/(?P<year>1\d{3}|20\d{2})\b"),
    re.compile(rf"\b{_MONTH_RE}\s+{_DAY}\b(?![:\d])"),
    re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH_RE}\b"),
    re.compile(rf"\b{_MONTH_RE},?\s+{_YEAR}\b"),
]
_AGE = re.compile(r"[\s-]+old\b")
_ANY_MONTH = re.compile(r"\b(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)")
_AMPM = re.compile(r"\d\s*[ap]\.?m\b", re.IGNORECASE)
_TIME = re.compile(
    r"\b(?P<h>[01]?\d|2[0-3])(?::(?P<m>[0-5]\d))(?::[0-5]\d)?\s*(?P<ap>[ap]\.?\s?m\b\.?)?"
    r"|\b(?P<h2>1[0-2]|0?[1-9])\s*(?P<ap2>[ap]\.?m\b\.?)",
    re.IGNORECASE,
)


def _table(text: str) -> dict[str, str]:
    """A "key=value key=value" table; "_" in a key stands for a space."""
    return {k.replace("_", " "): v for k, v in (kv.split("=") for kv in text.split())}


_SCALE = {
    k: float(v)
    for k, v in _table("""
    thousand=1e3 k=1e3 million=1e6 m=1e6 mn=1e6 billion=1e9 bn=1e9 b=1e9 trillion=1e12 tn=1e12 hundred=1e2 dozen=12
    """).items()
}
_DURATION = {
    k: float(v)
    for k, v in _table("""
    second=1 sec=1 minute=60 min=60 hour=3600 hr=3600 day=86400 week=604800 month=2629800 year=31557600
    decade=315576000 century=3155760000
    """).items()
}
_UNIT_ALIASES = _table("""
    percent=% per_cent=% pct=% mgs=mg milligrams=mg milligram=mg grams=g gram=g kilograms=kg kilogram=kg kgs=kg
    micrograms=mcg µg=mcg ug=mcg millilitres=ml milliliters=ml ml=ml mls=ml kilometres=km kilometers=km
    kilometre=km kilometer=km metres=m meters=m metre=m meter=m miles=mile feet=ft foot=ft pounds=lb lbs=lb
    dollars=$ dollar=$ usd=$ euros=€ euro=€
""")
# Hundredths of a currency, stated in the currency's unit: "25 cents" is "$0.25".
_SUBUNITS = {"cent": ("$", 0.01), "cents": ("$", 0.01), "penny": ("£", 0.01), "pence": ("£", 0.01)}
_KNOWN_UNITS = frozenset(
    "% mg g kg mcg ml l dl mmol/l mmol mg/dl mg/kg mmhg bpm iu km m cm mm mi mile ft lb oz kb mb gb tb mph kph km/h "
    "hz khz mhz ghz kw mw gw w kwh v °c °f c f ha acre sq".split()
)
_NUMBER_WORDS = {
    w: i
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
        "seventeen eighteen nineteen twenty".split()
    )
}
_NUMBER_WORDS.update(zip("thirty forty fifty sixty seventy eighty ninety".split(), range(30, 100, 10), strict=True))
_NUMBER_WORDS.update(
    {"hundred": 100, "thousand": 1000, "dozen": 12, "million": 10**6, "billion": 10**9, "trillion": 10**12}
)
_NUM = re.compile(
    r"(?<![\w.])(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(?![\w.]*\d)"
    r"(?:\s?(?P<unit>%|[a-zA-Zµ]+(?:/[a-zA-Z]+)?))?"
)
_DIGITS = re.compile(r"\d+")
_MARGIN = 24  # characters around digits that a date, time or unit can reach ("September 30", "12 milligrams")
_CURRENCY_BEFORE = re.compile(r"([$€£¥])\s?$")
_TENS = "twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety"
_WORDNUM = re.compile(  # "twenty-five" and "twenty five" are one number, 25
    rf"\b(?:(?P<tens>{_TENS})[\s-](?=(?:one|two|three|four|five|six|seven|eight|nine)\b))?"
    r"(?P<num>" + "|".join(sorted(_NUMBER_WORDS, key=len, reverse=True)) + r")\b"
    r"(?:[\s-](?P<unit>[a-zA-Z]+))?",
    re.IGNORECASE,
)


class Quantity(NamedTuple):
    """One normalised value in a text: kind ("number", "date", "time", "duration"), value, unit, char span."""

    kind: str
    value: object
    unit: str
    start: int
    end: int
    text: str


def _unit(raw: str | None) -> tuple[str, float]:
    """Normalised unit and the scale it multiplies the number by ("million" -> ("", 1e6))."""
    if not raw:
        return "", 1.0
    low = raw.lower()
    if low in _SCALE:
        return "", _SCALE[low]
    if low in _UNIT_ALIASES:
        return _UNIT_ALIASES[low], 1.0
    if low in _SUBUNITS:
        return _SUBUNITS[low]
    if low.rstrip("s") in _DURATION:
        return "dur:" + low.rstrip("s"), 1.0
    if low.rstrip("s") in _UNIT_ALIASES:
        return _UNIT_ALIASES[low.rstrip("s")], 1.0
    if low in _KNOWN_UNITS:
        return low, 1.0
    # Any other word after a number ("19 pickups") is not a unit; the words around are compared as words.
    return "?", 1.0


def _digit_windows(text: str) -> list[tuple[int, int]]:
    """Stretches of text around digits: every pattern but number words needs a digit, so only these are scanned."""
    windows: list[tuple[int, int]] = []
    for m in _DIGITS.finditer(text):
        start, end = max(0, m.start() - _MARGIN), m.end() + _MARGIN
        if windows and start <= windows[-1][1]:
            windows[-1] = (windows[-1][0], end)
        else:
            windows.append((start, end))
    return windows


def _finditer(pattern: re.Pattern, text: str, windows: list[tuple[int, int]]):
    for start, end in windows:
        yield from pattern.finditer(text, start, end)


def _number_words(text: str):
    """Matches of number words ("five", "twenty"), found with str.find: much faster than one regex over the text."""
    low = text.lower()
    starts = set()
    for word in _NUMBER_WORDS:
        i = low.find(word)
        while i >= 0:
            starts.add(i)
            i = low.find(word, i + 1)
    for i in sorted(starts):
        m = _WORDNUM.match(text, i)
        if m:
            yield m


def _taken(spans: list[tuple[int, int]], start: int, end: int) -> bool:
    """Whether [start, end) overlaps a span already taken; `spans` is kept sorted and non-overlapping."""
    i = bisect_right(spans, (start, float("inf")))
    return (i > 0 and spans[i - 1][1] > start) or (i < len(spans) and spans[i][0] < end)


@lru_cache(maxsize=4096)
def extract_quantities(text: str) -> tuple[Quantity, ...]:
    """Dates, times, durations and numbers (with unit and scale) in `text`, in order of position. Nothing inside
    a citation marker counts: "[2]" refers to a source (a footnote in a passage, a citation in an answer)."""
    found: list[Quantity] = []
    spans: list[tuple[int, int]] = citation_marker_spans(text) if "[" in text else []
    windows = _digit_windows(text)
    has_month = windows and _ANY_MONTH.search(text) is not None
    has_sep = "-" in text or "/" in text
    for i, pattern in enumerate(_DATE_PATTERNS):
        if not (has_month if i not in (2, 3) else has_sep):
            continue
        for m in _finditer(pattern, text, windows):
            if _taken(spans, m.start(), m.end()):
                continue
            gd = m.groupdict()
            mon = gd.get("mon")
            month = int(mon) if mon and mon.isdigit() else _MONTHS.get((mon or "").lower().rstrip("."))
            if mon and not month or month and not 1 <= month <= 12:
                continue
            day = int(gd["day"]) if gd.get("day") else None
            year = int(gd["year"]) if gd.get("year") else None
            found.append(Quantity("date", (year, month, day), "", m.start(), m.end(), m.group()))
            insort(spans, m.span())
    for m in _finditer(_TIME, text, windows) if ":" in text or _AMPM.search(text) else ():
        if _taken(spans, m.start(), m.end()):
            continue
        hour = int(m.group("h") or m.group("h2"))
        minute = int(m.group("m") or 0)
        ampm = (m.group("ap") or m.group("ap2") or "").lower()
        if ampm.startswith("p") and hour < 12:
            hour += 12
        elif ampm.startswith("a") and hour == 12:
            hour = 0
        shown = m.group().rstrip()
        if shown.endswith(".") and shown.count(".") == 1:  # "8:15 PM." ends a sentence; "8 p.m." keeps its dots
            shown = shown[:-1]
        found.append(Quantity("time", hour * 60 + minute, "", m.start(), m.start() + len(shown), shown))
        insort(spans, (m.start(), m.start() + len(shown)))
    for m in _finditer(_NUM, text, windows):
        if _taken(spans, m.start("num"), m.end("num")):
            continue
        value = float(m.group("num").replace(",", ""))
        unit, scale = _unit(m.group("unit"))
        end = m.end("unit") if m.group("unit") and unit != "?" else m.end("num")
        unit = "" if unit == "?" else unit
        start = m.start("num")
        currency = _CURRENCY_BEFORE.search(text, max(0, start - 2), start)
        if currency:
            unit, start = currency.group(1), currency.start()
        kind = "number"
        if unit.startswith("dur:") and _AGE.match(text, end):  # "24 year old" is an age, not a span of time
            unit, end = "", m.end("num")
        if unit.startswith("dur:"):
            kind, value, unit = "duration", value * _DURATION[unit[4:]], ""
        elif not unit and m.group("num").isdigit() and 1000 <= value <= 2099 and len(m.group("num")) == 4:
            kind = "year"
        found.append(Quantity(kind, value * scale, unit, start, end, text[start:end]))
        insort(spans, (start, end))
    for m in _number_words(text):
        if _taken(spans, m.start(), m.end()):
            continue
        value = float(_NUMBER_WORDS[m.group("num").lower()] + _NUMBER_WORDS.get((m.group("tens") or "").lower(), 0))
        unit, scale = _unit(m.group("unit"))
        if value == 1 and unit in ("", "?"):  # "one" alone is mostly a pronoun; "one year", "one mg" are amounts
            continue
        end = m.end("unit") if m.group("unit") and unit != "?" else m.end("num")
        unit = "" if unit == "?" else unit
        if unit.startswith("dur:") and _AGE.match(text, end):
            unit, end = "", m.end("num")
        if unit.startswith("dur:"):
            found.append(Quantity("duration", value * _DURATION[unit[4:]], "", m.start(), end, text[m.start() : end]))
        else:
            found.append(Quantity("number", value * scale, unit, m.start(), end, text[m.start() : end]))
        insort(spans, (m.start(), end))
    found.sort(key=lambda q: q.start)
    return tuple(found)


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


def same_value(claim: Quantity, ev: Quantity) -> bool:
    """Whether an evidence quantity states the claim's value (a less specific claim date or a rounding counts)."""
    if claim.kind == "date" and ev.kind == "date":
        (cy, cm, cd), (ey, em, ed) = claim.value, ev.value
        # Evidence often leaves out the year of a day it names ("died on May 7"): the day and month must match.
        year_ok = cy is None or cy == ey or (ey is None and cd is not None and cd == ed)
        return year_ok and (cm is None or cm == em) and (cd is None or cd == ed)
    if claim.kind == "year":
        return (ev.kind == "year" and _close(claim.value, ev.value)) or (
            ev.kind == "date" and ev.value[0] == claim.value
        )
    if claim.kind != ev.kind:
        if {claim.kind, ev.kind} == {"number", "year"}:
            return _close(float(claim.value), float(ev.value))
        return False
    if claim.kind in ("time", "duration"):
        return claim.value == ev.value
    a, b = float(claim.value), float(ev.value)
    if _close(a, b):
        return True
    # A claim may round the evidence ("4.2" for "4.23", "5 million" for "5.1 million"), to its own precision only.
    digits = re.search(r"\d[\d,]*(?:\.(\d+))?", claim.text)
    if not digits or b == 0:
        return False
    places = len(digits.group(1) or "")
    shown = float(digits.group().replace(",", "")) or 1.0
    return abs(a - b) <= 0.5 * 10 ** (-places) * abs(a / shown) and (places > 0 or abs(a / shown) > 1)


def time_gaps(times: list[tuple[Quantity, object]]) -> dict[float, list[tuple]]:
    """Durations (seconds) between pairs of times or dates, each with the two (quantity, source) that give it."""
    gaps: dict[float, list[tuple]] = {}
    for i, (a, doc_a) in enumerate(times):
        for b, doc_b in times[i + 1 :]:
            if a.kind == "time" and b.kind == "time":
                gap = abs(a.value - b.value) * 60.0
            elif a.kind == "date" and b.kind == "date" and None not in a.value and None not in b.value:
                try:
                    gap = abs((date(*a.value) - date(*b.value)).days) * 86400.0
                except ValueError:
                    continue
            elif {a.kind, b.kind} <= {"year", "date"}:
                ya = a.value if a.kind == "year" else a.value[0]
                yb = b.value if b.kind == "year" else b.value[0]
                if ya is None or yb is None:
                    continue
                gap = abs(float(ya) - float(yb)) * 31557600.0
            else:
                continue
            if gap > 0:
                gaps.setdefault(gap, []).append(((a, doc_a), (b, doc_b)))
    return gaps


_COUNT_STEMS = frozenset(stem(w) for w in ["a", "an", *_NUMBER_WORDS])


def counted(stems, i: int) -> bool:
    """Whether the word at position i of a stem sequence is counted by the number right before it ("two years",
    "24 months", "a year"): a quantity, compared as one, not a word on its own."""
    return i > 0 and (stems[i - 1][:1].isdigit() or stems[i - 1] in _COUNT_STEMS)
