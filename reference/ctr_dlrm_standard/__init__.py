"""ctr-dlrm-standard: ctr-dlrm's code at MLPerf DLRM's shapes, with plain SGD (README.md).

Its own files are what differs: `common/model_spec.py` (the task's `DLRMSpec`, `SPEC`, and the fixed
recipe its code implements) and each framework's `implementation.py`, a subclass of ctr-dlrm's with that
spec and the optimizer. Every other part is ctr-dlrm's, served by the registry
(levelfield/ground/registry.py, `task_module`): the dataset generator, the inputs and the metric.
"""

REUSES = "ctr-dlrm"  # the task whose code this one reuses (registry.reused_task)
