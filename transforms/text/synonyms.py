"""Common English synonyms, so that a paraphrase ("purchased" for "bought", "film" for "movie") counts as support.

A general word list written for this verifier (not taken from any labelled
set): groups of words that say the same thing in news, reports, science and
everyday text, and countries with the adjective of their people ("China" /
"Chinese"). Each group is stemmed with `transforms.text.tokens.stem`, so
inflected forms match too; irregular forms are listed as words of their own::

    synonym_stems(stem("purchased"))   # frozenset({'buy', 'bought', 'acquir', ...})

Only same-meaning content words belong here: "rise" and "fall" are antonyms
(a contradiction cue), "car" and "vehicle" a word and its broader class (a
paraphrase that loses detail), and quantifiers ("several" / "multiple",
"whole" / "entire", "twice" / "double") are left out because a changed scope
or count is a frequent unsupported detail.
"""

from __future__ import annotations

from transforms.text.tokens import stem

__all__ = ["INCOMPATIBLE", "SYNONYMS", "TIME_UNITS", "incompatible_stems", "synonym_stems"]

_GROUPS = """
buy bought purchase | sell sold | say said state stated tell told | show reveal demonstrate indicate
start begin began begun commence launch | end finish conclude | big large huge enormous massive
small little tiny | fast quick rapid swift | help assist aid | use utilize utilise employ
need require | get got obtain | make made create | try attempt | allow permit let | ban prohibit forbid
forbade forbidden bar | kill slay | die dead death | injure wound hurt | arrest detain | attack assault
fire blaze | car automobile | film movie | firm company | doctor physician | child kid
children kids | woman women lady | man men gentleman | student pupil | job employment occupation
study research | effect impact influence | method approach technique | propose introduce present
improve enhance boost | aim goal objective | examine investigate explore analyze analyse | kind type sort
significant substantial considerable | main primary principal chief
 rise increase grow climb surge | fall decline drop
decrease fell plunge plummet slump tumble | cut reduce lower | earn make | pay paid | reply respond
answer | ask inquire enquire | talk speak spoke spoken discuss | choose chose chosen select pick | hire
recruit | quit resign | fire dismiss sack | win won | lose lost | leave depart | arrive reach
| go went gone | build built construct | destroy demolish | damage harm |
repair fix mend | buy acquire acquisition | own possess | hold held | meet met | find discover
| see saw seen | write wrote written author | read | teach taught | learn learnt learned | think
believe | know knew known | seem appear | maybe perhaps possibly
| now currently | later subsequently afterwards | before previously
earlier prior | soon shortly | enough sufficient | happy glad pleased |
sad unhappy | angry furious | afraid scared frightened | famous renowned celebrated well-known | rich
wealthy | poor impoverished | ill sick unwell | hospital clinic | money cash funds | price cost | law
legislation statute | rule regulation | government administration | country nation | area region zone
| road street | home house residence | building structure |
ship vessel boat | plane aircraft airplane aeroplane | trip journey voyage | war conflict | fight
battle combat | police officers | judge justice | lawyer attorney | crime offence offense | charge
accuse | guilty convicted | jail prison | victim casualty | disaster catastrophe | accident crash
collision | illness disease sickness | treatment therapy | drug medication medicine | result outcome
| problem issue | answer solution | question query | idea concept notion | plan scheme | rule govern
| important significant | clear obvious evident | correct accurate | wrong incorrect mistaken |
false untrue | true accurate | begin start | continue persist | stop halt cease | keep retain maintain |
give gave given provide grant | take took taken | put place | want wish desire | like enjoy | hate
dislike | love adore | call name | named called titled | nickname moniker | born birth | marry married
wed | divorce divorced | father dad | mother mom mum | wife spouse | husband
spouse | song track | album LP | singer vocalist | actor performer |
series show | episode installment | magazine journal | paper article | newspaper paper |
website site | phone telephone | computer pc | software program programme | data information
| percent percentage
| reveal disclose | claim assert allege contend | warn caution | approve endorse authorize authorise
| cancel scrap | postpone delay defer | emphasize emphasise stress highlight | happen occur | finish complete
| resident inhabitant | career profession | participate partake | expand extend broaden | remove delete erase
| mandate require oblige | reporter journalist | lawsuit litigation | estimate approximate | various different diverse
| hourly hour | daily day | weekly week | monthly month | quarterly quarter | annually annual year
"""

# A country and the adjective of its people name the same place ("a Chinese mine" / "a mine in China"); the ones
# that a shared prefix does not already join ("Canada" / "Canadian" does).
_DEMONYMS = """
china chinese | japan japanese | france french | germany german | britain british | spain spanish | italy italian
| russia russian | netherlands dutch | sweden swedish | denmark danish | norway norwegian | finland finnish
| poland polish | ireland irish | scotland scottish | wales welsh | england english | greece greek
| turkey turkish | portugal portuguese | switzerland swiss | belgium belgian | egypt egyptian | israel israeli
| iran iranian | iraq iraqi | pakistan pakistani | thailand thai | vietnam vietnamese | philippines filipino
| peru peruvian | chile chilean | brazil brazilian | mexico mexican | ukraine ukrainian | taiwan taiwanese
"""


def _build() -> dict[str, frozenset[str]]:
    out: dict[str, set[str]] = {}
    for group in (_GROUPS + "|" + _DEMONYMS).split("|"):
        stems = {stem(w) for w in group.split()}
        if len(stems) < 2:
            continue
        for s in stems:
            out.setdefault(s, set()).update(stems - {s})
    return {s: frozenset(v) for s, v in out.items()}


SYNONYMS: dict[str, frozenset[str]] = _build()


def synonym_stems(word_stem: str) -> frozenset[str]:
    """Stems of words that mean the same as `word_stem` (empty when none is listed)."""
    return SYNONYMS.get(word_stem, frozenset())


# Incompatible words: members of one closed class, of which a thing is one at a time ("a red car" is no "blue car",
# "charged with murder" is no "charged with manslaughter", "in the first half" is not "in the second half"). A claim
# word in the slot where the evidence has another of its class says something else; only lowercase common words that
# are rarely anything else ("may", "march", "spring", "fall", "lead", "train" are left out).
_INCOMPATIBLE_GROUPS = """
red orange yellow green blue purple violet pink brown black white grey gray
| monday tuesday wednesday thursday friday saturday sunday
| january february april june july august september october november december
| summer autumn winter
| morning afternoon evening night midnight noon dawn dusk
| breakfast lunch dinner supper brunch
| yesterday today tomorrow tonight
| father mother son daughter brother sister uncle aunt nephew niece grandfather grandmother grandson granddaughter
| husband wife boyfriend girlfriend
| north south east west northeast northwest southeast southwest
| northern southern eastern western
| first second third fourth fifth sixth seventh eighth ninth tenth
| gold silver bronze copper iron steel aluminium aluminum
| murder manslaughter assault robbery theft burglary fraud kidnapping
| text image video audio
| guitarist drummer bassist pianist violinist keyboardist
| car bus truck bicycle motorcycle
| cat dog horse cow pig sheep goat chicken rabbit
| minute minutes hour hours day days week weeks month months year years decade decades century centuries
| hourly daily nightly weekly biweekly monthly quarterly annually
| buyer seller | tenant landlord | lessee lessor | plaintiff defendant | employer employee | lender borrower
| licensor licensee | nurse physician surgeon pharmacist | administrator admin viewer editor
| board shareholders auditors | employee contractor intern | patient caregiver
| windows macos linux ios android
| json xml csv parquet yaml html pdf
"""

# Time units belong to a class too ("for several weeks" is not "for several months"), but a counted one ("two years",
# "24 months") is a quantity: `transforms.text.quantities` compares those, converting the units.
TIME_UNITS = frozenset(stem(w) for w in "minute hour day week month year decade century centuries".split())


def _build_incompatible() -> dict[str, frozenset[str]]:
    out: dict[str, frozenset[str]] = {}
    for group in _INCOMPATIBLE_GROUPS.split("|"):
        stems = {stem(w) for w in group.split()}
        for s in stems:  # a stem in two groups excludes the members of both
            out[s] = out.get(s, frozenset()) | (stems - {s} - SYNONYMS.get(s, frozenset()))
    return out


INCOMPATIBLE: dict[str, frozenset[str]] = _build_incompatible()


def incompatible_stems(word_stem: str) -> frozenset[str]:
    """Stems of words of the same closed class as `word_stem` that it excludes (empty when it is in none)."""
    return INCOMPATIBLE.get(word_stem, frozenset())
