"""Build a verifier by name: the `--verifier` flag's registry.

    verifier = make_verifier("heuristic", threshold=0.7)
    verifier = make_verifier("heuristic", calibration=Calibration.load("cal.json"))  # calibrated confidence

A calibration file with tenant sections gives a `transforms.verify.tenants.TenantVerifier`: one verifier per
section, which the audit picks by the response's tenant.

Each entry names a factory as `"module:attribute"` and is imported only when
used, so the offline default never imports an HTTP client. A module that adds
a verifier registers it here with one line (or calls `register_verifier`).
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable

from transforms.verify.base import Verifier
from transforms.verify.calibration import CalibratedVerifier, Calibration
from transforms.verify.tenants import TenantVerifier

__all__ = ["VERIFIERS", "available_verifiers", "make_verifier", "register_verifier", "verifier_versions"]

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


def verifier_versions() -> dict[str, str]:
    """Each verifier's version as its class declares it (a model or judge run adds its model's digest)."""
    return {name: str(getattr(_resolve(factory), "version", "unknown")) for name, factory in sorted(VERIFIERS.items())}


def _resolve(factory: str | Callable[..., Verifier]) -> Callable[..., Verifier]:
    if callable(factory):
        return factory
    module_name, _, attribute = factory.partition(":")
    return getattr(importlib.import_module(module_name), attribute)


def make_verifier(name: str, *, calibration: Calibration | None = None, **config) -> Verifier:
    """A new verifier called `name`; `config` keys the factory does not accept are ignored.

    Pipelines pass the same config to every verifier (e.g. `threshold`); each takes what it understands.
    `calibration` (a calibration file): a factory that takes a `calibration` parameter gets it (a cascade
    calibrates each of its stages); the heuristic is wrapped so its confidence is mapped by the file's
    "heuristic" stage; any other verifier cannot use one, which is an error rather than a silent no-op.
    A file with tenant sections gives one verifier per section (`transforms.verify.tenants`).
    """
    if calibration is not None and calibration.tenants:
        default = make_verifier(name, calibration=calibration.section(None)[1], **config)
        own = {t: make_verifier(name, calibration=calibration.section(t)[1], **config) for t in calibration.tenants}
        return TenantVerifier(default, own)
    if name not in VERIFIERS:
        raise ValueError(f"unknown verifier {name!r}; choose one of: {', '.join(available_verifiers())}")
    factory = _resolve(VERIFIERS[name])
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        params = {}
    takes_calibration = "calibration" in params
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        config = {k: v for k, v in config.items() if k in params}
    if calibration is not None and takes_calibration:
        config["calibration"] = calibration
    verifier = factory(**config)
    if not isinstance(verifier, Verifier):
        raise TypeError(f"verifier factory for {name!r} returned {type(verifier).__name__}, not a Verifier")
    if calibration is None or takes_calibration:
        return verifier
    return _calibrated(name, verifier, calibration)


def _calibrated(name: str, verifier: Verifier, calibration: Calibration) -> Verifier:
    stage = calibration.stage(name) if name == "heuristic" else None
    if stage is None:
        have = ", ".join(sorted(calibration.stages)) or "none"
        raise ValueError(f"verifier {name!r} cannot use this calibration file (its stages: {have})")
    return CalibratedVerifier(verifier, stage, calibration_sha256=calibration.digest)
