"""levelfield.reference: the task set's code (installed from the repository folder `reference/`).

    datasets.py      load / verify any task's dataset (numpy only)
    interface.py     the Implementation class framework code subclasses
    schedule.py      data order and learning rates, shared by every framework
    weights.py       the framework-neutral .npz weight file
    batching.py      the predict shape policy (chunks padded to powers of two)
    frameworks/<framework>/   what every task shares in one framework: steps.py (the one
                     run_steps loop), parallel.py (devices, several processes), pipeline.py
                     (image-resnet50-standard's timed input pipeline), optimizers.py (TensorFlow,
                     JAX: updates exactly as torch.optim's), keras_backend.py (TensorFlow)
    synthetic.py     bit-identical random primitives for the generated datasets
    null_model.py    framework `none`: the Implementation interface at a chosen cost, no framework
    <task>/common/   framework-neutral task code: dataset, inputs, metric, model spec
    <task>/<framework>/  model.py, weights.py, implementation.py
    <task>/__init__.py   REUSES: the task whose code a standard task reuses; its parts fill what the
                     task's own folders lack (the registry's task_module; no file only re-exports)

Only `datasets.py`, `synthetic.py` and `<task>/common/` may be imported by the
checker: they are numpy only. The registry that finds implementations and
common/ modules is on the ground floor (`levelfield/ground/registry.py`); the trainer and the
LoadGen runner that drive the implementations are the harness, `levelfield/harness/`.
"""
