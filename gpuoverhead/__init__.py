"""gpuoverhead: measure what one GPU dispatch really costs.

The package is the pipeline, one folder a stage: `suite` (YAML → cases) → `gpu` and
`pytorch` (what is dispatched and how it is timed) → `run` (worker processes sampling
rounds) → `analysis` (samples → estimates) → `results` (the files of a run) → `present`
(console, reports, comparisons). `cli` parses arguments and delegates.
"""

__version__ = "0.1.0"
