"""Utility metrics on the server-side scores a mechanism's `predict` returns."""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.metrics import roc_auc_score


def _to_numpy(a: Any, dtype: Any) -> np.ndarray:
    if hasattr(a, "detach"):
        a = a.detach().cpu().numpy()
    return np.asarray(a, dtype=dtype)


def _scores_labels(scores: Any, labels: Any) -> tuple[np.ndarray, np.ndarray]:
    """Scores as (N, C) float64 and labels as (N,) int64, with matching N, finite scores."""
    s = _to_numpy(scores, np.float64)
    y = _to_numpy(labels, np.int64)
    if s.ndim == 1:
        s = s[:, None]
    if s.ndim != 2 or y.ndim != 1 or len(s) != len(y) or len(y) == 0:
        raise ValueError(f"expected scores (N, C) and labels (N,), got {s.shape} and {y.shape}")
    if not np.isfinite(s).all():
        raise ValueError("scores must be finite (found NaN or inf)")
    return s, y


def accuracy(scores: Any, labels: Any) -> np.ndarray:
    """Per-sample 1.0 where the arg-max class equals the label, else 0.0."""
    s, y = _scores_labels(scores, labels)
    if s.shape[1] < 2:
        raise ValueError("accuracy needs scores for at least 2 classes, got 1 column")
    return (s.argmax(axis=1) == y).astype(np.float64)


def auc(scores: Any, labels: Any) -> float:
    """ROC AUC. Binary: column 1 of (N, 2) scores, or the single column of (N,) / (N, 1).

    Multi-class: macro average of one-vs-rest AUCs over the classes present in `labels`,
    each computed on that class's raw score column (no softmax needed, unlike sklearn's
    multi_class="ovr", which demands probabilities).
    """
    s, y = _scores_labels(scores, labels)
    present = np.unique(y)
    if len(present) < 2:
        raise ValueError("auc needs at least two classes among the labels")
    if s.shape[1] <= 2:
        if not set(present.tolist()) <= {0, 1}:
            raise ValueError(f"binary auc needs labels in {{0, 1}}, got {present.tolist()}")
        return float(roc_auc_score(y, s[:, -1]))
    if present.max() >= s.shape[1] or present.min() < 0:
        raise ValueError(f"labels {present.tolist()} out of range for {s.shape[1]} classes")
    return float(np.mean([roc_auc_score(y == c, s[:, c]) for c in present]))


__all__ = ["accuracy", "auc"]
