"""Per-tenant calibration at run time: one verifier per section of the calibration file, picked by tenant.

A calibration file with tenant sections (`transforms.verify.calibration`) calibrates each tenant's verdicts by
its own section, fitted on its own reviewers' labels. `make_verifier` builds one verifier per section and
wraps them in a `TenantVerifier`; the audit asks it for the tenant's verifier before verifying a response::

    verifier, section = verifier_for(make_verifier("heuristic", calibration=cal), tenant="acme")
    result = verifier.verify(sentences, evidence)        # `section` goes to responses.calibration_section

`verify()` itself is the default section's, so code that knows no tenant still gets calibrated verdicts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from schemas import EvidencePassage
from transforms.verify.base import VerificationResult, Verifier
from transforms.verify.calibration import DEFAULT_SECTION

__all__ = ["TenantVerifier", "verifier_for"]


class TenantVerifier(Verifier):
    """The verifiers of a calibration file's sections: the default's, and one per tenant that has its own."""

    def __init__(self, default: Verifier, tenants: Mapping[str, Verifier]):
        self._default, self._tenants = default, dict(tenants)
        self.name, self.version = default.name, default.version
        self.calibration_sha256 = getattr(default, "calibration_sha256", None)

    def for_tenant(self, tenant: str | None) -> tuple[Verifier, str]:
        """The verifier that decides `tenant`'s responses, and the name of its section."""
        if tenant is None or tenant not in self._tenants:
            return self._default, DEFAULT_SECTION
        return self._tenants[tenant], tenant

    def verify(self, sentences: Sequence[str], evidence: Sequence[EvidencePassage]) -> VerificationResult:
        return self._default.verify(sentences, evidence)


def verifier_for(verifier: Verifier, tenant: str | None) -> tuple[Verifier, str | None]:
    """The verifier for `tenant`'s responses and its calibration section (None when uncalibrated)."""
    if isinstance(verifier, TenantVerifier):
        return verifier.for_tenant(tenant)
    return verifier, DEFAULT_SECTION if getattr(verifier, "calibration_sha256", None) else None
