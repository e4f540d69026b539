"""gpuoverhead: measure what one GPU dispatch really costs.

The package is a pipeline that flows one way: a suite (YAML) expands into cases, the runner
samples them on one adapter, estimates are derived from the samples, writers store both, and
the console prints a summary. Each step lives in its own module.
"""

__version__ = "0.1.0"

#: Version of the result files' layout (samples, summary, run.json). Bump on any change
#: that a reader of older result sets would need to know about.
SCHEMA_VERSION = 1
