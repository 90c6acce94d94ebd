"""The verification service behind `groundwatch serve`: the ASGI app, its documents and its publishers.

Import the submodule you need; this package imports nothing eagerly.
"""

__all__: list[str] = []
