"""Words that frame a question without saying what it is about, for the retrieval scores.

"Can you explain what the waiting period is?" is about a waiting period: "can", "explain", "what" frame the
question. A passage is not more relevant for repeating the frame, so these words weigh nothing in a query
(function words already weigh nothing through `transforms.text.tokens.STOPWORDS`). Add a word here, not in
the code that reads it. Only words that carry no topic in any domain belong here: "policy", "plan" and
"limit" are topics in some domains, so they stay.
"""

from __future__ import annotations

__all__ = ["QUESTION_FRAME_WORDS"]

QUESTION_FRAME_WORDS = frozenset(
    """
    what which who whom whose when where why how whether
    can could would should shall will may might must do does did is are was were am be been
    please kindly explain describe tell know let give list show outline summarize summarise clarify confirm
    help understand find look mean means meaning happen happens happened
    anyone someone something anything thing things way ways exactly actually really
    i me my we our us you your
    """.split()
)
