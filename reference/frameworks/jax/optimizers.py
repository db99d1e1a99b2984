"""Optax optimizers that update exactly as torch.optim's, for the JAX implementations.

    from levelfield.reference.frameworks.jax.optimizers import adam, adamw, sgd_with_l2
    tx = optax.inject_hyperparams(sgd_with_l2, static_args=("nesterov",))(
        learning_rate=0.1, momentum=0.9, weight_decay=5e-4, nesterov=False)     # fmnist-resnet
    tx = adamw(1e-3, 0.9, 0.999, 1e-8, 0.01)                                     # seq-transformer
    tx = adam(1e-3, 0.9, 0.999, 1e-8)                                            # ctr-dlrm

PyTorch's optimizers are the definition the other frameworks match (each
task's README says which). Optax's adam and adamw already are torch's update;
torch's SGD needs its coupled L2 term chained in front of optax.sgd. Each is
under `optax.inject_hyperparams`, so the train step writes the step's learning
rate into the optimizer state and a new rate never recompiles.
"""

from __future__ import annotations

import functools

import optax


def sgd_with_l2(
    learning_rate: float, momentum: float, weight_decay: float, nesterov: bool = False
) -> optax.GradientTransformation:
    """torch.optim.SGD's update (coupled L2 weight decay, lr outside the momentum buffer)."""
    return optax.chain(
        optax.add_decayed_weights(weight_decay), optax.sgd(learning_rate, momentum=momentum, nesterov=nesterov)
    )


@functools.cache
def adamw(learning_rate: float, b1: float, b2: float, eps: float, weight_decay: float) -> optax.GradientTransformation:
    """optax.adamw with injectable hyperparameters; the same object for the same configuration."""
    # No mask: decay every parameter, as torch.optim.AdamW does for its one param group.
    return optax.inject_hyperparams(optax.adamw)(
        learning_rate=learning_rate, b1=b1, b2=b2, eps=eps, weight_decay=weight_decay
    )


def adam(learning_rate: float, b1: float, b2: float, eps: float) -> optax.GradientTransformation:
    """optax.adam with injectable hyperparameters: eps added to sqrt of the bias-corrected v, as torch.optim.Adam.

    No weight decay: torch's Adam decay is a coupled L2 term, and the rules fix it at 0 for ctr-dlrm.
    """
    return optax.inject_hyperparams(optax.adam)(learning_rate=learning_rate, b1=b1, b2=b2, eps=eps)
