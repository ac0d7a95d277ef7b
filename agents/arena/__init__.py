"""Playing policies and bots against each other: seat-rotated tables, in-run evaluation, ratings, significance tests,
tournaments."""
