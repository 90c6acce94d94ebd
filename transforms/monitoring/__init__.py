"""Watching the audits over time: window metrics, the lake frames drift reads, drift checks with Evidently, alerts.

Import the submodule you need; this package imports nothing eagerly.
"""

__all__: list[str] = []
