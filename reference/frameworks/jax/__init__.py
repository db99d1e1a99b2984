"""JAX helpers shared by every task: the step loop, torch-matching Optax optimizers, devices and
jax.distributed, the numpy prefetching input pipeline."""
