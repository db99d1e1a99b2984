"""ctr-dlrm-standard in JAX: ctr-dlrm's implementation at MLPerf DLRM's shapes, with plain SGD.

Called as every implementation is (reference/interface.py); predict answers float32 logits [N].

Everything but the shapes and the optimizer is ctr-dlrm's (reference/ctr_dlrm/
jax/implementation.py): a TrainState, one jax.jit'd step with the state
donated, predict in padded power-of-two chunks. The optimizer is optax.sgd
without momentum (MLPerf DLRM v1's reference recipe) under inject_hyperparams,
so the step's LR is an input of the compiled step. JAX's gradient of a gather
is a dense scatter-add into a zero table, so the update touches every row
(XLA may fuse it in place with the donated state); the numbers are those of
the other frameworks' sparse updates.

Several processes (`levelfield train --nproc N`): JAX's data parallelism (a
sharded batch in one jitted step; reference/frameworks/jax/parallel.py), as
ctr-dlrm's. The gradient being dense, XLA's all-reduce carries every table
whole each step (1.07 GiB), where PyTorch and TensorFlow send the looked-up
rows only: the idiomatic sparse form in JAX (tables sharded over the devices
with a lookup by all-to-all) is model parallelism, not implemented here.
"""

from __future__ import annotations

import optax

from levelfield.reference.ctr_dlrm.jax.implementation import Implementation as SmallImplementation
from levelfield.reference.ctr_dlrm_standard.common.model_spec import IMPLEMENTS, SPEC
from levelfield.reference.interface import Recipe


class Implementation(SmallImplementation):
    task_id = "ctr-dlrm-standard"
    # bf16 too, for inference (rules 1.2): the Flax modules' dtype, in the tiny task's model.
    precisions = ("fp32", "bf16")
    implements = IMPLEMENTS
    multiprocess_devices = ("cpu", "cuda")  # dense gradients: every table all-reduced each step (see above)
    spec = SPEC

    def _build_optimizer(self, recipe: Recipe) -> optax.GradientTransformation:
        # momentum=None: optax.sgd keeps no buffer, p -= lr * g.
        return optax.inject_hyperparams(optax.sgd)(learning_rate=recipe.learning_rate, momentum=None)

    def optimizer_hyperparameters(self, hp: dict[str, float]) -> dict:
        return {"optimizer": "sgd", "momentum": 0.0, "nesterov": False}  # optax.sgd(momentum=None): no buffer
