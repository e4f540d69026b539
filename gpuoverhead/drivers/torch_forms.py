"""The PyTorch forms a case can name (its `implementation`): the words the torch driver and
the workloads' PyTorch builds share, kept apart from both so neither imports the other."""

EAGER, GRAPH, COMPILE = "torch-eager", "torch-cudagraph", "torch-compile"
#: The family name `--implementation` takes for all three.
FAMILY = "torch"
