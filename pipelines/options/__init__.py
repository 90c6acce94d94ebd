"""Flag tables shared by several commands: the judge's flags and the monitor's options.

Import the submodule you need; this package imports nothing eagerly.
"""

__all__: list[str] = []
