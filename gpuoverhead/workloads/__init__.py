"""Workloads: one module each (limits, numpy reference, WebGPU and PyTorch builds).

`registry` lists them.
"""
