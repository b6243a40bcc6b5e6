"""The one AQUA task definition, harness-neutral: docs, prompt, audio, scoring, config steps.

The lm-eval and lmms-eval adapters (`eval_plugins.lm_eval.aqua.task`,
`eval_plugins.lmms_eval.aqua.task`) wrap it; it imports neither harness nor adapter.
"""
