"""The audit, monitor and judge flags, declared once: both spellings parse alike and reach the pipeline options,
every help text states the default the table holds, and only Beam's own options pass through unparsed."""

from __future__ import annotations

import argparse

import pytest
from apache_beam.options.pipeline_options import PipelineOptions

import pipelines.audit as audit
import pipelines.options.monitor as monitor
from pipelines.options.audit import AuditOptions
from pipelines.options.flags import refuse_unknown_args
from pipelines.options.monitor import MonitorOptions
from transforms.verify.judge.config import JudgeConfig

COMMANDS = {"audit": audit, "monitor": monitor}


def _parser(command: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"groundwatch {command}")
    COMMANDS[command].add_arguments(parser)
    return parser


def _flags(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if a.option_strings and a.dest != "help"]


def _value(action: argparse.Action):
    """A value for the flag that is not its default, as command-line text and as parsed."""
    if action.choices:
        choice = next(c for c in action.choices if c != action.default)
        return choice, choice
    if action.type is int:
        return "7", 7
    if action.type is float:
        return "0.25", 0.25
    return f"/tmp/{action.dest}", f"/tmp/{action.dest}"


KAFKA_PREFIXED = {n: f"kafka_{n}" for n in ("bootstrap_servers", "topic", "group_id")}  # Beam has --topic ...
REQUIRED = {"audit": ["--input", "in.jsonl"], "monitor": ["--bootstrap-servers", "127.0.0.1:9092"]}


@pytest.mark.parametrize("command", COMMANDS)
def test_both_spellings_parse_alike_and_reach_the_pipeline_options(command):
    parser = _parser(command)
    for action in _flags(parser):
        dashed = action.option_strings[0]
        assert dashed.startswith("--") and "_" not in dashed
        underscored = dashed.replace("-", "_").replace("__", "--", 1)
        if action.nargs == 0:  # a switch
            given = [[dashed], [underscored]]
            expected = True
        else:
            text, expected = _value(action)
            given = [[dashed, text], [f"{underscored}={text}"]]
        for argv in given:
            args, extra = parser.parse_known_args(REQUIRED[command] + argv)
            assert extra == [], argv
            assert getattr(args, action.dest) == expected, argv
            options = PipelineOptions(COMMANDS[command].to_argv(args))
            views = [options.view_as(AuditOptions), options.view_as(MonitorOptions)]
            if action.dest in ("prism_location", "flink_rest"):  # declared by Beam, or by pipelines.runner.stop
                assert options.get_all_options()[action.dest] == expected
                continue
            name = KAFKA_PREFIXED.get(action.dest, action.dest)
            seen = [getattr(view, name) for view in views if name in view.get_all_options(current_only=True)]
            assert seen == [expected], (argv, name)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_help_states_the_default_in_force(command):
    parser = _parser(command)
    for action in _flags(parser):
        if action.default in (None, False):
            continue
        shown = action.default if action.default != "" else "none"  # "Default ." said nothing
        assert f"Default {shown}." in parser._get_formatter()._expand_help(action), action.dest
    assert "--sample_rate" not in parser.format_help()  # the help shows one spelling


def test_the_judge_help_states_the_judge_config_defaults():
    helps = {a.dest: a.help for a in _flags(_parser("audit"))}
    assert f"Default {JudgeConfig.model_fields['timeout_s'].default}." in helps["judge_timeout"]
    assert f"Default {JudgeConfig.model_fields['answers_per_call'].default}." in helps["judge_answers_per_call"]
    assert "Default 0.5,0.8." in helps["cascade_band"]


def test_monitor_streams_with_an_hour_of_lateness_by_default():
    args, _ = _parser("monitor").parse_known_args(REQUIRED["monitor"])
    lateness = PipelineOptions(monitor.to_argv(args)).view_as(AuditOptions).allowed_lateness_seconds
    assert lateness == monitor.STREAM_ALLOWED_LATENESS_SECONDS == 3600


OWN = [s for a in _flags(_parser("audit")) for s in a.option_strings]


@pytest.mark.parametrize(
    "extra",
    [
        ["--runner=FnApiRunner"],
        ["--direct_num_workers", "2", "--direct_running_mode=multi_processing"],
        ["--streaming"],
        ["--allowed_lateness_seconds=30"],  # an audit pipeline option the CLI does not show
    ],
)
def test_beam_options_pass(extra):
    assert refuse_unknown_args(extra, OWN) is None


@pytest.mark.parametrize(
    ("extra", "reason"),
    [
        (["--windw-seconds", "5"], "unrecognized argument --windw-seconds; did you mean --window-seconds?"),
        (["--sample_rat=0.5"], "unrecognized argument --sample_rat; did you mean --sample-rate?"),
        (["--direct_num_worker=2"], "unrecognized argument --direct_num_worker; did you mean --direct_num_workers?"),
        (["--zzzz"], "unrecognized argument --zzzz"),
        (["stray"], "unrecognized arguments: stray"),
        (["--direct_num_workers=many"], "argument --direct_num_workers: invalid int value: 'many'"),
    ],
)
def test_other_arguments_are_refused(extra, reason):
    assert refuse_unknown_args(extra, OWN) == reason


def test_a_remote_runner_may_know_more_options_but_not_our_misspellings():
    assert refuse_unknown_args(["--runner=FlinkRunner", "--flink_custom_option=1"], OWN) is None
    refused = refuse_unknown_args(["--runner=FlinkRunner", "--windw-seconds=5"], OWN)
    assert refused == "unrecognized argument --windw-seconds; did you mean --window-seconds?"
