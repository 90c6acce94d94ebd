"""The audit of one response as the pipeline runs it: verification, the later stages, scoring and routing.

Import the submodule you need; this package imports nothing eagerly.
"""

__all__: list[str] = []
