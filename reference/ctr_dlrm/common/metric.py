"""roc_auc for ctr-dlrm, numpy only: the trainer, the runner and the checker all score with this.

    from levelfield.reference.ctr_dlrm.common.metric import score
    score(logits, labels)      # float in [0, 1]: P(score of a random click > score of a random non-click)

Rank-based (Mann-Whitney U): sort all scores once, give tied scores the
average of the ranks they span, then

    AUC = (sum of the positives' ranks - P (P + 1) / 2) / (P * N)

for P positives and N negatives, so a positive/negative pair with equal
scores counts 1/2, as in sklearn's roc_auc_score. O(n log n), no scipy or
sklearn (the checker core has neither). Scores may be logits or
probabilities: AUC depends only on their order, and the sigmoid is monotonic.
Undefined when labels hold one class only, or when a score is NaN/inf (a
diverged model): both raise ValueError rather than return a made-up number.
"""

from __future__ import annotations

import numpy as np

NAME = "roc_auc"


def average_ranks(values: np.ndarray) -> np.ndarray:
    """1-based ranks of `values` (float64 [n]); tied values get the mean of the ranks they span."""
    _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    last = np.cumsum(counts).astype(np.float64)  # rank of the last member of each tie group
    return (last - (counts - 1) / 2.0)[inverse]


def roc_auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """Area under the ROC curve of `scores` [n] against 0/1 `labels` [n]."""
    scores = np.asarray(scores, dtype=np.float64)
    labels = np.asarray(labels)
    if scores.ndim != 1 or labels.shape != scores.shape:
        raise ValueError(f"expected scores [n] and labels [n], got {scores.shape} and {labels.shape}")
    if not np.all(np.isin(labels, (0, 1))):
        raise ValueError(f"labels must be 0 or 1, found {np.unique(labels)[:5].tolist()}")
    if not np.all(np.isfinite(scores)):
        raise ValueError(f"{int(np.sum(~np.isfinite(scores)))} scores are NaN or infinite")
    positive = labels == 1
    n_pos = int(positive.sum())
    n_neg = len(labels) - n_pos
    if n_pos == 0 or n_neg == 0:
        raise ValueError(f"ROC AUC is undefined with one class only ({n_pos} positives, {n_neg} negatives)")
    rank_sum = float(average_ranks(scores)[positive].sum())
    return (rank_sum - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg)


def score(outputs: np.ndarray, labels: np.ndarray) -> float:
    """roc_auc of logits [n] (or [n, 1]) against labels [n]."""
    outputs = np.asarray(outputs)
    if outputs.ndim == 2 and outputs.shape[1] == 1:
        outputs = outputs[:, 0]
    return roc_auc(outputs, labels)
