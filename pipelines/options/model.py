"""The model stage's flags, shared by every command that verifies (`audit`, `monitor`, `gate`, `serve`, `calibrate`,
`replay`), in the judge table's style.

    groundwatch audit --input traffic.jsonl --verifier model --model-path ./nli-onnx [--model-top-k 3]
    groundwatch audit --input traffic.jsonl --verifier cascade --model-path ./nli-onnx \\
        --judge-base-url http://127.0.0.1:8000/v1 --judge-model qwen2.5-7b-instruct

The folder holds model.onnx, tokenizer.json and labels.json (docs/model-stage.md). `add_stage_arguments` and
`stage_argv` are what a Beam command uses (`audit`, `monitor`): the judge's flags and these, one group;
`add_stage_arguments` and `stage_verifier_config` are what the commands that verify in process use (`gate`, `serve`,
`calibrate`, `replay`): the same group, given to `make_verifier` as the plain path's configuration.
`add_model_arguments` adds
the dashed CLI flags, `add_model_pipeline_options` the same flags with underscores to a `PipelineOptions`
class, `model_argv` turns parsed CLI flags into pipeline argv, `model_verifier_config` gives them as verifier
configuration, `model_stage_of` the model stage they name (loaded), and `validate_model_options` loads the model
once so a bad folder fails before the run.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from typing import Any

from pipelines.options.flags import Flag, add_flags, add_pipeline_options, flags_argv
from pipelines.options.judge import add_judge_arguments, judge_argv, judge_verifier_config
from transforms.verify.judge.verifier import parse_band
from transforms.verify.model.cascade import ModelStage
from transforms.verify.model.verifier import model_stage_from

__all__ = [
    "MODEL_FLAGS",
    "add_model_arguments",
    "add_model_pipeline_options",
    "add_stage_arguments",
    "model_argv",
    "model_stage_of",
    "model_verifier_config",
    "stage_argv",
    "stage_verifier_config",
    "validate_model_options",
]

# Each default is None: the model stage's own default is in force, and the help states it.
MODEL_FLAGS: list[Flag] = [
    Flag(
        "model-path",
        "Folder with model.onnx, tokenizer.json and labels.json (a local ONNX cross-encoder; never a hub id). "
        "Needed by --verifier model; makes the cascade heuristic, model, then judge.",
    ),
    Flag("model-top-k", "Evidence sentences scored per claim, best aligned first.", int, shown=3),
    Flag(
        "model-max-length",
        "Tokens per (evidence, claim) pair; longer pairs are cut.",
        int,
        shown="labels.json's max_length, else 512",
    ),
    Flag("model-batch-size", "Pairs per ONNX Runtime call.", int, shown=32),
    Flag(
        "model-band",
        "LOW,HIGH model confidences the cascade sends on to the judge when the calibration file has no model stage.",
        shown="0,0.8",
    ),
]
"""The model stage's flags; each flag's `attr` (`model_path`, ...) is also its verifier option."""


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    """The `--model-*` CLI flags (`--model_path` and the like work too)."""
    add_flags(parser, MODEL_FLAGS, title="model stage (with --verifier model or cascade)")


def add_stage_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of the verifier's later stages: the judge's (`--judge-*`) and the model's (`--model-*`)."""
    add_judge_arguments(parser)
    add_model_arguments(parser)


def stage_argv(args: argparse.Namespace) -> list[str]:
    """Pipeline argv for the judge and model flags that were given."""
    return judge_argv(args) + model_argv(args)


def stage_verifier_config(args: Any) -> dict[str, Any]:
    """The judge's and the model's options as one `make_verifier` configuration, for the commands that verify in
    process; `--model-path` made absolute, so a worker process (serve's) finds the same folder."""
    config = {**judge_verifier_config(args), **model_verifier_config(args)}
    if config.get("model_path"):
        config["model_path"] = os.path.abspath(os.path.expanduser(config["model_path"]))
    return config


def add_model_pipeline_options(parser) -> None:
    """The same flags, underscored, for a `PipelineOptions._add_argparse_args`."""
    add_pipeline_options(parser, MODEL_FLAGS)


def model_argv(args: argparse.Namespace) -> list[str]:
    """Pipeline argv for the model flags that were given."""
    return flags_argv(args, MODEL_FLAGS)


def model_verifier_config(opts: Any) -> dict[str, Any]:
    """The model options as `make_verifier` / `VerifySentences` configuration (unset ones left out)."""
    return {flag.attr: value for flag in MODEL_FLAGS if (value := getattr(opts, flag.attr, None)) is not None}


def validate_model_options(opts: Any) -> None:
    """Raise ValueError naming the flag: `--verifier model` without `--model-path`, a folder that does not load
    (missing files, a bad ONNX file, a label map that does not fit), or a bad `--model-*` value."""
    config = model_verifier_config(opts)
    verifier = getattr(opts, "verifier", None)
    if verifier == "model" and not config.get("model_path"):
        raise ValueError("--verifier model needs --model-path: a folder with model.onnx, tokenizer.json, labels.json")
    if verifier not in ("model", "cascade") or not config.get("model_path"):
        return

    if "model_band" in config:
        parse_band(config["model_band"], "--model-band")
    model_stage_of(config)


def model_stage_of(config: Mapping[str, Any]) -> ModelStage | None:
    """The model stage that `model_verifier_config`'s `config` names, its model loaded (a bad folder raises
    ValueError naming the flag); None without `model_path`."""
    keys = ("model_path", "model_top_k", "model_max_length", "model_batch_size")
    return model_stage_from(*(config.get(k) for k in keys))
