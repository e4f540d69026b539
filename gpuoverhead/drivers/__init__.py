"""Drivers: one module per implementation family (WebGPU, PyTorch, the browser).

The registry (`registry.py`) picks them; nothing outside this folder names an implementation.
"""
