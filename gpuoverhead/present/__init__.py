"""For people: console grids and progress, per-vendor reports, plots, comparisons, one formatter."""
