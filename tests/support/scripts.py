"""Load one of the repository's `scripts/*.py` as a module (they are command-line tools, not a package)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]

__all__ = ["ROOT", "load_script"]


def load_script(name: str) -> ModuleType:
    """The module of `scripts/<name>.py`, loaded once per process."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
