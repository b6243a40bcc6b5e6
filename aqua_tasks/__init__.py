"""AQUA-Bench tasks for lm-evaluation-harness: unanswerable audio questions."""
