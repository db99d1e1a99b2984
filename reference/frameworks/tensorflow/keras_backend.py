"""Keras on its TensorFlow backend, for the TensorFlow reference implementations.

    from levelfield.reference.frameworks.tensorflow.keras_backend import keras

Keras 3 picks its backend from $KERAS_BACKEND when first imported; a user
with KERAS_BACKEND=jax set for other work would otherwise run the
"TensorFlow" implementations on JAX. Importing Keras through this module sets
the default before the first import and refuses any other backend.

It also drops TensorFlow's "triggered tf.function retracing" warning: every
implementation traces one program per padded batch size (at most 11,
reference/batching.py), all during the warm-up, and TensorFlow warns after 5
traces however bounded they are, so the warning only buries real output.
"""

from __future__ import annotations

import logging
import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")  # must precede the first `import keras`
# TensorFlow's C++ INFO lines ("XLA service ... initialized", "Compiled cluster using XLA") on
# every start bury the progress output; warnings and errors still show. A user's setting wins.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")

import keras

if keras.backend.backend() != "tensorflow":
    raise ImportError(
        f"the TensorFlow reference needs Keras' tensorflow backend; KERAS_BACKEND is "
        f"{keras.backend.backend()!r} (unset it or set KERAS_BACKEND=tensorflow)"
    )


def _not_retracing(record: logging.LogRecord) -> bool:
    return "triggered tf.function retracing" not in record.getMessage()


logging.getLogger("tensorflow").addFilter(_not_retracing)  # the logger tf.get_logger() returns

__all__ = ["keras"]
