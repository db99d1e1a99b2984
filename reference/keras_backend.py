"""Keras on its TensorFlow backend, for the TensorFlow reference implementations.

    from levelfield.reference.keras_backend import keras

Keras 3 picks its backend from $KERAS_BACKEND when first imported; a user
with KERAS_BACKEND=jax set for other work would otherwise run the
"TensorFlow" implementations on JAX. Importing Keras through this module sets
the default before the first import and refuses any other backend.
"""

from __future__ import annotations

import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")  # must precede the first `import keras`

import keras  # noqa: E402

if keras.backend.backend() != "tensorflow":
    raise ImportError(f"the TensorFlow reference needs Keras' tensorflow backend; KERAS_BACKEND is "
                      f"{keras.backend.backend()!r} (unset it or set KERAS_BACKEND=tensorflow)")

__all__ = ["keras"]
