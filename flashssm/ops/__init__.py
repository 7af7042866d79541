"""The operations: one folder each, the plain-PyTorch reference beside the kernel."""
