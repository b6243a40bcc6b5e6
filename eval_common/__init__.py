"""What both packages need and neither owns: CLI conventions, reading input files, device and
dtype choice, JSON output.

Imports neither `aqua_tasks` nor `orca_judge` (a test reads the imports), so the judge stays a
library of its own and the benchmark may use it.
"""
