"""The LLM judge's flags, shared by the commands that can run it (`audit`, `monitor`, `replay`).

    groundwatch audit --input traffic.jsonl --verifier cascade \\
        --judge-base-url http://127.0.0.1:8000/v1 --judge-model qwen2.5-7b-instruct [--cascade-band 0.5,0.8]

The API key is never a flag: it is read on the workers from GROUNDWATCH_JUDGE_API_KEY (or OPENAI_API_KEY).
One table (`JUDGE_FLAGS`, `pipelines.options.flags`) declares each flag: `add_judge_arguments` adds the CLI
flags, `add_judge_pipeline_options` the same flags with underscores to a `PipelineOptions` class, `judge_argv`
turns parsed CLI flags into pipeline argv and `judge_verifier_config` gives the options as the verifier
configuration `VerifySentences` passes on. The defaults the help states are JudgeConfig's.
"""

from __future__ import annotations

import argparse
from typing import Any

from pipelines.options.flags import Flag, add_flags, add_pipeline_options, flags_argv
from transforms.verify.judge.config import JudgeConfig
from transforms.verify.judge.verifier import DEFAULT_BAND, judge_config_from

__all__ = [
    "JUDGE_FLAGS",
    "add_judge_arguments",
    "add_judge_pipeline_options",
    "apply_judge_reports",
    "judge_argv",
    "judge_report_tasks",
    "judge_tasks",
    "judge_verifier_config",
]

DEFAULT_TASKS = "sentences"
JUDGE_TASKS = ("sentences", "citations", "claims")


def _config_default(field: str) -> Any:
    return JudgeConfig.model_fields[field].default


# (flag, verifier option); the defaults are None, leaving the JudgeConfig default (stated in the help) in force.
_FLAGS: list[tuple[Flag, str]] = [
    (Flag("judge-base-url", "OpenAI-compatible API root, e.g. http://127.0.0.1:8000/v1."), "base_url"),
    (Flag("judge-model", "Model name as the endpoint knows it."), "model"),
    (
        Flag(
            "judge-timeout", "Seconds per judge call before it is retried.", float, shown=_config_default("timeout_s")
        ),
        "timeout_s",
    ),
    (
        Flag(
            "judge-max-concurrency",
            "Judge calls in flight per worker.",
            int,
            shown=_config_default("max_concurrency"),
        ),
        "max_concurrency",
    ),
    (
        Flag(
            "judge-sample-rate",
            "Fraction in [0, 1] of audited responses the judge sees.",
            float,
            shown=_config_default("sample_rate"),
        ),
        "sample_rate",
    ),
    (
        Flag(
            "judge-answers-per-call",
            "Answers batched into one call (1 = none).",
            int,
            shown=_config_default("answers_per_call"),
        ),
        "answers_per_call",
    ),
    (
        Flag(
            "judge-retries",
            "Retries of a judge call after 429/5xx/timeout, with exponential backoff.",
            int,
            shown=_config_default("num_retries"),
        ),
        "num_retries",
    ),
    (
        Flag(
            "judge-response-format",
            "json_schema, json_object or text; json_schema falls back by itself on a 400.",
            shown=_config_default("response_format"),
        ),
        "response_format",
    ),
    (
        Flag("judge-tasks", f"What the judge does: {','.join(JUDGE_TASKS)} (any of).", shown=DEFAULT_TASKS),
        "tasks",
    ),
    (
        Flag("cascade-band", "LOW,HIGH heuristic confidences sent to the judge by the cascade.", shown=DEFAULT_BAND),
        "band",
    ),
    (
        Flag("judge-redact", "Mask e-mails, phone numbers and ID-like numbers in judge_calls.", switch=True),
        "redact",
    ),
]
JUDGE_FLAGS: list[Flag] = [flag for flag, _ in _FLAGS]


def add_judge_arguments(parser: argparse.ArgumentParser) -> None:
    """The `--judge-*` CLI flags (`--judge_timeout` and the like work too)."""
    add_flags(parser, JUDGE_FLAGS, title="LLM judge (with --verifier openai or cascade)")


def add_judge_pipeline_options(parser) -> None:
    """The same flags, underscored, for a `PipelineOptions._add_argparse_args`."""
    add_pipeline_options(parser, JUDGE_FLAGS)


def judge_argv(args: argparse.Namespace) -> list[str]:
    """Pipeline argv for the judge flags that were given."""
    return flags_argv(args, JUDGE_FLAGS)


def judge_verifier_config(opts: Any) -> dict[str, Any]:
    """The judge options as `make_verifier` / `VerifySentences` configuration (unset ones left out)."""
    config = {}
    for flag, option in _FLAGS:
        value = getattr(opts, flag.attr, None)
        if value is not None and value is not False:
            config[option] = value
    return config


def judge_tasks(value: str | None) -> list[str]:
    """The `--judge-tasks` list, checked; sentences by default."""
    tasks = [t.strip() for t in (value or DEFAULT_TASKS).split(",") if t.strip()]
    unknown = [t for t in tasks if t not in JUDGE_TASKS]
    if unknown or not tasks:
        raise ValueError(f"--judge-tasks takes sentences, citations and/or claims, got {value!r}")
    return tasks


def judge_report_tasks(opts: Any) -> list[str]:
    """The judge's tasks beyond verifying sentences (citation audit, claim checks) that `--judge-tasks` asks for."""
    return [t for t in judge_tasks(getattr(opts, "judge_tasks", None)) if t != "sentences"]


def apply_judge_reports(opts: Any, audited):
    """`audited` with the judge's citation audit and claim checks applied, if `--judge-tasks` asks for them."""
    tasks = judge_report_tasks(opts)
    if not tasks:
        return audited
    from transforms.verify.judge.reports import JudgeReports  # kept lazy: start-up (only with --judge-tasks)

    options = judge_verifier_config(opts)
    options.pop("band", None)
    options.pop("tasks", None)
    config = judge_config_from(options.pop("base_url", None), options.pop("model", None), **options)
    return audited | "JudgeReports" >> JudgeReports(tasks, config)
