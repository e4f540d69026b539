"""Analysis: raw samples → series per methodology → estimates over processes; `stats` is pure."""
