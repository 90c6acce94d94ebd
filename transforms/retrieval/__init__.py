"""Retrieval quality, measured directly: is the evidence about the question, and does the answer use it?

`transforms.retrieval.relevance` scores a passage's relevance to the query, the answer's relevance to the
query and the empty-retrieval flag; `transforms.retrieval.evidence_use` measures which retrieved passages
the answer's supported sentences drew on; `transforms.retrieval.report` puts both together for one audited
response (the audit's ScoreRetrieval step). Plain functions over plain values; import the submodule you need.
"""

__all__: list[str] = []
