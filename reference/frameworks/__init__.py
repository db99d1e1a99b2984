"""What every task's implementation in one framework shares: one folder per framework with the same
file names, the only modules outside the implementations that import a framework.

    steps.py        the step loop every implementation trains through (run_steps), determinism settings
    parallel.py     devices and several processes in that framework's own engine
    pipeline.py     the image task's input pipeline inside the clock
    optimizers.py   (TensorFlow, JAX) optimizers that match torch's update rules step for step
"""
