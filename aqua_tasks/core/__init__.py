"""The benchmark itself, pure: data, docs, prompts, answer extraction, scoring, pooling, statistics.

Imports no harness and no torch (a test reads the imports).
"""
