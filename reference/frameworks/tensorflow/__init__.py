"""TensorFlow helpers shared by every task: Keras on its TensorFlow backend, the step loop, torch-matching
optimizers, devices and MultiWorkerMirroredStrategy, the tf.data input pipeline."""
