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

_SOURCES = r"(?:the |these |those |your |my )?(?:provided |retrieved |available |given |supplied |attached |cited )?"
_SOURCE_NOUNS = (
    r"(?:documents?|sources?|evidence|context|passages?|records?|notes?|files?|materials?|information|texts?)"
)
_NOT = r"(?:do not|don't|does not|doesn't|did not|didn't|cannot|can't)"
_SAY = r"(?:say|mention|state|specify|contain|include|cover|provide|address|describe|indicate|discuss|show)"

ABSTENTIONS = (
    r"i (?:do not|don't|dont) know(?: .*)?",
    r"i(?:'m| am) (?:not sure|unsure|unable to (?:find|answer|determine|tell|say)).*",
    r"i (?:cannot|can't|could not|couldn't|was unable to|am unable to)"
    r" (?:find|answer|determine|tell|say|locate|confirm).*",
    rf"{_SOURCES}{_SOURCE_NOUNS} {_NOT} {_SAY}.*",
    r"(?:there is|there's|there was) no (?:information|mention|data|record|detail|answer)s? .*",
    r"no (?:information|mention|data|details?) (?:is|was|are|were)? ?(?:available|provided|given|found).*",
    r"(?:this|that|the answer) is not (?:mentioned|stated|covered|specified|given|provided) in "
    rf"{_SOURCES}{_SOURCE_NOUNS}.*",
    r"(?:sorry, )?i (?:do not|don't) have (?:enough )?(?:information|data|details).*",
    r"not enough information(?: .*)?",
    r"unknown",
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
