"""Every weight, threshold, cap and cue switch of the offline heuristic verifier, in one typed, frozen config.

The modules of `transforms.verify.heuristic` read `DEFAULT_CONFIG` unless a verifier is given another::

    config = HeuristicConfig(support_threshold=0.55)
    HeuristicVerifier(config=config)                               # or config={"support_threshold": 0.55}
    DEFAULT_CONFIG.with_cue_mode("dropped_hedge", "doubt")         # a copy with one cue switched
    HeuristicConfig.model_validate_json(config.model_dump_json())  # round trip

The settings that were chosen on labelled data (the thresholds, the probability's weights, the cue modes) are
re-derived by `scripts/fit_heuristic.py` with cross-validation grouped by source document; its report says
which of them earn their value out of sample. Index-building constants (the word window of a long evidence
"sentence", the prefix length of weak support) stay in `evidence_index`: the index is cached by passage and
shared by every verifier in a process, so it cannot depend on one verifier's config.

A contradiction cue has a mode: `assert` (it makes the sentence contradicted, and caps its probability of being
grounded), `doubt` (it never makes the sentence contradicted on its own; it pulls the probability towards 0.5 so
the sentence's confidence drops and a cascade escalates it) or `off` (ignored).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from transforms.text.tokens import Token, word_weight

__all__ = ["CUES", "DEFAULT_CONFIG", "CueMode", "CueModes", "HeuristicConfig"]

CueMode = Literal["assert", "doubt", "off"]

CUES = (
    "quantity",
    "dropped_qualifier",
    "negation",
    "antonym",
    "converse",
    "anchored_opposite",
    "anchored_negation",
    "denied_clause",
    "dropped_hedge",
    "swapped_roles",
    "substitution",
    "anchored_name_swap",
    "misquotation",
    "replaced_words",
)
"""The contradiction cues, by the name each `Contradiction.cue` carries."""


class CueModes(BaseModel):
    """What each contradiction cue does when it fires: assert contradicted, only lower confidence, or nothing.

    `replaced_words` and `denied_clause` doubt: `scripts/fit_heuristic.py --group-by source --cues-only` (floor
    0.6) finds 0.36 and 0.38 of the sentences they fire on compatible with `contradicted`, though 0.71 and 0.62
    of them are not fully grounded. Every asserting cue that fired is at 0.62 or more on the sources whose labels
    have a contradicted class.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    quantity: CueMode = "assert"
    """A different value of the same quantity in an aligned evidence sentence ("3.1 mmol/L" / "4.2 mmol/L")."""
    dropped_qualifier: CueMode = "assert"
    """A number the evidence gives only bounded or as a share, stated bare ("600" / "more than 600")."""
    negation: CueMode = "assert"
    """A negation on one side only of the best-aligned evidence sentence."""
    antonym: CueMode = "assert"
    """A listed antonym or negated-prefix form in the best-aligned evidence sentence."""
    converse: CueMode = "doubt"
    """A converse word against its partner in the best-aligned evidence sentence ("before" / "after") where the
    words around them do not tell whether its two sides kept their order (a contradiction, asserted as `antonym`)
    or swapped it (the same relation from the other end, no cue): it doubts."""
    anchored_opposite: CueMode = "assert"
    """An antonym or same-class word in the claim's slot of any well-aligned evidence sentence."""
    anchored_negation: CueMode = "assert"
    """A claim word negated on one side only, in the claim's slot of a well-aligned evidence sentence."""
    denied_clause: CueMode = "doubt"
    """A claim word found only in evidence clauses that deny a word the claim affirms ("XML is not supported"
    against "supports JSON and XML"); doubts, since a pronoun's clause can look the same."""
    dropped_hedge: CueMode = "assert"
    """A word the evidence states only under a hedge ("reportedly toxic"), stated as fact."""
    swapped_roles: CueMode = "assert"
    """Two names the other way round around the same relation ("Leeds beat York" / "York beat Leeds")."""
    substitution: CueMode = "assert"
    """A name of the claim in place of other words of the aligned evidence sentence (an entity swap)."""
    anchored_name_swap: CueMode = "assert"
    """A name found nowhere in the evidence in a slot where an aligned sentence has another name."""
    misquotation: CueMode = "assert"
    """A quotation the evidence gives with another content word inside it."""
    replaced_words: CueMode = "doubt"
    """A not-grounded claim that mostly puts its own words in place of its aligned evidence sentence's."""

    def of(self, cue: str) -> CueMode:
        """The mode of a cue by name (see `CUES`)."""
        return getattr(self, cue)


class HeuristicConfig(BaseModel):
    """The heuristic verifier's tunable numbers and switches; the defaults are the shipped verifier."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    # Verdict rules (verifier.py)
    support_threshold: float = Field(0.5, ge=0.0, le=1.0)
    """Probability of being fully grounded at or above which a sentence is called fully grounded."""
    ungrounded_coverage: float = Field(0.4, ge=0.0, le=1.0)
    """Below this share of its weighted content supported, a not-grounded sentence is ungrounded, not partial."""
    max_sentence_chars: int = Field(5000, gt=0)
    """Characters of one sentence the verifier reads; a longer one is never called grounded."""
    unread_cap: float = Field(0.45, ge=0.0, le=1.0)
    """Probability cap of a sentence longer than `max_sentence_chars` (its unread rest is unverified)."""
    max_confidence: float = Field(0.97, ge=0.5, le=1.0)
    """Highest confidence of any verdict: it rests on word alignment, which a changed slot or a negation out of
    reach can fool, so it is never certain. The probability is squeezed linearly into [1 - this, this], so its
    order is kept (a calibration file maps it to what it is worth on labelled data)."""

    # Word weights (transforms.text.tokens.word_weight and the alignment)
    common_word_weight: float = Field(0.35, ge=0.0)
    """Weight of a listed common word ("significantly", "additionally")."""
    name_weight: float = Field(1.5, ge=0.0)
    """Weight of a capitalised word not at the start of the sentence (a name)."""
    long_word_weight: float = Field(1.2, ge=0.0)
    """Weight of a word of `long_word_chars` letters or more."""
    long_word_chars: int = Field(8, gt=0)
    """Length from which a word counts as a long (more specific) word."""
    quantity_weight: float = Field(1.5, ge=0.0)
    """Weight of a number, date, time or duration of the claim."""

    # Support strengths of inexact matches
    synonym_strength: float = Field(0.9, ge=0.0, le=1.0)
    """Support by a listed synonym or an abbreviation, against 1 for the word itself."""
    prefix_strength: float = Field(0.7, ge=0.0, le=1.0)
    """Support by a long word sharing a five-letter prefix ("acquisition" / "acquired")."""
    spelling_strength: float = Field(0.8, ge=0.0, le=1.0)
    """Support by a word one edit away ("organisation" / "organization")."""

    # Greedy cover of evidence sentences
    max_sources: int = Field(3, ge=1)
    """Evidence sentences the greedy cover may pick as sources of one claim."""
    cover_candidates: int = Field(12, ge=1)
    """Best-supporting evidence sentences the cover (and a model stage) considers."""
    min_source_gain: float = Field(0.34, ge=0.0)
    """Least claim weight a further source must add to be picked."""
    min_source_share: float = Field(0.08, ge=0.0, le=1.0)
    """Least share of the claim's weight a further source must add to be picked."""

    # Probability of being fully grounded (alignment._probability): a logistic of the features
    w_coverage: float = 1.0
    """Weight of the supported share of the claim's weight."""
    w_local: float = 1.0
    """Weight of the share supported by the best evidence sentence and its neighbours."""
    w_bigram: float = 0.7
    """Weight of the share of adjacent word pairs found adjacent in the evidence."""
    w_cbigram: float = 1.0
    """Weight of the share of adjacent content-word pairs found near each other in the evidence."""
    w_novel: float = 2.5
    """Penalty per share of the claim's weight found nowhere in the evidence."""
    w_bad_quantities: float = 0.6
    """Penalty per quantity of the claim no evidence sentence states."""
    w_bad_names: float = 0.4
    """Penalty per unit of weight of unsupported names."""
    w_bad_scope: float = 0.4
    """Penalty per superlative or exclusive word ("only", "largest") the evidence never uses."""
    slope: float = Field(4.0, gt=0.0)
    """Slope of the logistic that turns the weighted features into a probability."""
    midpoint: float = 1.26
    """Weighted-feature value at which the logistic gives 0.5."""
    contradiction_damping: float = Field(0.9, ge=0.0, le=1.0)
    """Share of the probability an asserting cue of strength 1 removes (p * (1 - damping * strength))."""
    local_neighbours: int = Field(3, ge=1)
    """Best evidence sentences whose passage neighbourhoods the local-coverage feature tries."""
    content_bigram_reach: int = Field(3, ge=1)
    """Word distance within which two content words count as adjacent in the evidence."""

    # Caps applied after the probability
    contradicted_cap: float = Field(0.4, ge=0.0, le=1.0)
    """Probability of a sentence an asserting cue fired on, however well covered."""
    title_cap: float = Field(0.45, ge=0.0, le=1.0)
    """Probability of a sentence whose quoted title is not in the evidence word for word."""
    title_words: tuple[int, int] = (2, 10)
    """Words a quoted title has (capitalised): a longer quotation is speech, often paraphrased."""
    clause_cap: float = Field(0.45, ge=0.0, le=1.0)
    """Probability of a sentence with a whole unsupported clause."""
    clause_weight: float = Field(3.0, ge=0.0)
    """Word weight from which an unsupported span is a clause of its own."""
    doubt_penalizes: bool = True
    """Whether a doubting cue still lowers the probability and caps it as an asserting one does (it then keeps
    the sentence from being called grounded, without calling it contradicted)."""
    doubt_shrink: float = Field(0.5, ge=0.0, le=1.0)
    """Share of its distance from 0.5 a sentence's probability keeps when a doubting cue fires on it."""

    # Contradiction cues: alignment gates and strengths (contradiction.py, slot_cues.py)
    cues: CueModes = CueModes()
    """What each contradiction cue does when it fires."""
    quantity_alignment: float = Field(0.5, ge=0.0, le=1.0)
    """Alignment at which an evidence sentence's different value conflicts without a shared neighbour word."""
    quantity_near_alignment: float = Field(0.25, ge=0.0, le=1.0)
    """Alignment at which a bare number with a shared neighbour word conflicts."""
    quantity_strength: float = Field(0.5, ge=0.0, le=1.0)
    """Strength of a quantity conflict before its alignment is added."""
    qualifier_strength: float = Field(0.6, ge=0.0, le=1.0)
    """Strength of a dropped bound or share."""
    negation_alignment: float = Field(0.6, ge=0.0, le=1.0)
    """Alignment of the best evidence sentence at which a negation on one side conflicts."""
    negation_strength: float = Field(0.8, ge=0.0, le=1.0)
    """Strength of a negation conflict per unit of alignment."""
    antonym_alignment: float = Field(0.5, ge=0.0, le=1.0)
    """Alignment of the best evidence sentence at which an antonym conflicts."""
    antonym_strength: float = Field(0.7, ge=0.0, le=1.0)
    """Strength of an antonym (in the best-aligned sentence or in the claim's slot) per unit of alignment."""
    anchor_alignment: float = Field(0.25, ge=0.0, le=1.0)
    """Alignment below which an evidence sentence is about something else (slot cues)."""
    slot_negation_strength: float = Field(0.7, ge=0.0, le=1.0)
    """Strength of a one-sided negation in the claim's slot per unit of alignment."""
    slot_min_alignment: float = Field(0.5, ge=0.0, le=1.0)
    """Alignment a slot cue's strength is computed with at least (a slot match stands for some alignment)."""
    anchor_window: int = Field(3, ge=1)
    """Words either side of two words that must share a content word for them to be in the same slot."""
    max_anchored: int = Field(3, ge=1)
    """Best-aligned evidence sentences the slot cues search."""
    negation_reach: int = Field(5, ge=1)
    """Words either side of a word within which any negation makes its polarity uncertain."""
    role_alignment: float = Field(0.5, ge=0.0, le=1.0)
    """Alignment of the best evidence sentence at which swapped roles are looked for."""
    role_span: int = Field(5, ge=1)
    """Most words from one name to the other in a relation."""
    role_strength: float = Field(0.7, ge=0.0, le=1.0)
    """Strength of swapped roles per unit of alignment."""
    substitution_gate: float = Field(0.4, ge=0.0, le=1.0)
    """Alignment of the best evidence sentence at which an entity swap is looked for."""
    substitution_alignment: float = Field(0.6, ge=0.0, le=1.0)
    """Alignment, without the swapped words, an entity swap needs."""
    substitution_min_weight: float = Field(0.9, ge=0.0)
    """Least weight of the new names in an entity swap."""
    substitution_strength: float = Field(0.75, ge=0.0, le=1.0)
    """Strength of an entity swap per unit of alignment."""
    name_reach: int = Field(6, ge=1)
    """Evidence words after the anchor searched for the other name (name swap)."""
    name_swap_strength: float = Field(0.6, ge=0.0, le=1.0)
    """Strength of a name in another name's slot."""
    hedge_alignment: float = Field(0.4, ge=0.0, le=1.0)
    """Alignment at which an evidence sentence's hedge counts against a plain claim."""
    hedge_reach: int = Field(3, ge=1)
    """Words before a word within which a hedge makes it uncertain."""
    hedge_strength: float = Field(0.6, ge=0.0, le=1.0)
    """Strength of a dropped hedge."""
    quote_words: int = Field(4, ge=1)
    """Words from which a quotation is a passage reproduced (shorter: a name or phrase)."""
    quote_matched: float = Field(0.6, ge=0.0, le=1.0)
    """Share of a quotation's words an evidence sentence must give in order to be its source."""
    misquote_strength: float = Field(0.8, ge=0.0, le=1.0)
    """Strength of a misquotation."""
    slot_alignment: float = Field(0.5, ge=0.0, le=1.0)
    """Local coverage at which a not-grounded claim is about the same thing as its best evidence sentence."""
    replaced_min_weight: float = Field(0.9, ge=0.0)
    """Least claim weight that must replace evidence words for a replaced-words conflict."""
    replaced_over_added: float = Field(0.5, ge=0.0)
    """Replaced weight must be at least this times the weight the claim only adds."""
    replaced_strength: float = Field(0.3, ge=0.0, le=1.0)
    """Strength of a replaced-words conflict."""

    def with_cue_mode(self, cue: str, mode: CueMode) -> HeuristicConfig:
        """A copy with one cue's mode changed."""
        if cue not in CUES:
            raise ValueError(f"unknown cue {cue!r}; choose one of: {', '.join(CUES)}")
        return self.model_copy(update={"cues": self.cues.model_copy(update={cue: mode})})

    def word_weight(self, token) -> float:
        """How much a word counts towards a claim under these weights (see `transforms.text.tokens.word_weight`)."""
        return self.word_weigher()(token)

    def word_weigher(self) -> Callable[[Token], float]:
        """`word_weight` as a plain function of a token: the text module's own one under the default weights
        (it runs for every word of every sentence, and a bound call with four keywords costs a few percent)."""
        weights = (self.common_word_weight, self.name_weight, self.long_word_weight, self.long_word_chars)
        if weights == _DEFAULT_WORD_WEIGHTS:
            return word_weight
        return partial(word_weight, common=weights[0], name=weights[1], long=weights[2], long_chars=weights[3])

    def asserts(self, cue: str) -> bool:
        """Whether the cue, when it fires, makes the sentence contradicted."""
        return self.cues.of(cue) == "assert"


_DEFAULT_WORD_WEIGHTS = (0.35, 1.5, 1.2, 8)  # the defaults of `transforms.text.tokens.word_weight`

DEFAULT_CONFIG = HeuristicConfig()
"""The shipped heuristic verifier's settings."""
