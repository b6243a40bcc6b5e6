"""The one AQUA task definition, harness-neutral: docs, prompt, audio, scoring, config steps.

The lm-eval and lmms-eval adapters (`aqua_tasks.lm_eval.task`, `aqua_tasks.lmms_eval.task`)
wrap it; it imports neither harness nor adapter.
"""
