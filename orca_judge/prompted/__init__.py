"""Prompted LLM judges beside ORCA: prompt, reply reading, chat backends, the judge, the
harness-neutral half of `metric: llm_judge`, and the comparison of judges on human ratings."""
