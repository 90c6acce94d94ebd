"""The audit's options, declared once (`AUDIT_FLAGS`): the CLI flags of `groundwatch audit` and `monitor`, the
`AuditOptions` Beam reads, and the checks that refuse unusable values before a pipeline starts.

    options = PipelineOptions(argv).view_as(AuditOptions); validate_options(options)
"""

from __future__ import annotations

import glob
import os
import zlib
from typing import Any

from apache_beam.io.filesystem import CompressionTypes
from apache_beam.options.pipeline_options import PipelineOptions

from pipelines.options.common import LAKE_WHAT
from pipelines.options.flags import DEFAULT_LAKE, Flag, add_flags, add_pipeline_options
from pipelines.options.flink import FlinkJobOptions  # noqa: F401  (registers the job server's option with Beam)
from pipelines.options.judge import add_judge_pipeline_options
from pipelines.options.model import add_model_pipeline_options, validate_model_options
from pipelines.runner.passes import MAX_RECORDS_PER_RUN
from transforms.ingest.windows import DEFAULT_WINDOW_SECONDS
from transforms.io.jsonl import open_jsonl, why_unreadable
from transforms.io.lake import filesystem as lakefs
from transforms.verify.base import DEFAULT_CONFIDENCE_THRESHOLD
from transforms.verify.calibration import Calibration
from transforms.verify.registry import available_verifiers

__all__ = [
    "AUDIT_FLAGS",
    "DEFAULT_VERIFIER",
    "AuditOptions",
    "check_input",
    "check_lake",
    "add_calibration_argument",
    "load_calibration",
    "validate_options",
]

DEFAULT_VERIFIER = "heuristic"
DEFAULT_REVIEW_SAMPLE = 0.02

AUDIT_FLAGS: list[Flag] = [
    Flag(
        "input",
        "JSONL file or glob of logged responses, one JSON object per line (.gz and other compressions by extension).",
        required=True,
    ),
    Flag("lake", f"{LAKE_WHAT} Parquet files go under <lake>/<table>/date=/hour=/.", cli_default=DEFAULT_LAKE),
    Flag(
        "sample-rate",
        "Fraction in [0, 1] of responses audited, by a hash of response_id; high risk always.",
        float,
        1.0,
    ),
    Flag("window-seconds", "Fixed event-time window size in seconds.", int, DEFAULT_WINDOW_SECONDS),
    Flag(
        "allowed-lateness-seconds",
        "How long after a window closes its late responses are still audited (streaming).",
        int,
        0,
    ),
    Flag(
        "confidence-threshold",
        "Sentences with a lower confidence are flagged and reviewed; in [0, 1].",
        float,
        DEFAULT_CONFIDENCE_THRESHOLD,
    ),
    Flag(
        "review-sample",
        "Fraction in [0, 1] of confident responses (those nothing else sends to review) sent to review at random, "
        "by a hash of response_id: the unbiased measure of agreement between verifier and reviewers.",
        float,
        DEFAULT_REVIEW_SAMPLE,
    ),
    Flag("verifier", f"Sentence verifier: one of {', '.join(available_verifiers())}.", default=DEFAULT_VERIFIER),
    Flag(
        "calibration",
        "Calibration file (`groundwatch calibrate --fit`): confidences are calibrated by it, a cascade's bands "
        "are its bands; an audit's lake gets its SHA-256. Empty for none.",
        default="",
    ),
    Flag(
        "redact",
        "Mask e-mail addresses, phone numbers and ID-like numbers in all text the lake stores (query, answer, "
        "passages, excerpts, ...) with same-length masks, so offsets stay valid.",
        switch=True,
    ),
    Flag(
        "max-records-per-run",
        "On the local runner, a large input (a JSONL audit, a Kafka catch-up) is read in passes of at most this "
        "many messages, each a run of its own (bounds memory).",
        int,
        MAX_RECORDS_PER_RUN,
    ),
]
"""Every audit option; `groundwatch audit` leaves out the lateness (a bounded run has no late data)."""


class AuditOptions(PipelineOptions):
    """Options of the audit pipeline (`groundwatch audit` spells them with dashes: --sample-rate)."""

    @classmethod
    def _add_argparse_args(cls, parser):
        add_pipeline_options(parser, AUDIT_FLAGS)
        add_judge_pipeline_options(parser)
        add_model_pipeline_options(parser)


def validate_options(opts: AuditOptions, *, need_input: bool = True) -> None:
    """Raise ValueError naming the flag when an option is unusable."""
    if need_input:
        if not opts.input:
            raise ValueError("--input is required: a JSONL file or glob of logged responses")
        check_input(opts.input)
    if not opts.lake:
        raise ValueError("--lake is required: the folder of the audit lake")
    check_lake(opts.lake)
    if not 0.0 <= opts.sample_rate <= 1.0:
        raise ValueError(f"--sample-rate must be in [0, 1], got {opts.sample_rate}")
    if not 0.0 <= opts.review_sample <= 1.0:
        raise ValueError(f"--review-sample must be in [0, 1], got {opts.review_sample}")
    if opts.window_seconds <= 0:
        raise ValueError(f"--window-seconds must be a positive integer, got {opts.window_seconds}")
    if not 0.0 <= opts.confidence_threshold <= 1.0:
        raise ValueError(f"--confidence-threshold must be in [0, 1], got {opts.confidence_threshold}")
    if opts.max_records_per_run < 1:
        raise ValueError(f"--max-records-per-run must be >= 1, got {opts.max_records_per_run}")
    if opts.verifier not in available_verifiers():
        raise ValueError(f"--verifier {opts.verifier!r} is unknown; choose one of: {', '.join(available_verifiers())}")
    validate_model_options(opts)
    if opts.calibration and load_calibration(opts).tenants and opts.verifier != "heuristic":
        # The model and judge stages run batched across responses (RunInference), one calibration for all.
        raise ValueError(
            f"--calibration {opts.calibration} has tenant sections: audit and monitor apply them with "
            "--verifier heuristic only (serve and gate with any verifier)"
        )


def add_calibration_argument(parser) -> None:
    """The audit's `--calibration` flag, for the commands that verify in process (`gate`, `serve`)."""
    add_flags(parser, [flag for flag in AUDIT_FLAGS if flag.name == "calibration"])


def load_calibration(opts: Any) -> Calibration:
    """The `--calibration` file, checked against the verifier; ValueError naming the flag when unusable. `opts`:
    the `AuditOptions`, or any parsed flags with `calibration` and `verifier` (gate's, serve's)."""
    try:
        calibration = Calibration.load(opts.calibration)
    except ValueError as e:
        raise ValueError(f"--calibration: {e}") from None
    if opts.verifier == "heuristic" and calibration.stage("heuristic") is None:
        raise ValueError(f"--calibration {opts.calibration} has no 'heuristic' stage for --verifier heuristic")
    return calibration


def check_input(pattern: str) -> None:
    """Raise ValueError when the local files `--input` names cannot be read as JSONL: nothing matches, a
    directory is named or matched, or a file begins like a JSON array. Remote inputs (`gs://...`) are not
    looked at here."""
    if "://" in pattern:
        return
    if os.path.isdir(pattern):
        raise ValueError(
            f"--input {pattern!r} is a directory; give a JSONL file or a glob such as "
            f"{os.path.join(pattern, '*.jsonl')!r}"
        )
    matches = sorted(glob.glob(pattern))
    if not matches:
        raise ValueError(f"--input {pattern!r} matches no file")
    if folders := [m for m in matches if os.path.isdir(m)]:
        raise ValueError(f"--input {pattern!r} matches a directory, {folders[0]!r}; give a glob of files only")
    for path in matches:
        if _first_byte(path) == b"[":
            raise ValueError(
                f"--input {path!r}: the input looks like a JSON array; JSONL (one JSON object per line) is expected"
            )


_BLANK_PREFIX = 1 << 20
"""How far into a file the first non-blank byte is looked for (a file of blank lines has none)."""


def _first_byte(path: str) -> bytes:
    """The first byte of `path` (decompressed by its extension, as the reader does) that is not whitespace or a
    UTF-8 byte-order mark; b"" if none. A file that cannot be decompressed that far (a `.gz` that is not gzip)
    is refused here, with the reader's reason, before a pipeline is built; one truncated further on is found
    by the reader."""
    read = 0
    try:
        with open_jsonl(path) as stream:
            while read < _BLANK_PREFIX and (chunk := stream.read(1 << 16)):
                stripped = chunk.removeprefix(b"\xef\xbb\xbf") if read == 0 else chunk
                read += len(chunk)
                if stripped := stripped.lstrip():
                    return stripped[:1]
    except (OSError, EOFError, zlib.error) as e:
        if getattr(e, "errno", None) is not None:  # the file system's own error: the reader reports it
            return b""
        kind = CompressionTypes.detect_compression_type(path)
        raise ValueError(f"--input: {why_unreadable(path, kind, e, 0)}") from None
    return b""


def check_lake(lake: str) -> None:
    """Raise ValueError when `--lake` cannot be a folder: it names a file, or a file stands in its path; for
    object storage (`s3://bucket/prefix`), when the URI holds credentials or the bucket is not there."""
    if lakefs.is_remote(lake):
        try:
            lakefs.check_location(lake)
        except ValueError as e:
            raise ValueError(f"--lake: {e}") from None
        return
    path = os.path.abspath(lake)
    if os.path.exists(path) and not os.path.isdir(path):
        raise ValueError(f"--lake {lake!r} is a file, not a folder")
    existing = path
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise ValueError(f"--lake {lake!r} cannot be a folder: {existing!r} is a file")
