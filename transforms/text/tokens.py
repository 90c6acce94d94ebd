"""Word-level text matching for the heuristic verifier: tokens with offsets, light stems, word weights, cues.

Everything is plain Python and cached, because the verifier runs on every
sentence of every audited answer::

    toks = tokenize("The patient received 50mg of metoprolol.")
    [t.stem for t in toks if not t.stop]   # ['patient', 'receiv', '50mg', 'metoprolol']

Stems are suffix-stripped after irregular verb forms are mapped to their base
("left" -> "leave"). Word weights stand in for IDF without a corpus: function
words and opening connectives ("However", "Additionally") weigh nothing, very
common English words little, capitalised names and long rare words most.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

__all__ = [
    "ANTONYMS",
    "NEGATION_CUES",
    "NEGATION_STEMS",
    "STOPWORDS",
    "STOP_STEMS",
    "Token",
    "citation_marker_spans",
    "WORD_PATTERN",
    "count_negations",
    "is_negation",
    "is_negation_word",
    "stem",
    "tokenize",
    "word_weight",
]

WORD_PATTERN = _WORD = re.compile(r"[^\W_]+(?:['\u2019][a-zA-Z]{1,2}\b)?")
# Inline citation markers: [1], [2, 3], [doc_alpha], [12-14]; not claims, so never matched as words.
_CITATION = re.compile(r"\s?\[(?:[\w.:\-]+(?:\s*[,;]\s*[\w.:\-]+)*)\]")

STOPWORDS = frozenset(
    """a an the and or but if then than so as of at by for from in into on onto to with within without about above
    after before below between during over under up down out off through across along around against among upon via
    is am are was were be been being do does did done has have had having will would shall should can could may might
    must it its it's this that these those there here which who whom whose what when where why how i me my we our us
    you your he him his she her they them their one ones also too very just only even both either each such other
    another some any all most more many much few own same not no nor s t d ll ve re m""".split()
)

# Very common content words: weak evidence of support on their own (a corpus-free stand-in for low IDF).
_COMMON = frozenset(
    """say said says tell told report reported reports state stated according include includes included including
    make made makes take took taken get got give given gave go went gone come came use used uses using know known
    new old good great large small big high low long short first last next well way time times year years day days
    people person thing things part parts place work works worked help helped show shows showed shown find found
    become became call called receive received see seen seem want need like also however although while since still
    because therefore thus later early now then often usually generally several various many number numbers based
    main major key important different similar certain known able around total overall set put keep kept let provide
    provided provides offer offered allow allowed lead led result results cause caused case cases change changed
    group groups area areas level levels point points form forms type types kind way ways back another
    run runs ran start started starting begin began beginning hold held serve served remain remained continue
    continued stay stayed last lasted carry carried stand stood bring brought keep hold put""".split()
    # Connectives and emphasis that generated answers add around facts without stating one.
    + """additionally significantly various crucial essential ensure enhance effectively role notable notably
    particularly especially specific specifically typically primarily mainly commonly widely highly""".split()
)

NEGATION_CUES = frozenset(
    """not no never none neither nor without cannot can't won't don't doesn't didn't isn't aren't wasn't weren't
    hasn't haven't hadn't shouldn't wouldn't couldn't mustn't needn't shan't ain't nobody nothing nowhere n't fail
    failed fails failing unable lack lacks lacked refuse refused deny denied denies non""".split()
    # Verbs that forbid: "prohibited" says what "not allowed" says.
    + "ban banned bans prohibit prohibited prohibits prohibition forbid forbids forbidden forbade".split()
)

# Antonym pairs: one side in the sentence and the other in the aligned evidence is a contradiction cue.
_ANTONYM_PAIRS = [
    tuple(pair.split(":"))
    for pair in """increase:decrease increase:reduce rise:fall rise:drop grow:shrink higher:lower more:less more:fewer
    larger:smaller gain:loss before:after early:late earlier:later first:last win:lose won:lost accept:reject
    approve:reject allow:ban allow:prohibit open:close start:end begin:end male:female true:false
    positive:negative success:failure succeed:fail above:below maximum:minimum strong:weak up:down buy:sell
    bought:sold include:exclude support:oppose agree:disagree legal:illegal always:never all:none north:south
    east:west born:died internal:external minor:major safe:unsafe effective:ineffective public:private young:old
    rose:fell grew:shrank older:younger hot:cold warm:cold easy:difficult cheap:expensive rare:common
    same:different love:hate love:dislike like:dislike enjoy:dislike alive:dead guilty:innocent victory:defeat
    profit:loss import:export arrive:depart arrival:departure enter:exit advantage:disadvantage present:absent
    inside:outside wet:dry slow:fast rich:poor full:empty friend:enemy ally:enemy peace:war improve:worsen
    improve:deteriorate better:worse best:worst winner:loser optimistic:pessimistic happy:sad ancient:modern
    permanent:temporary rural:urban domestic:foreign natural:artificial simple:complex narrow:wide thin:thick
    deep:shallow loud:quiet senior:junior majority:minority upper:lower inner:outer add:remove men:women
    man:woman boy:girl
    previous:next last:next latest:next latest:previous latest:earliest past:future former:current prior:subsequent
    preceding:following longer:shorter faster:slower stronger:weaker wider:narrower taller:shorter bigger:smaller
    heavier:lighter highest:lowest largest:smallest biggest:smallest longest:shortest fastest:slowest
    oldest:youngest oldest:newest earliest:latest expand:shrink strengthen:weaken accelerate:decelerate
    acquit:convict acquitted:convicted pass:fail surplus:deficit offensive:defensive
    ascend:descend input:output inbound:outbound indoor:outdoor online:offline manual:automatic
    voluntary:mandatory voluntary:compulsory optional:mandatory optional:compulsory partial:full
    domestic:international minimum:maximum""".split()
]


_STEM_COLLISIONS = frozenset({"not"})


# Irregular verb forms to their base form, so that "left" meets "leaving" and "took" meets "taken" (suffix stripping
# cannot). Forms that are more often another word are left out ("bit", "fed", "found", "saw" the tool is kept: rare).
_IRREGULAR = {
    form: base
    for base, forms in (
        line.split(":")
        for line in """leave:left go:went,gone take:took,taken make:made find:finding hold:held begin:began,begun
        win:won lose:lost pay:paid say:said tell:told sell:sold buy:bought bring:brought think:thought catch:caught
        teach:taught fight:fought seek:sought build:built send:sent spend:spent mean:meant keep:kept feel:felt
        lead:led fall:fell,fallen rise:rose,risen grow:grew,grown know:knew,known draw:drew,drawn fly:flew,flown
        throw:threw,thrown write:wrote,written drive:drove,driven ride:rode,ridden speak:spoke,spoken
        break:broke,broken choose:chose,chosen freeze:froze,frozen steal:stole,stolen wake:woke,woken give:gave,given
        come:came become:became run:ran sit:sat stand:stood understand:understood meet:met flee:fled hide:hid,hidden
        shoot:shot strike:struck hang:hung dig:dug stick:stuck sing:sang,sung ring:rang drink:drank,drunk swim:swam
        sink:sank,sunk shrink:shrank,shrunk see:saw,seen do:did,done eat:ate,eaten show:shown forget:forgot,forgotten
        get:got,gotten lie:lay,lain bear:bore hear:heard light:lit sleep:slept sweep:swept weep:wept""".split()
    )
    for form in forms.split(",")
    if form != "finding"
}


def _stem_raw(word: str) -> str:
    w = word.lower().replace("\u2019", "'")
    if w.endswith("'s"):
        w = w[:-2]
    w = _IRREGULAR.get(w, w)
    if len(w) <= 3 or w.isdigit():
        return w
    if w.endswith("ies") and len(w) > 4:
        w = w[:-3] + "y"
    elif w.endswith("sses"):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    if w.endswith("ing") and len(w) > 5:
        w = w[:-3]
    elif w.endswith("ied") and len(w) > 4:
        w = w[:-3] + "y"
    elif w.endswith("ed") and len(w) > 4:
        w = w[:-2]
    elif w.endswith("ly") and len(w) > 5:
        w = w[:-2]
    if w.endswith("e") and len(w) > 3:
        w = w[:-1]
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeiouls":
        w = w[:-1]
    if w in _STEM_COLLISIONS:  # "noted" must not become the negation "not"
        return w + "e"
    return w


@lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    """A light suffix-stripping stem: "received" and "receives" -> "receiv", "studies" -> "study"."""
    return _stem_raw(word)


ANTONYMS: dict[str, frozenset[str]] = {}
for _a, _b in _ANTONYM_PAIRS:
    for _x, _y in ((stem(_a), stem(_b)), (stem(_b), stem(_a))):
        ANTONYMS[_x] = ANTONYMS.get(_x, frozenset()) | {_y}

NEGATION_STEMS = frozenset(stem(w) for w in NEGATION_CUES)
_COMMON_STEMS = frozenset(stem(w) for w in _COMMON)
# Sentence connectives that generated answers open with ("However, ...", "Additionally, ..."): they link claims but
# state nothing the evidence could support, so they weigh nothing (an evidence passage rarely repeats them).
_CONNECTIVES = frozenset(
    """additionally however moreover furthermore finally therefore thus hence alternatively nevertheless
    nonetheless meanwhile consequently accordingly likewise similarly conversely ultimately overall importantly
    indeed""".split()
)  # whole words, not stems: "finally" and "importantly" would take "final" and "important" with them
_CONNECTIVE_STEMS = frozenset(stem(w) for w in _CONNECTIVES)  # a cheap first test
STOP_STEMS = _STOP_STEMS = frozenset(stem(w) for w in STOPWORDS) | STOPWORDS


class Token(NamedTuple):
    """One word of a text: its characters, offsets, stem and whether it is a function word."""

    text: str
    start: int
    end: int
    stem: str
    stop: bool
    capital: bool


_new = tuple.__new__


@lru_cache(maxsize=4096)
def _tokenize_cached(text: str) -> tuple[Token, ...]:
    out = []
    for m in _WORD.finditer(text):
        word = m.group()
        low = word.lower()
        s = stem(word)
        # tuple.__new__ directly: NamedTuple's own __new__ is a Python frame, and this runs for every word.
        out.append(_new(Token, (word, m.start(), m.end(), s, low in STOPWORDS or s in _STOP_STEMS, word[0].isupper())))
    return tuple(out)


def tokenize(text: str) -> tuple[Token, ...]:
    """The words of `text` with character offsets (cached: passages repeat across sentences)."""
    return _tokenize_cached(text)


def citation_marker_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of inline citation markers such as "[1]" or "[doc_alpha]"."""
    return [m.span() for m in _CITATION.finditer(text)]


def count_negations(stems: list[str]) -> int:
    """Negation cues in a stem sequence; "not only" (an intensifier, not a negation) does not count."""
    n = 0
    for i, st in enumerate(stems):
        if st in NEGATION_STEMS or st.endswith("n't"):
            if st == "not" and i + 1 < len(stems) and stems[i + 1] in ("only", "just"):
                continue
            n += 1
    return n


@lru_cache(maxsize=100_000)
def is_negation_word(word: str) -> bool:
    """Whether a word negates its clause ("not", "never", "didn't", ...); cached like `stem`: asked of every word
    near a claim word, for each passage a claim is checked against."""
    low = word.lower().replace("\u2019", "'")
    return low in NEGATION_CUES or low.endswith("n't")


def is_negation(token: Token) -> bool:
    """Whether a token negates its clause."""
    return is_negation_word(token.text)


def word_weight(
    token: Token, *, common: float = 0.35, name: float = 1.5, long: float = 1.2, long_chars: int = 8
) -> float:
    """How much a word counts towards a claim: 0 for function words, low (`common`) for common words, high for
    names (`name`) and long words (`long`, from `long_chars` letters). The heuristic passes its config's weights."""
    if token.stop or (token.stem in _CONNECTIVE_STEMS and token.text.lower() in _CONNECTIVES):
        return 0.0
    if token.stem in _COMMON_STEMS:
        return common
    weight = 1.0
    if token.capital and token.start > 0:
        weight = name
    elif len(token.text) >= long_chars:
        weight = long
    return weight
