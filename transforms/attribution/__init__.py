"""Citations and claims: citation markers, the citation audit, contextual fidelity, claim attribution.

Import the submodule you need; this package imports nothing eagerly.
"""

__all__: list[str] = []
