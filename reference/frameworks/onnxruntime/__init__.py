"""What every ONNX Runtime implementation shares: the graph builder, one builder per model family (the
residual CNNs, the pre-norm transformer encoder, DLRM), the model file and its cache, the session."""
