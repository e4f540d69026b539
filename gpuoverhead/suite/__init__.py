"""Suites: YAML source with line numbers → schema and checks → the expanded groups of cases."""
