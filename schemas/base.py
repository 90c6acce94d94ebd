"""The strict base model and the constrained types every schema module shares."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

__all__ = ["Confidence", "NonEmptyStr", "StrictModel", "utc_now"]


class StrictModel(BaseModel):
    """Base of every groundwatch model: unknown fields are errors, values are checked on assignment."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, frozen=False, defer_build=True)


Confidence = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]
"""A probability-like score in [0, 1]; NaN and infinities are rejected."""

NonEmptyStr = Annotated[str, StringConstraints(min_length=1, strip_whitespace=False)]
"""A string with at least one character."""


def utc_now() -> datetime:
    """Now, as an aware UTC datetime: the default clock of every stage that stamps a time (tests pass their own)."""
    return datetime.now(UTC)
