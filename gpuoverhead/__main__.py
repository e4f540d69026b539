"""`python -m gpuoverhead` behaves like the `gpuoverhead` console script."""

from gpuoverhead.cli import main

main()
