"""image-resnet50-standard: ResNet-50 v1.5 through fmnist-resnet's code, fed by an input pipeline (README.md).

Its own files are what differs: every part of `common/` (the image generator, the augmentation, the
inputs, the metric, the `ResNetSpec`), each framework's ResNet-50 (`model.py`) and its weight mapping
(`weights.py`), and each `implementation.py`, a subclass of fmnist-resnet's that changes the network and
the loss through its hooks and feeds the step from an input pipeline.
"""

REUSES = "fmnist-resnet"  # the task whose code this one reuses (registry.reused_task)
