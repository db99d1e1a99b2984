"""ctr-dlrm-standard's data: ctr-dlrm's generator `ctr-synthetic-v1` at MLPerf DLRM's shapes (numpy only).

    from levelfield.reference.datasets import load_dataset
    arrays = load_dataset(task)   # train_dense (1048576, 13) float32, train_sparse (1048576, 26) int32, ...

The generator is ctr-dlrm's, unchanged (reference/ctr_dlrm/common/dataset.py
says how it plants per-category effects and pairwise interactions); only the
rules' params differ: 26 fields at the capped Criteo-1TB cardinalities, 2^20
training and 2^17 eval samples (about 3 s on a 2-core CPU).
"""

from __future__ import annotations

from levelfield.reference.ctr_dlrm.common.dataset import (  # noqa: F401 - this module's interface
    GENERATOR,
    PARAMS,
    click_probability,
    generate,
    generate_with_probabilities,
    planted_effects,
)
