"""Reports written by commands: the calibration report and its tables, the drift part of the demo.

Import the submodule you need; this package imports nothing eagerly.
"""

__all__: list[str] = []
