"""`scripts/bench_audit.py --against CHECKOUT --whole-pipeline`: each checkout's own `groundwatch audit` on one
traffic file, beside the same checkout's stage costs on the same responses, read back from what the command
prints; a checkout older than the stage benchmark is measured without them."""

from __future__ import annotations

import argparse
import os
import sys

import pytest

from pipelines.runner.bounded import pipeline_options, run_audit, runs_in_process
from pipelines.runner.counts import AuditCounts, format_counts
from pipelines.traffic.synthetic import generate_responses
from schemas import TABLES
from tests.support.lake_compare import assert_same_tables
from tests.support.scripts import ROOT, load_script
from transforms.audit.stages import GC_THRESHOLDS

bench = load_script("bench_audit")


def test_the_printed_summary_reads_back_as_its_counts():
    counts = AuditCounts(
        read=5003,
        audited=4990,
        sampled_out=6,
        dead_lettered=7,
        needs_review=4187,
        dead_letter_reasons={"invalid_json": 4, "schema_violation": 3},
        skipped_blank=2,
        with_unknown_fields=11,
    )
    printed = bench.printed_counts(format_counts(counts, "/data/lake"))
    assert printed == {
        "read": 5003,
        "skipped blank": 2,
        "audited": 4990,
        "sampled out": 6,
        "dead-lettered": 7,
        "unknown fields": 11,
    }


def test_a_value_that_only_starts_with_digits_is_not_a_count():
    summary = "read      12\nlake      2026/lake\nwindow    3s\n"
    assert bench.printed_counts(summary) == {"read": 12}


def test_a_checkout_without_the_stage_benchmark_has_no_stage_costs(tmp_path):
    assert bench.probe(str(tmp_path), bench.STAGES_PROBE, "traffic.jsonl", "heuristic", "10") is None


def _args(other, responses: int, *, stages_inside: bool = False) -> argparse.Namespace:
    return argparse.Namespace(
        against=str(other),
        responses=responses,
        seed=11,
        rounds=1,
        verifier="heuristic",
        unattributed=False,
        healthy=False,
        stages_inside=stages_inside,
    )


@pytest.mark.parametrize("stages_inside", [False, True], ids=["stages-beside", "stages-inside"])
def test_both_checkouts_are_measured_round_by_round_with_their_stages_and_the_rest(tmp_path, capsys, stages_inside):
    # This checkout against itself, by another path: what matters is that each run is a real `groundwatch audit`
    # whose counts and CPU are read back, and that the stage costs are subtracted from that run's own CPU (timed in
    # another process beside the run, or inside the run itself).
    other = tmp_path / "other-checkout"
    other.symlink_to(ROOT, target_is_directory=True)
    bench.bench_pipelines_against(_args(other, 3, stages_inside=stages_inside), [])
    lines = capsys.readouterr().out.splitlines()
    rounds = [line for line in lines if line.startswith("round 1 ")]
    assert len(rounds) == 2
    for line in rounds:
        assert ": 3 audited, " in line
        cpu = float(line.split(" CPU ms per response")[0].rsplit(", ", 1)[1])
        stages = float(line.split("stages ")[1].split(",")[0])
        rest = float(line.split("the rest ")[1].split(" ")[0])
        assert cpu > stages > 0
        assert abs(cpu - stages - rest) < 0.011
    assert len([line for line in lines if "over 1 rounds, each a median" in line]) == 2
    inside = [line for line in lines if line.startswith("  inside the run: ")]
    if stages_inside:
        assert len(inside) == 2
        for line in inside:
            labels = [part.rsplit(" ", 1)[0] for part in line.removeprefix("  inside the run: ").split(", ")]
            assert labels == [
                "ParseResponses",
                "VerifySentences",
                "AuditCitations",
                "CheckClaimAttribution",
                "ScoreRetrieval",
                "ScoreAndFlag",
                "ToLakeRows",
            ]
    else:
        assert inside == []


def test_timed_inside_the_run_the_audit_writes_the_lake_a_plain_run_writes(tmp_path):
    # The timing wraps the stage DoFns' process methods: Beam must still give them what their signatures ask for
    # (the verifier its window, the parse its side input of repeated ids), or the rows would differ.
    traffic = tmp_path / "traffic.jsonl"
    messages = list(generate_responses(8, seed=3, sentences=3, passages=3, attributed=True, flaw_rate=0.3))
    bench.write_traffic(str(traffic), [*messages, messages[0]])  # one repeated id
    with traffic.open("ab") as f:
        f.write(b"{not json\n")  # one dead letter
    plain, inside = tmp_path / "plain", tmp_path / "inside"
    run_audit([f"--input={traffic}", f"--lake={plain}"], out=lambda _: None)  # in process, as the probe's
    argv = [sys.executable, "-c", bench.INSIDE_PROBE, f"--input={traffic}", f"--lake={inside}"]
    _, cpu, code, output = bench.timed_run(argv, env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT)
    assert code == 0, output[-3000:]
    assert bench.printed_counts(output)["dead-lettered"] == 2  # the broken line and the repeated id
    assert assert_same_tables(str(plain), str(inside), TABLES) > 8
    seconds = bench.inside_seconds(str(ROOT), output)
    assert all(s > 0 for s in seconds.values()), seconds
    assert sum(seconds.values()) < cpu
    # Each DoFn's own work only: were the time after its yield counted, the parse would take in the verification and
    # everything after it (it costs about a fifteenth of the verification).
    assert seconds["ParseResponses"] < seconds["VerifySentences"]


def test_stages_inside_refuses_another_runner_and_goes_only_with_the_whole_pipeline_side_by_side(tmp_path):
    # Another runner's stages run in its workers, where this process's timing does not reach.
    with pytest.raises(SystemExit, match="not with another runner"):
        bench.bench_pipelines_against(_args(tmp_path, 2, stages_inside=True), ["--runner=PrismRunner"])
    with pytest.raises(SystemExit) as usage:
        bench.main(["--stages-inside", "--responses", "2"])
    assert usage.value.code == 2  # argparse's usage error


def _checkout(root, bench_audit_source: str):
    (root / "scripts").mkdir(parents=True)
    (root / "scripts" / "bench_audit.py").write_text(bench_audit_source)
    return str(root)


def test_an_import_that_fails_inside_the_other_checkouts_benchmark_is_an_error_not_a_missing_benchmark(tmp_path):
    checkout = _checkout(tmp_path, "import a_module_nobody_installed\n")
    with pytest.raises(SystemExit, match="a_module_nobody_installed"):
        bench.probe(checkout, bench.STAGES_PROBE, "traffic.jsonl", "heuristic", "10")


def test_an_older_benchmark_is_measured_with_the_collector_tuned_once_its_verifier_is_built(tmp_path):
    # A `bench_stages` from before the benchmark tuned the collector itself: the probe tunes it as the workers
    # did, after building the verifier (here, the collector's first threshold before and after that moment).
    checkout = _checkout(
        tmp_path,
        "import gc\n"
        "def make_verifier(name):\n"
        "    return gc.get_threshold()[0]\n"
        "def bench_stages(lines, name):\n"
        "    at_build = make_verifier(name)\n"
        "    return [('at_build', at_build), ('after', gc.get_threshold()[0]), ('lines', len(lines))]\n",
    )
    traffic = tmp_path / "traffic.jsonl"
    traffic.write_bytes(b"{}\n\n{}\n{}\n")
    costs = bench.probe(checkout, bench.STAGES_PROBE, str(traffic), "heuristic", "2")
    assert costs["at_build"] != GC_THRESHOLDS[0]  # a fresh interpreter's own threshold
    assert costs["after"] == GC_THRESHOLDS[0]
    assert costs["lines"] == 2  # the blank line is no response


@pytest.mark.parametrize(
    ("options", "local"),
    [
        ([], True),
        (["--direct_num_workers=2", "--direct_running_mode=multi_processing"], True),
        (["--direct_num_workers=2", "--direct_running_mode=in_memory"], True),
        (["--runner=PrismRunner"], False),
        (["--runner=FlinkRunner", "--flink_master=127.0.0.1:8081"], False),
    ],
)
def test_stage_figures_only_where_every_process_of_the_run_is_the_commands_child(options, local):
    # The whole-pipeline comparison subtracts the stages only from runs whose CPU `os.wait4` sees whole.
    assert runs_in_process(pipeline_options(["--input=traffic.jsonl", *options])) is local


def test_the_verifier_mode_measures_the_other_checkout_first_as_the_whole_pipeline_mode_does(tmp_path, capsys):
    # Both side-by-side modes alternate in one order (the other checkout, then this one), so their rounds read
    # alike; each verifier runs for real in a fresh interpreter of its checkout.
    other = tmp_path / "other-checkout"
    other.symlink_to(ROOT, target_is_directory=True)
    bench.bench_against(_args(other, 2))
    rounds = [line for line in capsys.readouterr().out.splitlines() if line.startswith("round 1 ")]
    assert [line.split(":")[0] for line in rounds] == [f"round 1 {other}", f"round 1 {ROOT}"]
    assert all(" 10 sentences, " in line for line in rounds)
