"""roc_auc for ctr-dlrm-standard: ctr-dlrm's rank-based AUC, unchanged (numpy only).

from levelfield.reference.ctr_dlrm_standard.common.metric import score
score(logits, labels)      # float in [0, 1]
"""

from __future__ import annotations

from levelfield.reference.ctr_dlrm.common.metric import NAME, average_ranks, roc_auc, score  # noqa: F401
