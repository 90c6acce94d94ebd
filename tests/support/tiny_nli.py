"""A tiny real cross-encoder for tests and the benchmark: an ONNX graph built with `onnx`, a WordPiece tokenizer
built with `tokenizers`, and a label map, written as a model folder (no torch, no download)::

    folder = write_tiny_model(tmp_path / "nli", words=["potassium", "was", ...])

The graph reads the token ids as bags of words per segment (token_type_ids 0 = evidence, 1 = claim) and
computes two features: the share of the claim's known words that the evidence also has, and the number of
"not" tokens. Logits: entailment = 8 * share - 10 * nots - 4, neutral = 0, contradiction = 10 * nots - 3. So a
claim whose words all appear in the evidence is entailed (p ~ 0.98), one with "not" is contradicted, one sharing
half its words is a near tie (p ~ 0.49). With `labels=("consistent", "inconsistent")` it is a binary head (the
first two columns). The token "boom" has an id past the embedding table: the model fails
on any pair holding it (Gather out of bounds), the way a real model fails on one input.
"""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["POISON", "write_tiny_model"]

POISON = "boom"
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]


def _graph(vocab_size: int, content: list[float], nots: list[float], outputs: int, *, opset: int = 18):
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    def const(name, array):
        return numpy_helper.from_array(np.asarray(array, dtype=np.float32), name)

    weights = np.array([[8.0, 0.0, 0.0], [-10.0, 0.0, 10.0], [-4.0, 0.0, -3.0]], dtype=np.float32)[:, :outputs]
    inits = [
        const("eye", np.eye(vocab_size)),
        const("content", content),
        const("nots", nots),
        const("one", [1.0]),
        const("W", weights),
        numpy_helper.from_array(np.array([1], dtype=np.int64), "axis1"),
        numpy_helper.from_array(np.array([2], dtype=np.int64), "axis2"),
    ]
    n = helper.make_node
    nodes = [
        n("Gather", ["eye", "input_ids"], ["onehot"], axis=0),  # [B, L, V]
        n("Cast", ["attention_mask"], ["maskf"], to=TensorProto.FLOAT),
        n("Cast", ["token_type_ids"], ["typef"], to=TensorProto.FLOAT),
        n("Mul", ["maskf", "typef"], ["mask_b"]),
        n("Sub", ["maskf", "mask_b"], ["mask_a"]),
        n("Unsqueeze", ["mask_a", "axis2"], ["mask_a3"]),
        n("Unsqueeze", ["mask_b", "axis2"], ["mask_b3"]),
        n("Mul", ["onehot", "mask_a3"], ["oh_a"]),
        n("Mul", ["onehot", "mask_b3"], ["oh_b"]),
        n("ReduceMax", ["oh_a", "axis1"], ["has_a"], keepdims=0),  # [B, V]: word present in the evidence
        n("ReduceMax", ["oh_b", "axis1"], ["has_b"], keepdims=0),
        n("Min", ["has_a", "has_b"], ["shared"]),
        n("Mul", ["shared", "content"], ["shared_c"]),
        n("Mul", ["has_b", "content"], ["claim_c"]),
        n("ReduceSum", ["shared_c", "axis1"], ["n_shared"], keepdims=1),  # [B, 1]
        n("ReduceSum", ["claim_c", "axis1"], ["n_claim"], keepdims=1),
        n("Max", ["n_claim", "one"], ["n_claim1"]),
        n("Div", ["n_shared", "n_claim1"], ["share"]),
        n("Add", ["has_a", "has_b"], ["has_any"]),
        n("Mul", ["has_any", "nots"], ["not_c"]),
        n("ReduceSum", ["not_c", "axis1"], ["n_not"], keepdims=1),
        n("Div", ["n_claim1", "n_claim1"], ["bias"]),  # a column of ones, [B, 1]
        n("Concat", ["share", "n_not", "bias"], ["features"], axis=1),  # [B, 3]
        n("MatMul", ["features", "W"], ["logits"]),
    ]
    ids = [helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "tokens"]) for name in
           ("input_ids", "attention_mask", "token_type_ids")]  # fmt: skip
    out = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", outputs])
    graph = helper.make_graph(nodes, "tiny_nli", ids, [out], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def write_tiny_model(folder, words, *, labels=("entailment", "neutral", "contradiction")) -> str:
    """Write model.onnx, tokenizer.json and labels.json for `words` (lower case) into `folder`; returns it."""
    import onnx
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    known = sorted({w.lower() for w in words} | {"not"} - {POISON})
    vocab = {t: i for i, t in enumerate(SPECIALS + known)}
    table = len(vocab)  # the embedding table's rows; POISON's id lies past them
    vocab[POISON] = table
    content = [0.0] * len(SPECIALS) + [0.0 if w == "not" else 1.0 for w in known]
    nots = [0.0] * len(SPECIALS) + [1.0 if w == "not" else 0.0 for w in known]
    tokenizer = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=100))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    tokenizer.save(str(folder / "tokenizer.json"))
    onnx.save(_graph(table, content, nots, len(labels)), str(folder / "model.onnx"))
    (folder / "labels.json").write_text(json.dumps({"labels": list(labels), "max_length": 128}))
    return str(folder)
