"""How the implementations and encodings of one piece of work rank against each other."""

from __future__ import annotations

import numpy as np
import pandas as pd

from gpuoverhead.analysis.series import FUSED_NS
from gpuoverhead.metrics import HEADLINE


def with_ratio_to_fastest(summary: pd.DataFrame) -> pd.DataFrame:
    """Adds `ratio_to_fastest`: per benchmark, elements, methodology and metric, each
    wrapper-layer estimate over all processes divided by the smallest among implementations
    and encodings (1.0 is the fastest way measured to do that work). Estimates under
    FUSED_NS (a fused chain's per-dispatch slope) get none."""
    if summary.empty:
        return summary
    out = summary.copy()
    # A fused chain's slope (torch-compile) is ~0: it has no ratio, and is no denominator.
    mask = out["metric"].isin(HEADLINE) & (out["layer"] == "wrapper") & out["process"].isna() \
        & (out["methodology"] != "breakdown") & (out["value"] > FUSED_NS)
    best = out[mask].groupby(["benchmark", "elements", "methodology", "metric"])["value"]
    out["ratio_to_fastest"] = np.nan
    out.loc[mask, "ratio_to_fastest"] = out.loc[mask, "value"] / best.transform("min")
    return out
