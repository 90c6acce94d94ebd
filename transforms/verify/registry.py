"""Build a verifier by name: the `--verifier` flag's registry.

    verifier = make_verifier("heuristic", threshold=0.7)

Each entry names a factory as `"module:attribute"` and is imported only when
used, so the offline default never imports an HTTP client. A module that adds
a verifier registers it here with one line (or calls `register_verifier`).
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable

from transforms.verify.base import Verifier

__all__ = ["VERIFIERS", "available_verifiers", "make_verifier", "register_verifier"]

VERIFIERS: dict[str, str | Callable[..., Verifier]] = {
    "heuristic": "transforms.verify.heuristic.verifier:HeuristicVerifier",
    "openai": "transforms.verify.judge.verifier:JudgeVerifier",
    "cascade": "transforms.verify.judge.verifier:CascadeVerifier",
    "model": "transforms.verify.model.verifier:ModelVerifier",
}


def register_verifier(name: str, factory: str | Callable[..., Verifier]) -> None:
    """Make `make_verifier(name)` build verifiers with `factory` (a callable or a `"module:attribute"` path)."""
    VERIFIERS[name] = factory


def available_verifiers() -> list[str]:
    """The names `--verifier` accepts."""
    return sorted(VERIFIERS)


def _resolve(factory: str | Callable[..., Verifier]) -> Callable[..., Verifier]:
    if callable(factory):
        return factory
    module_name, _, attribute = factory.partition(":")
    return getattr(importlib.import_module(module_name), attribute)


def make_verifier(name: str, **config) -> Verifier:
    """A new verifier called `name`; `config` keys the factory does not accept are ignored.

    Pipelines pass the same config to every verifier (e.g. `threshold`); each takes what it understands.
    """
    if name not in VERIFIERS:
        raise ValueError(f"unknown verifier {name!r}; choose one of: {', '.join(available_verifiers())}")
    factory = _resolve(VERIFIERS[name])
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        params = {}
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        config = {k: v for k, v in config.items() if k in params}
    verifier = factory(**config)
    if not isinstance(verifier, Verifier):
        raise TypeError(f"verifier factory for {name!r} returned {type(verifier).__name__}, not a Verifier")
    return verifier
