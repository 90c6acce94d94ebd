"""The commands' options, each declared once in a flag table (`flags`): the audit's, the monitor's (Kafka) and the
judge's, shared by the commands that run them.

Import the submodule you need; this package imports nothing eagerly.
"""

__all__: list[str] = []
