"""The audit steps between VerifySentences and routing, in the order every way of auditing runs them.

    for label, stage, step in audit_steps(threshold=0.7):
        audited = step(audited)

The pipeline applies each as a labelled stage (`ApplyAuditStep`); the in-process auditor of `serve` and `gate`
and the scenario lakes call them in turn. One list, so that all of them audit alike.
"""

from __future__ import annotations

from transforms.attribution.citations import AuditCitationsStep
from transforms.attribution.claims import AuditClaimsStep
from transforms.audit.stages import AuditStep

__all__ = ["audit_steps"]


def audit_steps(threshold: float) -> list[tuple[str, str, AuditStep]]:
    """The audit steps: `(label, stage, step)`, in order; `threshold` is the claims' confidence threshold.

    A stage plugs in by adding its plain function here, e.g. `("AuditCitations", "citations", audit_citations)`.
    Citations and claims are judged by the offline heuristic whatever `--verifier` is: deterministic, and a
    judge-backed sentence audit does not pay one LLM call per citation and per claim.
    """
    return [
        ("AuditCitations", "citations", AuditCitationsStep("heuristic")),
        ("CheckClaimAttribution", "claims", AuditClaimsStep("heuristic", threshold=threshold)),
    ]
