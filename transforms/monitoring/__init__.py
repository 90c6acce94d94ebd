"""Watching the audits over time: window metrics, drift checks with Evidently, alert episodes.

Import the submodule you need; this package imports nothing eagerly.
"""

__all__: list[str] = []
