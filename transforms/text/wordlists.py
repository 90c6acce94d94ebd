"""The English word lists behind tokens, stems and word weights: data only, no logic (`transforms.text.tokens`
uses them). Add a word here, not in the code that reads it; every list says what it is for.
"""

from __future__ import annotations

__all__ = [
    "ANTONYM_PAIRS",
    "COMMON_WORDS",
    "CONNECTIVES",
    "CONVERSE_PAIRS",
    "EXCLUSIVE_WORDS",
    "FREQUENCY_STEMS",
    "IRREGULAR_FORMS",
    "NEGATION_CUES",
    "SCOPE_WORDS",
    "STOPWORDS",
    "UNIVERSAL_WORDS",
]

STOPWORDS = frozenset(
    """a an the and or but if then than so as of at by for from in into on onto to with within without about above
    after before below between during over under up down out off through across along around against among upon via
    is am are was were be been being do does did done has have had having will would shall should can could may might
    must it its it's this that these those there here which who whom whose what when where why how i me my we our us
    you your he him his she her they them their one ones also too very just only even both either each such other
    another some any all most more many much few own same not no nor s t d ll ve re m""".split()
)

# Very common content words: weak evidence of support on their own (a corpus-free stand-in for low IDF).
COMMON_WORDS = frozenset(
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

# Converse pairs: one relation seen from either end ("the stay lasted six days before discharge" says what
# "discharged after a stay of six days" says). A converse word against its partner contradicts only when the
# words on each side of it stay on the same side (the heuristic's `converse` cue decides from them).
CONVERSE_PAIRS = [
    tuple(pair.split(":")) for pair in "before:after prior:subsequent preceding:following precede:follow".split()
]

# Antonym pairs: one side in the sentence and the other in the aligned evidence is a contradiction cue.
ANTONYM_PAIRS = [
    tuple(pair.split(":"))
    for pair in """increase:decrease increase:reduce rise:fall rise:drop grow:shrink higher:lower more:less more:fewer
    larger:smaller gain:loss early:late earlier:later first:last win:lose won:lost accept:reject
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
    previous:next last:next latest:next latest:previous latest:earliest past:future former:current
    longer:shorter faster:slower stronger:weaker wider:narrower taller:shorter bigger:smaller
    heavier:lighter highest:lowest largest:smallest biggest:smallest longest:shortest fastest:slowest
    oldest:youngest oldest:newest earliest:latest expand:shrink strengthen:weaken accelerate:decelerate
    acquit:convict acquitted:convicted pass:fail surplus:deficit offensive:defensive
    ascend:descend input:output inbound:outbound indoor:outdoor online:offline manual:automatic
    voluntary:mandatory voluntary:compulsory optional:mandatory optional:compulsory partial:full
    domestic:international minimum:maximum raise:cut raise:lower rise:decline increase:decline grow:decline
    enable:disable enabled:disabled written:oral full:half add:drop""".split()
]


# Irregular verb forms to their base form, so that "left" meets "leaving" and "took" meets "taken" (suffix stripping
# cannot). Forms that are more often another word are left out ("bit", "fed", "found", "saw" the tool is kept: rare).
IRREGULAR_FORMS = {
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


# Superlatives and exclusives are claims of their own ("the largest", "the only", "all"): one the evidence never uses
# counts against the sentence even where the words are function words that otherwise weigh nothing.
SCOPE_WORDS = frozenset(
    """only sole solely exclusively unique all every always never entire first most least best worst largest biggest
    smallest highest lowest greatest oldest youngest longest shortest fastest earliest latest newest strongest
    richest""".split()
)

# The two ends of a scope: a claim that narrows what its evidence sentence states for everyone ("full-time employees
# only" / "all employees", "only the buyer" / "either party"), or widens what it restricts, changes the scope slot.
EXCLUSIVE_WORDS = frozenset("only sole solely exclusively".split())
UNIVERSAL_WORDS = frozenset("all every each any either both always".split())


# Frequency words keep a stem of their own: "-ly" stripping would make "monthly" the unit "month", so "measured
# monthly during the first month" would find its "monthly" in the evidence's "weekly during the first month".
# Words of one meaning share a stem ("annually" / "yearly").
FREQUENCY_STEMS = {
    form: base
    for base, forms in (
        line.split(":")
        for line in """hourly:hourly daily:daily nightly:nightly weekly:weekly biweekly:biweekly,fortnightly
        monthly:monthly quarterly:quarterly annual:annually,yearly""".split()
    )
    for form in forms.split(",")
}


# Sentence connectives that generated answers open with ("However, ...", "Additionally, ..."): they link claims but
# state nothing the evidence could support, so they weigh nothing (an evidence passage rarely repeats them).
CONNECTIVES = frozenset(
    """additionally however moreover furthermore finally therefore thus hence alternatively nevertheless
    nonetheless meanwhile consequently accordingly likewise similarly conversely ultimately overall importantly
    indeed""".split()
)  # whole words, not stems: "finally" and "importantly" would take "final" and "important" with them
