"""The model stage: an ONNX cross-encoder between the heuristic and the judge (`--verifier model`, the cascade).

Pieces: `files` (the model folder and its label map), `scorer` (ONNX Runtime and the tokenizer, loaded once per
process), `stage` (candidates and the verdict mapping), `cascade` (the three-stage routing), `verifier`
(`ModelVerifier`, outside Beam), `handler` (`PairModelHandler` for Beam's RunInference) and `pipeline`
(`RunModelStage`: the stage in the audit and monitor graphs, through RunInference). `onnxruntime` and
`tokenizers` are imported only when a model is loaded. See docs/model-stage.md.
"""

__all__ = ["cascade", "files", "handler", "pipeline", "scorer", "stage", "verifier"]
