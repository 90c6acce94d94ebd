"""The LLM judge's flags, shared by the commands that can run it (`audit`, `monitor`, `replay`).

    groundwatch audit --input traffic.jsonl --verifier cascade \\
        --judge-base-url http://127.0.0.1:8000/v1 --judge-model qwen2.5-7b-instruct [--cascade-band 0.5,0.8]

The API key is never a flag: it is read on the workers from GROUNDWATCH_JUDGE_API_KEY (or OPENAI_API_KEY).
`add_judge_arguments` adds the dashed CLI flags, `add_judge_pipeline_options` the same flags with
underscores to a `PipelineOptions` class, `judge_argv` turns parsed CLI flags into pipeline argv and
`judge_verifier_config` gives the options as the verifier configuration `VerifySentences` passes on.
"""

from __future__ import annotations

import argparse
from typing import Any

__all__ = [
    "add_judge_arguments",
    "add_judge_pipeline_options",
    "apply_judge_reports",
    "judge_argv",
    "judge_tasks",
    "judge_verifier_config",
]

# (flag, verifier option, type, default, help); None defaults leave the JudgeConfig default in force.
_FLAGS: list[tuple[str, str, Any, Any, str]] = [
    ("judge-base-url", "base_url", str, None, "OpenAI-compatible API root, e.g. http://127.0.0.1:8000/v1."),
    ("judge-model", "model", str, None, "Model name as the endpoint knows it."),
    ("judge-timeout", "timeout_s", float, None, "Seconds per judge call before it is retried. Default 60."),
    ("judge-max-concurrency", "max_concurrency", int, None, "Judge calls in flight per worker. Default 4."),
    (
        "judge-sample-rate",
        "sample_rate",
        float,
        None,
        "Fraction in [0, 1] of audited responses the judge sees. Default 1.",
    ),
    ("judge-answers-per-call", "answers_per_call", int, None, "Answers batched into one call (1 = none). Default 8."),
    ("judge-retries", "num_retries", int, None, "Beam retries of a call after 429/5xx/timeout. Default 3."),
    (
        "judge-response-format",
        "response_format",
        str,
        None,
        "json_schema (default), json_object or text; json_schema falls back by itself on a 400.",
    ),
    ("judge-tasks", "tasks", str, None, "What the judge does: sentences,citations,claims (any of). Default sentences."),
    (
        "cascade-band",
        "band",
        str,
        None,
        "LOW,HIGH heuristic confidences sent to the judge by the cascade. Default 0.5,0.8.",
    ),
]


def add_judge_arguments(parser: argparse.ArgumentParser) -> None:
    """The dashed `--judge-*` CLI flags."""
    group = parser.add_argument_group("LLM judge (with --verifier openai or cascade)")
    for flag, _, kind, default, help_text in _FLAGS:
        group.add_argument(f"--{flag}", type=kind, default=default, help=help_text)
    group.add_argument(
        "--judge-redact", action="store_true", help="Mask e-mails, phone numbers and ID-like numbers in judge_calls."
    )


def add_judge_pipeline_options(parser) -> None:
    """The same flags, underscored, for a `PipelineOptions._add_argparse_args`."""
    for flag, _, kind, default, help_text in _FLAGS:
        parser.add_argument(f"--{flag.replace('-', '_')}", type=kind, default=default, help=help_text)
    parser.add_argument("--judge_redact", action="store_true", default=False, help="Redact PII in judge_calls.")


def judge_argv(args: argparse.Namespace) -> list[str]:
    """Pipeline argv for the judge flags that were given."""
    argv = []
    for flag, _, _, _, _ in _FLAGS:
        value = getattr(args, flag.replace("-", "_"), None)
        if value is not None:
            argv.append(f"--{flag.replace('-', '_')}={value}")
    if getattr(args, "judge_redact", False):
        argv.append("--judge_redact")
    return argv


def judge_verifier_config(opts: Any) -> dict[str, Any]:
    """The judge options as `make_verifier` / `VerifySentences` configuration (unset ones left out)."""
    config = {}
    for flag, option, _, _, _ in _FLAGS:
        value = getattr(opts, flag.replace("-", "_"), None)
        if value is not None:
            config[option] = value
    if getattr(opts, "judge_redact", False):
        config["redact"] = True
    return config


def judge_tasks(value: str | None) -> list[str]:
    """The `--judge-tasks` list, checked; sentences by default."""
    tasks = [t.strip() for t in (value or "sentences").split(",") if t.strip()]
    unknown = [t for t in tasks if t not in ("sentences", "citations", "claims")]
    if unknown or not tasks:
        raise ValueError(f"--judge-tasks takes sentences, citations and/or claims, got {value!r}")
    return tasks


def apply_judge_reports(opts: Any, audited):
    """`audited` with the judge's citation audit and claim checks applied, if `--judge-tasks` asks for them."""
    tasks = [t for t in judge_tasks(getattr(opts, "judge_tasks", None)) if t != "sentences"]
    if not tasks:
        return audited
    from transforms.verify.judge.reports import JudgeReports
    from transforms.verify.judge.verifier import judge_config_from

    options = judge_verifier_config(opts)
    options.pop("band", None)
    options.pop("tasks", None)
    config = judge_config_from(options.pop("base_url", None), options.pop("model", None), **options)
    return audited | "JudgeReports" >> JudgeReports(tasks, config)
