"""`aqua build`: turn a multiple-choice audio benchmark into AQUA's four question types.

Pure where it can be: reading sources, the four types' rules, the IASD category bank and the
template IAQD generator need no network, torch or harness; the `openai` generator goes through
the project's HTTP client and the `hf` one imports transformers only when used.
"""
