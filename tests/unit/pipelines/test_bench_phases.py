"""The figures `scripts/bench_flink.py` derives from its runs: each run split into its start, its work and its tail
(from the workers' cumulative CPU sampled in time, the work is the span from the first to the last interval in which
they used at least a given number of cores; the script asks for half of their cores), and the targets' ratios with
their values over rounds."""

from __future__ import annotations

from tests.support.scripts import load_script

bench = load_script("bench_flink")


def test_the_work_is_the_span_the_workers_were_busy_in():
    # 0-3 s: starting (a tenth of a core); 3-9 s: one core, with a dip to a quarter at 5-6 s; 9-11 s: idle.
    rates = [0.1, 0.1, 0.1, 1.0, 1.0, 0.25, 1.0, 1.0, 1.0, 0.0, 0.0]
    samples, cpu = [(0.0, 0.0)], 0.0
    for second, rate in enumerate(rates, start=1):
        cpu += rate
        samples.append((float(second), cpu))
    assert bench.busy_span(samples) == (3.0, 9.0)  # a dip inside the work does not end it
    assert bench.busy_span(samples, cores=2.0) is None
    # Start 3 s, work 6 s, tail 2 s; during the work the workers used 1.0 * 5 + 0.25 = 5.25 CPU seconds.
    assert bench.phases_of(samples, 0.5) == ((3.0, 6.0, 2.0), 5.25)
    assert bench.phases_of(samples, 2.0) is None


def test_two_busy_workers_count_as_two_cores_and_an_idle_run_has_no_work():
    samples = [(0.0, 0.0), (0.5, 0.0), (1.0, 0.9), (1.5, 1.9), (2.0, 1.9)]
    assert bench.busy_span(samples, cores=1.5) == (0.5, 1.5)
    assert bench.busy_span([(0.0, 0.0), (1.0, 0.0)]) is None
    assert bench.busy_span([(0.0, 0.0)]) is None


def test_the_ratios_are_parallelism_2_over_1_and_flink_cpu_over_the_fnapirunners():
    runs = {
        "local": {"rate": 480.0, "cpu_ms": 4.0},
        1: {"rate": 250.0, "cpu_ms": 4.2, "job_rate": 260.0, "work_rate": 270.0},
        2: {"rate": 460.0, "cpu_ms": 4.4, "job_rate": 500.0},  # its phases were not found
    }
    ratios = bench._ratios(runs)
    assert ratios["parallelism 2 / 1, responses/s of the whole command"] == 460.0 / 250.0
    assert ratios["parallelism 2 / 1, while the job ran"] == 500.0 / 260.0
    assert "parallelism 2 / 1, over the work phase" not in ratios
    assert ratios["CPU per response, Flink parallelism 2 / FnApiRunner"] == 4.4 / 4.0
    assert bench._ratios({"local": runs["local"], 1: runs[1]}) == {
        "CPU per response, Flink parallelism 1 / FnApiRunner": 4.2 / 4.0
    }


def test_each_ratio_keeps_the_values_of_the_rounds_that_have_it():
    whole, work = "parallelism 2 / 1, responses/s of the whole command", "parallelism 2 / 1, over the work phase"
    rounds = [{whole: 1.75}, {whole: 1.82, work: 1.96}, {}, {whole: 1.63, work: 1.69}]  # no phases in round 1
    assert bench.by_ratio(rounds) == {whole: [1.75, 1.82, 1.63], work: [1.96, 1.69]}
    assert bench.by_ratio([]) == {}
