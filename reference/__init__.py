"""levelfield.reference: the task set's code (installed from the repository folder `reference/`).

    datasets.py      load / verify any task's dataset (numpy only)
    interface.py     the Implementation class framework code subclasses
    schedule.py      data order and learning rates, shared by every framework
    weights.py       the framework-neutral .npz weight file
    batching.py      the predict shape policy (chunks padded to powers of two)
    keras_backend.py Keras imported on its TensorFlow backend
    jax_steps.py, tf_steps.py, torch_steps.py   each framework's one train_steps loop
    jax_optimizers.py, tf_optimizers.py         the optimizers that update exactly as torch.optim's
    torch_parallel.py  the PyTorch implementations' devices, DDP wrapping and process group
    torch_pipeline.py, tf_pipeline.py, jax_pipeline.py   image-resnet50-standard's input pipelines (timed)
    synthetic.py     bit-identical random primitives for the generated datasets
    null_model.py    framework `none`: the Implementation interface at a chosen cost, no framework
    harness/         the trainer and the LoadGen runner; no framework imports
    <task>/common/   framework-neutral task code: dataset, inputs, metric, model spec
    <task>/<framework>/  model.py, weights.py, implementation.py
    <task>/__init__.py   REUSES: the task whose code a standard task reuses; its parts fill what the
                     task's own folders lack (the registry's task_module; no file only re-exports)

Only `datasets.py`, `synthetic.py` and `<task>/common/` may be imported by the
checker: they are numpy only. The registry that finds implementations and
common/ modules is on the ground floor (`levelfield/ground/registry.py`).
"""
