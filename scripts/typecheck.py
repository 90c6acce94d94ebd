"""Type check with mypy: strict packages must be clean, the rest may only get better (a ratchet).

    python scripts/typecheck.py            # exit 1 when a strict module has an error or a module got worse
    python scripts/typecheck.py --update   # write today's counts as the new baseline (after fixing some)

Which packages are strict is `pyproject.toml`'s `[[tool.mypy.overrides]]` that set `disallow_untyped_defs`
(with the rest of `--strict`'s checks); their modules must have no error at all. Every other module may have at
most the errors that `scripts/typecheck_baseline.json` records for it, so new code is typed and old code gets
typed as it is touched.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tomllib
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASELINE = ROOT / "scripts" / "typecheck_baseline.json"
_ERROR = re.compile(r"^(?P<path>[\w/]+\.py):\d+: error:")


def _strict_prefixes() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    prefixes = []
    for override in config["tool"]["mypy"].get("overrides", []):
        if override.get("disallow_untyped_defs"):
            modules = override["module"]
            prefixes += [
                m.removesuffix(".*").replace(".", "/") for m in ([modules] if isinstance(modules, str) else modules)
            ]
    return prefixes


def _errors_per_module() -> tuple[Counter, str]:
    run = subprocess.run([sys.executable, "-m", "mypy", "--no-error-summary"], cwd=ROOT, capture_output=True, text=True)
    if run.returncode not in (0, 1):
        sys.exit(f"typecheck: mypy failed to run:\n{run.stderr or run.stdout}")
    counts = Counter(m["path"] for line in run.stdout.splitlines() if (m := _ERROR.match(line)))
    return counts, run.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--update", action="store_true", help="write today's error counts as the baseline")
    args = parser.parse_args()
    counts, output = _errors_per_module()
    strict = _strict_prefixes()
    in_strict = {path: n for path, n in counts.items() if any(path.startswith(p) for p in strict)}
    if args.update:
        kept = {path: n for path, n in sorted(counts.items()) if path not in in_strict}
        BASELINE.write_text(json.dumps(kept, indent=1) + "\n")
        print(f"typecheck: baseline written, {sum(kept.values())} errors in {len(kept)} modules")
        return 0
    baseline = json.loads(BASELINE.read_text()) if BASELINE.exists() else {}
    worse = {
        path: (n, baseline.get(path, 0))
        for path, n in counts.items()
        if path not in in_strict and n > baseline.get(path, 0)
    }
    failed = bool(in_strict) or bool(worse)
    if failed:
        shown = [line for line in output.splitlines() if any(line.startswith(p) for p in {*in_strict, *worse})]
        print("\n".join(shown))
        for path, n in sorted(in_strict.items()):
            print(f"typecheck: {path}: {n} errors in a strict package (must be 0)")
        for path, (n, allowed) in sorted(worse.items()):
            print(f"typecheck: {path}: {n} errors, the baseline allows {allowed}")
    outside = sum(n for path, n in counts.items() if path not in in_strict)
    better = sum(baseline.values()) - outside
    print(
        f"typecheck: {outside} errors outside strict packages "
        f"(baseline {sum(baseline.values())}{'; run with --update to lower it' if better > 0 and not failed else ''})"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
