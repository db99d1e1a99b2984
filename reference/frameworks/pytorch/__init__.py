"""PyTorch helpers shared by every task: the step loop, devices and DDP, the input pipeline."""
