"""PTR test decisions of one release call, computed once and shared by the jobs that make it.

The utility job and every attack job of a posthoc-ptr setting release the same test queries
with the same release stream (bench.run.kinds.reconstruction: one stream per job seed), so they ask
the same
certified decisions (mechanisms/posthoc/ptr.py). Those decisions are a deterministic function
of the fitted obfuscator, the PTR configuration, the region certificate, the embeddings and
the drawn test noise, for certifiers that start without history: one job computes them and
the others load them from the artifact cache, with the same answers bit for bit. The
certifiers' final states are stored beside them, so a later release in the same job goes on
exactly as if the job had computed them itself.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import astuple, dataclass
from typing import Any

import numpy as np

from mechanisms.posthoc.ptr import Certifier, QueryDecision, ptr_test


@dataclass(frozen=True)
class CertifierState:
    """What a Certifier has learnt about its embedding: the monotone decided range, whether
    every decision was certified, the MILPs it ran and the incumbents' witnesses."""

    true_up_to: int
    false_from: int
    exact: bool
    milps: int
    witnesses: tuple[tuple[float, float], ...]

    @classmethod
    def of(cls, cert: Certifier) -> CertifierState:
        return cls(cert.true_up_to, cert.false_from, cert.exact, cert.milps, tuple(cert._witnesses))

    def restore(self, cert: Certifier) -> Certifier:
        """`cert` (fresh) brought to this state; its sampled norms are recomputed on demand
        (a fixed-seed function of the embedding, so the same as the computing job's)."""
        cert.true_up_to, cert.false_from = self.true_up_to, self.false_from
        cert.exact, cert.milps = self.exact, self.milps
        cert._witnesses = list(self.witnesses)
        return cert


def queries_digest(rows: np.ndarray, noise: list[float]) -> str:
    """sha256 over the embeddings' and the test noise's raw bytes: the queries of one call."""
    h = hashlib.sha256()
    h.update(f"{rows.shape}{rows.dtype}".encode())
    h.update(np.ascontiguousarray(rows).tobytes())
    h.update(np.asarray(noise, dtype=np.float64).tobytes())
    return h.hexdigest()


def run_query_tests(
    rows: np.ndarray, noise: list[float], certifier_of: Callable[[np.ndarray], Certifier]
) -> list[QueryDecision]:
    """Alg. 1's test for each query (row i with test noise noise[i]), in order, each asked of
    the certifier `certifier_of` keeps for its embedding."""
    return [ptr_test(certifier_of(row), z) for row, z in zip(rows, noise, strict=True)]


def decide_queries(
    rows: np.ndarray, noise: list[float], new_certifier: Callable[[np.ndarray], Certifier]
) -> dict[str, Any]:
    """`run_query_tests` with one certifier per distinct embedding started fresh; the decisions
    and the certifiers' final states."""
    certs: dict[bytes, Certifier] = {}

    def certifier_of(row: np.ndarray) -> Certifier:
        key = row.tobytes()
        if key not in certs:
            certs[key] = new_certifier(row)
        return certs[key]

    decisions = run_query_tests(rows, noise, certifier_of)
    return {
        "decisions": [astuple(d) for d in decisions],
        "states": {key: CertifierState.of(cert) for key, cert in certs.items()},
    }


def as_decisions(stored: dict[str, Any]) -> list[QueryDecision]:
    """The QueryDecisions of a `decide_queries` result (stored as plain tuples)."""
    return [QueryDecision(*fields) for fields in stored["decisions"]]
