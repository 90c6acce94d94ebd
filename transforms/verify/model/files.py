"""The files of a model folder given with `--model-path`, and its label map.

A model folder holds three files (names fixed, so a folder is all a user passes)::

    model.onnx       a cross-encoder: inputs input_ids, attention_mask (and token_type_ids if it uses them),
                     int64 or int32, shape [batch, tokens]; first output (or `output`) [batch, labels]
    tokenizer.json   its tokenizer in the HuggingFace `tokenizers` format (what `optimum-cli export onnx` and
                     `tokenizer.save_pretrained()` write)
    labels.json      which output means what, e.g.
                     {"labels": ["entailment", "neutral", "contradiction"]}            (3-way NLI, softmax)
                     {"labels": ["consistent", "inconsistent"]}                        (binary head, softmax)
                     {"labels": ["consistent"], "activation": "sigmoid"}               (one logit, e.g. HHEM)

`labels` names each output column in order. Names read as: entailment, entailed, consistent, supported ->
"entailment"; contradiction, contradicted -> "contradiction"; neutral, not_entailment, inconsistent,
unsupported -> "neutral" (a binary head cannot tell unsupported from contradicted, so it never says
contradicted). Optional keys: `activation` ("softmax", default; "sigmoid" for a single logit; "none" when the
outputs are already probabilities), `evidence_first` (true by default: the pair is (evidence, claim), NLI's
(premise, hypothesis); false for a model trained on (claim, evidence)), `output` (the output's name, if not the
first), `max_length` (tokens per pair when `--model-max-length` is not given; default 512).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

__all__ = [
    "LABELS_FILE",
    "MODEL_FILE",
    "ROLES",
    "TOKENIZER_FILE",
    "LabelMap",
    "ModelFiles",
    "ModelLoadError",
    "read_label_map",
]

MODEL_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"
LABELS_FILE = "labels.json"
DEFAULT_MAX_LENGTH = 512
ROLES = ("entailment", "neutral", "contradiction")

_ALIASES = {
    "entailment": "entailment",
    "entailed": "entailment",
    "entails": "entailment",
    "consistent": "entailment",
    "supported": "entailment",
    "contradiction": "contradiction",
    "contradicted": "contradiction",
    "contradicts": "contradiction",
    "neutral": "neutral",
    "not_entailment": "neutral",
    "inconsistent": "neutral",
    "unsupported": "neutral",
}
_ACTIVATIONS = ("softmax", "sigmoid", "none")


class ModelLoadError(ValueError):
    """The model folder cannot be used; the message names `--model-path` (the CLI exits 2 on it)."""

    def __init__(self, path: str, reason: str):
        reason = " ".join(reason.split())  # one line: the CLI prints it as its reason for exit 2
        super().__init__(f"--model-path {path}: {reason}")
        self.path, self.reason = path, reason


@dataclass(frozen=True)
class LabelMap:
    """What each output column of the model means, and how to read the pair and the outputs."""

    roles: tuple[str, ...]
    """One of `ROLES` per output column, in order."""
    activation: str = "softmax"
    evidence_first: bool = True
    output: str | None = None
    max_length: int = DEFAULT_MAX_LENGTH

    @property
    def can_contradict(self) -> bool:
        """Whether the model has a contradiction output (a binary consistent/inconsistent head has not)."""
        return "contradiction" in self.roles


@dataclass(frozen=True)
class ModelFiles:
    """The three files of a model folder, checked to exist."""

    folder: str
    model: str
    tokenizer: str
    labels: str

    @classmethod
    def of(cls, folder: str | None) -> ModelFiles:
        if not folder:
            raise ModelLoadError("", "no model folder given (the folder holding model.onnx)")
        if not os.path.isdir(folder):
            raise ModelLoadError(folder, "not a folder")
        paths = [os.path.join(folder, name) for name in (MODEL_FILE, TOKENIZER_FILE, LABELS_FILE)]
        missing = [os.path.basename(p) for p in paths if not os.path.isfile(p)]
        if missing:
            raise ModelLoadError(
                folder,
                f"missing {', '.join(missing)} (a model folder holds model.onnx, tokenizer.json and labels.json)",
            )
        return cls(folder, *paths)

    def stamp(self) -> tuple[int, ...]:
        """Modification times and sizes: a folder whose files change is loaded again."""
        stats = [os.stat(p) for p in (self.model, self.tokenizer, self.labels)]
        return tuple(v for st in stats for v in (st.st_mtime_ns, st.st_size))


def read_label_map(path: str, folder: str) -> LabelMap:
    """Read and check `labels.json`; ModelLoadError names what is wrong."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        raise ModelLoadError(folder, f"cannot read {LABELS_FILE}: {e}") from None
    if not isinstance(data, dict) or not isinstance(data.get("labels"), list) or not data["labels"]:
        raise ModelLoadError(folder, f'{LABELS_FILE} needs "labels": a list naming each output, in order')
    roles = []
    for name in data["labels"]:
        role = _ALIASES.get(str(name).strip().lower().replace("-", "_").replace(" ", "_"))
        if role is None:
            raise ModelLoadError(folder, f"{LABELS_FILE}: unknown label {name!r}; use one of {', '.join(_ALIASES)}")
        roles.append(role)
    if "entailment" not in roles:
        raise ModelLoadError(folder, f"{LABELS_FILE}: no output means entailment (or consistent)")
    activation = str(data.get("activation", "softmax")).lower()
    if activation not in _ACTIVATIONS:
        raise ModelLoadError(folder, f"{LABELS_FILE}: activation must be one of {', '.join(_ACTIVATIONS)}")
    if activation == "sigmoid" and len(roles) != 1:
        raise ModelLoadError(folder, f"{LABELS_FILE}: sigmoid reads one output (P(consistent)), not {len(roles)}")
    if len(roles) == 1 and activation != "sigmoid":
        raise ModelLoadError(folder, f'{LABELS_FILE}: a single output needs "activation": "sigmoid"')
    max_length = data.get("max_length", DEFAULT_MAX_LENGTH)
    if not isinstance(max_length, int) or max_length < 8:
        raise ModelLoadError(folder, f"{LABELS_FILE}: max_length must be an integer >= 8, got {max_length!r}")
    output = data.get("output")
    return LabelMap(tuple(roles), activation, bool(data.get("evidence_first", True)), output, max_length)
