"""Answer sentences that the tiny test cross-encoder (`tests.support.tiny_nli`) and the heuristic split between
them on the test evidence (`tests.support.audit_messages.EVIDENCE`), the model folder built for them, and a
calibration file with identity maps and chosen escalation bands::

    model_dir = write_answer_model(tmp_path / "nli")
    cal = write_identity_calibration(tmp_path / "cal.json", heuristic_band=(0.0, 0.85), model_band=(0.3, 0.8))

With `--cascade-band 0.5,0.85`: `COPIED` is the heuristic's (sure), `MODEL_SURE` and `NEGATED` the model's
(entailed; contradicted), `MODEL_UNSURE` a near tie the model hands on to the judge, `UNRELATED` shares few words.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.support.audit_messages import EVIDENCE
from tests.support.tiny_nli import write_tiny_model
from transforms.verify.calibration import Calibration, StageCalibration

__all__ = [
    "COPIED",
    "EXTRA_WORDS",
    "MODEL_SURE",
    "MODEL_UNSURE",
    "NEGATED",
    "UNRELATED",
    "write_answer_model",
    "write_identity_calibration",
]

COPIED = EVIDENCE[0]["content"]  # the heuristic is sure of it
MODEL_SURE = "Lab results showed potassium at 4.2 mmol/L on admission, reportedly unexpected by cardiologists."
NEGATED = "Lab results showed potassium was not at 4.2 mmol/L on admission."
MODEL_UNSURE = "Lab results showed potassium at 4.2 mmol/L, falling sharply overnight during rounds."
UNRELATED = "Lab results showed sodium falling overnight."
EXTRA_WORDS = ["sodium", "falling", "overnight", "sharply", "during", "rounds"]
"""The words of these sentences that the evidence lacks, so that the model knows them."""


def write_answer_model(folder: str | Path) -> str:
    """The tiny model knowing the evidence's words and `EXTRA_WORDS`, written into `folder`; returns it."""
    words = re.findall(r"\w+", " ".join(e["content"] for e in EVIDENCE).lower()) + EXTRA_WORDS
    return write_tiny_model(folder, words)


def write_identity_calibration(
    path: str | Path, heuristic_band: tuple[float, float], model_band: tuple[float, float]
) -> str:
    """A calibration file whose maps leave confidences as they are, escalating each stage on its band."""
    identity = {"knots_x": (0.0, 1.0), "knots_y": (0.0, 1.0)}
    stages = {
        "heuristic": StageCalibration(**identity, escalate=heuristic_band),
        "model": StageCalibration(**identity, escalate=model_band),
    }
    Calibration(stages, target_accuracy=0.9).save(str(path))
    return str(path)
