"""PyTorch baselines (eager, CUDA graph, torch.compile) and their fusion twins, as cases."""
