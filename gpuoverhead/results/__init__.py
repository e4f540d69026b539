"""Result sets: the schema, the tables built from estimates, and writing and reading run folders."""
