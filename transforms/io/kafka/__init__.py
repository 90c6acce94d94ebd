"""Kafka on kafka-python: the client settings, partitions, the splittable source, offset commits, the sinks.

Import the submodule you need; this package imports nothing eagerly.
"""

__all__: list[str] = []
