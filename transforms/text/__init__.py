"""Text analysis shared by the verifiers and the citation audit: sentences, tokens, quantities, quotes, word lists.

Import the submodule you need; this package imports nothing eagerly.
"""

__all__: list[str] = []
