"""What `groundwatch review label | import | export` do, as functions returning an exit code and a line.

    label_one(lake, Label("r-1", 2, "contradicted", "ana"))   # (0, "recorded 1 review ...")
    import_file(lake, "labels.jsonl", default_reviewer="ana")   # (2, "line 3: unknown label 'wrong'")

Bad input is exit 2 with one line and nothing written; see `pipelines.reviewing.store`.
"""

from __future__ import annotations

import os

from dashboards.views import connect_lake
from pipelines.reviewing.labels_io import export_golden, read_labels
from pipelines.reviewing.store import Label, ReviewInputError, append_reviews, review_rows
from transforms.io.lake import filesystem as lakefs

__all__ = ["check_lake", "export_file", "import_file", "label_one"]


def check_lake(lake: str) -> None:
    """Raise ReviewInputError when there is no lake at `lake`."""
    if lakefs.is_remote(lake):
        try:
            lakefs.check_location(lake)
        except (ValueError, OSError) as e:
            raise ReviewInputError(f"--lake: {e}") from None
    elif not os.path.isdir(lake):
        raise ReviewInputError(f"--lake: no lake at {lake!r}")


def _record(lake: str, labels: list[Label], *, source: str, where: list[str] | None = None) -> tuple[int, str]:
    check_lake(lake)
    rows = review_rows(connect_lake(lake), labels, source=source, where=where)
    append_reviews(lake, rows)
    return 0, f"recorded {len(rows)} review(s) in {lake}/reviews"


def label_one(lake: str, label: Label) -> tuple[int, str]:
    """Record one label from the command line."""
    try:
        return _record(lake, [label], source="cli")
    except ReviewInputError as e:
        return 2, str(e)


def import_file(lake: str, path: str, *, default_reviewer: str = "") -> tuple[int, str]:
    """Record every label of a JSONL file, or none of them."""
    try:
        labels, where = read_labels(path, default_reviewer=default_reviewer)
        return _record(lake, labels, source="import", where=where)
    except ReviewInputError as e:
        return 2, str(e)


def export_file(lake: str, out: str, *, tenant: str | None = None) -> tuple[int, str]:
    """Write the reviewed sentences as a golden file."""
    try:
        check_lake(lake)
        count = export_golden(connect_lake(lake), out, tenant=tenant)
    except ReviewInputError as e:
        return 2, str(e)
    except OSError as e:
        return 2, f"--golden: cannot write {out}: {e.strerror or e}"
    return 0, f"wrote {count} reviewed sentence(s) to {out}"
