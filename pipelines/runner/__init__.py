"""How bounded and streaming runs are carried out locally: passes, catch-up, worker pools, run counts.

Import the submodule you need; this package imports nothing eagerly.
"""

__all__: list[str] = []
