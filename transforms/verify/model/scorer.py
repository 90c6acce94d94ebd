"""A cross-encoder run with ONNX Runtime on CPU: (evidence sentence, claim) pairs -> entailment probabilities.

    scorer = load_scorer("/models/nli", max_length=256)   # once per process: cached
    [p] = scorer.score([("The sky is blue.", "The sky is blue.")])
    p.entailment, p.neutral, p.contradiction

`onnxruntime` and `tokenizers` are imported here, when a model is loaded, so nothing else pays for them
(`pip install groundwatch[model]`). Nothing is read from a hub: the folder's files are all there is. Pairs
longer than the model's length are cut by the tokenizer (longest segment first). Loading runs the model once on
a small pair, so a broken file or a label map that does not fit the outputs fails at load, naming `--model-path`.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass

from transforms.verify.model.files import LabelMap, ModelFiles, ModelLoadError, read_label_map

__all__ = ["ModelRunError", "PairScorer", "PairScores", "load_scorer"]

_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


class ModelRunError(RuntimeError):
    """The model failed on an input (not retryable: the same input fails again)."""

    retryable = False


@dataclass(frozen=True, slots=True)
class PairScores:
    """The model's probabilities for one (evidence, claim) pair, in the three roles."""

    entailment: float
    neutral: float
    contradiction: float


def _softmax(row: Sequence[float]) -> list[float]:
    top = max(row)
    exps = [math.exp(v - top) for v in row]
    total = sum(exps)
    return [e / total for e in exps]


class PairScorer:
    """One loaded model: its tokenizer, its ONNX Runtime session and its label map. Thread-safe to call."""

    def __init__(self, folder: str, *, max_length: int | None = None, threads: int = 1):
        files = ModelFiles.of(folder)
        self.labels: LabelMap = read_label_map(files.labels, folder)
        self.folder, self.max_length = folder, max_length or self.labels.max_length
        try:
            import numpy as np
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as e:
            raise ModelLoadError(folder, f"{e}; the model stage needs `pip install groundwatch[model]`") from None
        self._np = np
        try:
            self._tokenizer = Tokenizer.from_file(files.tokenizer)
        except Exception as e:  # the tokenizers library raises its own exception type
            raise ModelLoadError(folder, f"cannot read tokenizer.json: {e}") from None
        self._tokenizer.enable_truncation(self.max_length, strategy="longest_first")
        pad_id = next((i for t in ("[PAD]", "<pad>") if (i := self._tokenizer.token_to_id(t)) is not None), 0)
        self._tokenizer.enable_padding(pad_id=pad_id)
        options = ort.SessionOptions()
        # One thread per session: Beam runs one worker process per core, and threads beyond that only contend.
        options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
        options.log_severity_level = 4  # failures are raised with their reason; the C++ log would repeat them
        try:
            self._session = ort.InferenceSession(files.model, options, providers=["CPUExecutionProvider"])
        except Exception as e:  # onnxruntime's errors have no common public base class
            raise ModelLoadError(folder, f"cannot load model.onnx: {' '.join(str(e).split())[:300]}") from None
        self._inputs = {i.name: ("int32" if "int32" in i.type else "int64") for i in self._session.get_inputs()}
        unknown = sorted(set(self._inputs) - set(_INPUTS))
        if "input_ids" not in self._inputs or unknown:
            raise ModelLoadError(
                folder,
                f"model.onnx inputs {sorted(self._inputs)}: expected input_ids, "
                "attention_mask and optionally token_type_ids",
            )
        outputs = [o.name for o in self._session.get_outputs()]
        self._output = self.labels.output or outputs[0]
        if self._output not in outputs:
            raise ModelLoadError(folder, f"labels.json names output {self._output!r}; model.onnx has {outputs}")
        try:
            self.score([("A test.", "A test.")])
        except ModelRunError as e:
            raise ModelLoadError(folder, f"model.onnx does not run: {e}") from None

    def __repr__(self) -> str:
        return f"PairScorer({self.folder!r}, labels={self.labels.roles}, max_length={self.max_length})"

    def _feeds(self, pairs: Sequence[tuple[str, str]]) -> dict:
        np = self._np
        ordered = [p if self.labels.evidence_first else (p[1], p[0]) for p in pairs]
        encodings = self._tokenizer.encode_batch(ordered)
        columns = {
            "input_ids": [e.ids for e in encodings],
            "attention_mask": [e.attention_mask for e in encodings],
            "token_type_ids": [e.type_ids for e in encodings],
        }
        return {name: np.asarray(columns[name], dtype=kind) for name, kind in self._inputs.items()}

    def _probabilities(self, row: Sequence[float]) -> PairScores:
        activation = self.labels.activation
        probs: Sequence[float]
        roles: Sequence[str]
        if activation == "sigmoid":
            p = 1.0 / (1.0 + math.exp(-row[0]))
            probs, roles = [p, 1.0 - p], [self.labels.roles[0], "neutral"]
        else:
            probs, roles = (_softmax(row) if activation == "softmax" else list(row)), self.labels.roles
        by_role = dict.fromkeys(("entailment", "neutral", "contradiction"), 0.0)
        for role, p in zip(roles, probs, strict=True):
            by_role[role] += float(p)
        return PairScores(**by_role)

    def score(self, pairs: Sequence[tuple[str, str]]) -> list[PairScores]:
        """Probabilities for each (evidence, claim) pair, in order; ModelRunError if the model fails on them."""
        if not pairs:
            return []
        try:
            feeds = self._feeds(pairs)
            [out] = self._session.run([self._output], feeds)
        except Exception as e:  # tokenizers and onnxruntime raise their own types; the reason is what matters
            raise ModelRunError(f"model failed on {len(pairs)} pairs: {' '.join(str(e).split())[:300]}") from e
        if out.ndim != 2 or out.shape[0] != len(pairs) or out.shape[1] != len(self.labels.roles):
            raise ModelRunError(
                f"model output shape {tuple(out.shape)}; labels.json names {len(self.labels.roles)} outputs"
            )
        return [self._probabilities(row.tolist()) for row in out]


_CACHE: dict[tuple, PairScorer] = {}
_LOCK = threading.Lock()


def load_scorer(folder: str, *, max_length: int | None = None) -> PairScorer:
    """The model in `folder`, loaded once per process (a folder whose files change is loaded again)."""
    import os

    key = (os.path.realpath(folder or ""), max_length, ModelFiles.of(folder).stamp())
    with _LOCK:  # one load per process even when several DoFn threads start at once
        scorer = _CACHE.get(key)
        if scorer is None:
            scorer = _CACHE[key] = PairScorer(folder, max_length=max_length)
        return scorer
