"""Word lists for telling a factual claim from the other sentences generators write (`transforms.text.claims`).

Kept apart from the logic, as spaCy keeps its language data: each pattern is matched against the sentence
lower-cased, Markdown stripped, curly apostrophes made straight and closing punctuation dropped. A pattern
must cover the whole sentence (`fullmatch`) unless it is a prefix (`LEAD_IN_PREFIXES`), so "Hi" is a
greeting but "Hi-fi speakers ship in May" is a claim.
"""

from __future__ import annotations

__all__ = [
    "ABSTENTIONS",
    "LEAD_INS",
    "LEAD_IN_PREFIXES",
    "LEAD_IN_MAX_WORDS",
    "PLEASANTRIES",
]

_SOURCES = (
    r"(?:the |these |those |your |my |our )?(?:provided |retrieved |available |given |supplied |attached |cited "
    r"|relevant |search )?(?:policy |product |reference |support |source )?"
)
_SOURCE_NOUNS = (
    r"(?:documents?|documentation|sources?|evidence|context|passages?|excerpts?|records?|notes?|files?|materials?"
    r"|information|texts?|results?|knowledge base|data)"
)
_AFTER_SOURCE = r"(?: (?:provided|given|retrieved|available|supplied|above|shared|i (?:have|was given|can see)))?"
# Sources that are also what an answer talks about ("the policy does not cover dental implants" is a claim):
# they abstain only with nothing after the verb ("the manual does not say", "the handbook doesn't mention it").
_TOPIC_SOURCES = r"(?:the |this |that )?(?:manual|handbook|guide|policy|contract|agreement|chart|article|page|faq)"
_NOT = r"(?:do not|don't|does not|doesn't|did not|didn't|cannot|can't)"
_SAY = r"(?:say|mention|state|specify|contain|include|cover|provide|address|describe|indicate|discuss|show|tell)"
_SAYS = r"(?:says|mentions|states|specifies|contains|includes|covers|provides|addresses|describes|indicates|discusses)"
_SEEK = r"(?:find|answer|determine|tell|say|locate|confirm|see|identify|verify)"
# What may open an abstention: an apology or regret, before the sentence proper.
_OPENER = (
    r"(?:(?:unfortunately|sorry|i(?:'m| am) (?:sorry|afraid)|i apologi[sz]e|apologies|regrettably"
    r"|(?:please )?note(?: that)?)(?:,? but)?[,:]? )?"
)
_PER_SOURCES = rf"(?:(?:based on|from|in|according to|with) {_SOURCES}{_SOURCE_NOUNS}{_AFTER_SOURCE},? )?"

ABSTENTIONS = tuple(
    _OPENER + _PER_SOURCES + pattern
    for pattern in (
        r"i (?:do not|don't|dont) know(?: .*)?",
        r"i(?:'m| am) (?:not sure|unsure|not certain)(?: .*)?",
        rf"i(?:'m| am) (?:unable|not able) to {_SEEK}.*",
        rf"i (?:cannot|can't|could not|couldn't|was unable to|am unable to|wasn't able to|was not able to)"
        rf" (?:{_SEEK}|(?:find|locate) (?:any|the|that|this|an?)).*",
        rf"{_SOURCES}{_SOURCE_NOUNS}{_AFTER_SOURCE} {_NOT} {_SAY}.*",
        rf"{_SOURCES}{_SOURCE_NOUNS}{_AFTER_SOURCE} (?:is|are) silent (?:on|about) .*",
        rf"{_TOPIC_SOURCES} {_NOT} {_SAY}(?: (?:it|this|that|so|anything about (?:it|this|that)))?",
        rf"nothing in {_SOURCES}{_SOURCE_NOUNS}{_AFTER_SOURCE} {_SAYS}.*",
        r"(?:there is|there's|there was|there are) no (?:information|mention|data|record|detail|answer)s? .*",
        r"no (?:information|mention|data|details?) (?:is|was|are|were)? ?(?:available|provided|given|found).*",
        r"(?:this|that|the answer(?: to (?:this|that|your) question)?|(?:this|that|the|such) (?:information|detail)s?)"
        r" (?:is|are|was|were) not (?:mentioned|stated|covered|specified|given|provided|available|included|present"
        rf"|found|addressed|in) (?:in |by )?{_SOURCES}{_SOURCE_NOUNS}.*",
        r"i (?:do not|don't) have (?:enough |sufficient |any )?(?:information|data|details|context).*",
        r"(?:there is )?not enough (?:information|context|data)(?: .*)?",
        r"unknown",
    )
)
"""The answer declines or says the evidence does not tell: reported as an abstention, never as a claim."""

LEAD_INS = (
    r"(?:here is|here's|here are) (?:what i (?:found|know)"
    r"|a (?:short |brief |quick )?(?:summary|overview|breakdown|rundown)"
    r"|the (?:answer|summary|details|key points|main points|relevant (?:details|information)))(?: .{0,40})?",
    r"(?:in )?summary",
    r"to (?:summarize|summarise|sum up)",
    r"(?:the )?(?:key|main) (?:points|findings|facts|takeaways)",
    r"(?:based on|according to|from) (?:the |your )?(?:provided |retrieved |available )?"
    r"(?:documents?|sources?|evidence|context|passages?|records?|information)(?: provided)?",
    r"(?:let me|i will|i'll) (?:explain|summarize|summarise|break (?:it|this) down|walk you through(?: it| this)?)",
    r"(?:answer|details|overview|findings|notes?|results?|summary|background|conclusion|sources?|references?)",
)
"""Sentences that announce what follows (often ending with a colon) and state nothing themselves."""

LEAD_IN_MAX_WORDS = 6
"""A line of at most this many words that ends with a colon ("Medication:", "Key findings:") is a label."""

LEAD_IN_PREFIXES = (
    r"(?:here is|here's) what i found\s*:\s*",
    r"(?:in )?summary\s*[:,]\s*",
    r"to (?:summarize|summarise|sum up)\s*[:,]\s*",
    r"(?:based on|according to) (?:the |your )?(?:provided |retrieved )?"
    r"(?:documents?|sources?|evidence|context)\s*[:,]\s*",
)
"""Lead-ins that start a sentence which goes on to claim something: stripped before verification."""

PLEASANTRIES = (
    r"(?:hi|hello|hey|dear|good (?:morning|afternoon|evening))(?:\s+there)?(?:[ ,]+[a-z][\w.-]*){0,2}",
    r"(?:sure|certainly|of course|absolutely|great question|good question|thanks|thank you)"
    r"(?: (?:so much|for (?:asking|your question|reaching out|your patience)|thing|no problem))?",
    r"(?:i )?hope (?:this|that|it) helps(?: .*)?",
    r"(?:i(?:'m| am) )?(?:happy|glad) to help(?: .*)?",
    r"(?:please )?(?:let me know|feel free to (?:ask|reach out|let me know)|don't hesitate to (?:ask|reach out)).*",
    r"(?:is there )?anything else(?: i can (?:help|do)(?: .*)?)?",
    r"(?:have a (?:great|good|nice) day|take care|best regards|kind regards|cheers)(?: .*)?",
    r"i(?:'m| am) (?:an ai|a language model|an assistant).*",
)
"""Greetings, sign-offs and offers of more help."""
