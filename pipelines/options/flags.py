"""Flags declared once: a table of `Flag`s per command gives its CLI flags, its Beam pipeline options and the
argv between them, and `refuse_unknown_args` checks what the CLI passes on to Beam.

    AUDIT_FLAGS = [Flag("sample-rate", "Fraction audited.", float, 1.0), ...]
    add_flags(parser, AUDIT_FLAGS)                # groundwatch audit --sample-rate 0.5 (or --sample_rate 0.5)
    add_pipeline_options(parser, AUDIT_FLAGS)     # in AuditOptions._add_argparse_args: --sample_rate
    argv = flags_argv(args, AUDIT_FLAGS)          # ["--sample_rate=0.5", ...] for PipelineOptions

A help text states the flag's default from the value the table holds (argparse's `%(default)s`), never by hand.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import difflib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from pipelines.options import common

__all__ = [
    "DEFAULT_LAKE",
    "Flag",
    "OneSpellingHelpFormatter",
    "REMOTE_RUNNERS",
    "add_flags",
    "add_pipeline_options",
    "flags_argv",
    "refuse_unknown_args",
    "with_cli_defaults",
]

DEFAULT_LAKE = common.DEFAULT_LAKE
"""The audit lake folder of a command run without `--lake` (`pipelines.options.common`)."""

_SAME = object()


@dataclass(frozen=True)
class Flag:
    """One option: `--name` on the command line (its underscored spelling works too), `--option` to Beam."""

    name: str
    """The dashed command-line name, e.g. `sample-rate`."""
    help: str
    """What the flag sets; the default is appended from `default` (or `shown`)."""
    type: Callable[[str], Any] | None = str
    default: Any = None
    """The pipeline option's default, and the command line's unless `cli_default` is given."""
    option: str = ""
    """The pipeline option's name when it is not the underscored `name` (Beam has its own `--topic`)."""
    choices: tuple[str, ...] | None = None
    switch: bool = False
    """A flag without a value (`store_true`)."""
    required: bool = False
    """Required on the command line (a pipeline option is checked by the command's validation instead)."""
    cli_default: Any = _SAME
    shown: Any = None
    """The default to state when `default` is None because another layer decides it (e.g. the judge's config)."""
    beam_owned: bool = False
    """The pipeline option is Beam's own (`--prism_location`): the table declares only the command-line flag."""

    @property
    def attr(self) -> str:
        """The attribute of the parsed command line."""
        return self.name.replace("-", "_")

    @property
    def pipeline_name(self) -> str:
        return self.option or self.attr

    def spellings(self) -> list[str]:
        """`--sample-rate` and `--sample_rate` (one, when the name has no dash)."""
        return list(dict.fromkeys([f"--{self.name}", f"--{self.attr}"]))


def _help(flag: Flag, default: Any) -> str:
    text = flag.help.replace("%", "%%")
    if flag.switch:
        return text
    if default == "":  # an empty string means "none"; argparse would print "Default ."
        return f"{text} Default none."
    if default is not None:
        return f"{text} Default %(default)s."
    if flag.shown is not None:
        shown = ",".join(map(str, flag.shown)) if isinstance(flag.shown, tuple) else str(flag.shown)
        return f"{text} Default {shown.replace('%', '%%')}."
    return text


def _kwargs(flag: Flag, default: Any) -> dict[str, Any]:
    if flag.switch:
        return {"action": "store_true", "default": bool(default), "help": _help(flag, None)}
    kwargs = {"type": flag.type, "default": default, "help": _help(flag, default)}
    if flag.choices:
        kwargs["choices"] = flag.choices
    return kwargs


def add_flags(parser, flags: Iterable[Flag], *, title: str | None = None) -> None:
    """The command-line flags of `flags` (attributes named `Flag.attr`), in a group titled `title` if given.
    The parser's help then shows one spelling of each (`OneSpellingHelpFormatter`)."""
    if getattr(parser, "formatter_class", None) is argparse.HelpFormatter:
        parser.formatter_class = OneSpellingHelpFormatter
    target = parser.add_argument_group(title) if title else parser
    for flag in flags:
        default = flag.default if flag.cli_default is _SAME else flag.cli_default
        kwargs = _kwargs(flag, default)
        if flag.required:
            kwargs["required"] = True
        target.add_argument(*flag.spellings(), dest=flag.attr, **kwargs)


def add_pipeline_options(parser, flags: Iterable[Flag]) -> None:
    """The pipeline options of `flags`, for a `PipelineOptions._add_argparse_args(parser)`."""
    for flag in flags:
        if not flag.beam_owned:
            parser.add_argument(f"--{flag.pipeline_name}", **_kwargs(flag, flag.default))


def flags_argv(args: argparse.Namespace, flags: Iterable[Flag]) -> list[str]:
    """Pipeline argv for the parsed command-line values of `flags` (those given or defaulted, not None)."""
    argv = []
    for flag in flags:
        value = getattr(args, flag.attr, None)
        if flag.switch:
            argv += [f"--{flag.pipeline_name}"] if value else []
        elif value is not None:
            argv.append(f"--{flag.pipeline_name}={value}")
    return argv


def with_cli_defaults(flags: Iterable[Flag], **defaults: Any) -> list[Flag]:
    """`flags` with other command-line defaults, by attribute (`allowed_lateness_seconds=3600`)."""
    return [dataclasses.replace(f, cli_default=defaults[f.attr]) if f.attr in defaults else f for f in flags]


class OneSpellingHelpFormatter(argparse.HelpFormatter):
    """Help that shows a flag's dashed spelling only (`--sample-rate`, not also `--sample_rate`)."""

    def _format_action_invocation(self, action):
        strings = action.option_strings
        dashed = [s for s in strings if "_" not in s or s.replace("_", "-") not in strings]
        if dashed != action.option_strings:
            action = copy.copy(action)
            action.option_strings = dashed
        return super()._format_action_invocation(action)


REMOTE_RUNNERS = ("DataflowRunner", "FlinkRunner", "SparkRunner", "PortableRunner", "SamzaRunner")
"""Runners whose job service may declare pipeline options of its own, unknown to the Python SDK."""


def refuse_unknown_args(extra: Sequence[str], own: Sequence[str]) -> str | None:
    """Why `extra` (what the command line did not parse) cannot pass to Beam, or None when it can.

    Every flag must be one of Beam's pipeline options; a misspelled one (`--windw-seconds`) is named with the
    closest flag of `own` (the command's flags) or Beam's. On a remote runner (`REMOTE_RUNNERS`) an unknown flag
    passes on unless it is close to one of the command's own, since the runner's job service may know it.
    """
    if not extra:
        return None
    parser = _beam_parser()
    parser.exit_on_error = False  # a bad value of a Beam option is said in one line, not with Beam's usage
    try:
        known, unknown = parser.parse_known_args(list(extra))
    except argparse.ArgumentError as e:
        return str(e)
    if not unknown:
        return None
    beam_options = [s for action in parser._actions for s in action.option_strings if s.startswith("--")]
    own_dashed = [s for s in own if s.startswith("--") and "_" not in s]
    own_all = {s.replace("_", "-") for s in own}
    # Beam also knows our own pipeline options (`--window_seconds`): name them by their command-line spelling.
    candidates = own_dashed + [s for s in beam_options if s.replace("_", "-") not in own_all]
    remote = str(getattr(known, "runner", None)).rsplit(".", 1)[-1] in REMOTE_RUNNERS
    for arg in unknown:
        if not arg.startswith("-"):
            continue
        name = arg.split("=", 1)[0]
        close = difflib.get_close_matches(name, candidates, n=1)
        if remote and not (close and close[0] in own_dashed):
            continue
        return f"unrecognized argument {name}" + (f"; did you mean {close[0]}?" if close else "")
    if remote:
        return None
    return f"unrecognized arguments: {' '.join(unknown)}"  # values without a flag


def _beam_parser() -> argparse.ArgumentParser:
    """The parser Beam reads pipeline options with: every `PipelineOptions` subclass imported so far."""
    from apache_beam.options.pipeline_options import PipelineOptions

    captured: list[argparse.ArgumentParser] = []
    PipelineOptions([]).get_all_options(add_extra_args_fn=captured.append)
    return captured[0]
