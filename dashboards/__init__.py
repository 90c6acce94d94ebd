"""Evidently dashboards, the DuckDB views over the audit lake and the query library (`queries/*.sql`)."""

__all__: list[str] = []
