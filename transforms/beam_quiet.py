"""Keep Beam's "apitools not found" line out of every process that runs our code: the CLI, tests, benchmarks.

Beam's BigQuery client logs "apitools not found, and bigquery client libraries are not available ..." on the
root logger when `apache_beam` is imported without the GCP extras. It says nothing about what groundwatch does.
Likewise, each RunInference model load logs "Resource module is not available for current platform ..." when
torch is not installed: Beam imports `resource` in one `try` with its torch-based ModelManager, so without
torch it believes `resource` is missing (on Linux it is not) and only a memory metric is lost.
Importing this module installs a filter on the root logger that drops those two messages alone (once per
process, whoever imports it first). The `transforms` and `pipelines` packages import it in their `__init__`,
which Python runs before any of their modules, so the filter is in place before our code first runs
`import apache_beam`.
It imports nothing but `logging`: the packages still load without Beam.
"""

from __future__ import annotations

import logging

__all__ = ["DropApitoolsNotice", "quiet_beam_imports"]

NOTICES = ("apitools not found", "Resource module is not available for current platform")


class DropApitoolsNotice(logging.Filter):
    """Drops the root logger's two records named in `NOTICES`; every other record passes."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.name == "root" and str(record.msg).startswith(NOTICES))


def quiet_beam_imports() -> None:
    """Install the filter on the root logger, if it is not there yet."""
    root = logging.getLogger()
    if not any(isinstance(f, DropApitoolsNotice) for f in root.filters):
        root.addFilter(DropApitoolsNotice())


quiet_beam_imports()
