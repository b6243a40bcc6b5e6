"""The one reader of saved output: lm-eval and lmms-eval logs, the authors' format, judge files."""
