"""The GPU side: adapters and implementations, kernels and workloads, the wait, layers, methods."""
