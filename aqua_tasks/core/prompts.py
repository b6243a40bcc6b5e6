"""Prompt templates of the AQUA tasks: the released question as is, or with our CoT instruction."""

from __future__ import annotations

from collections.abc import Mapping

AUDIO_PLACEHOLDER = "<audio>"
# Our own wording (the paper does not publish its chain-of-thought prompt).
COT_INSTRUCTION = (
    "Think step by step before you answer. First decide whether the question can be answered "
    "from the audio at all, and whether any listed option matches what you hear. Then give "
    'your final choice on the last line, in the form "Answer: (letter)".'
)
PROMPT_TEMPLATES: dict[str, str] = {
    "plain": AUDIO_PLACEHOLDER + "\n{question}",
    "cot": AUDIO_PLACEHOLDER + "\n{question}\n" + COT_INSTRUCTION,
}


def check_prompt_style(style: str) -> str:
    """Validate a prompt style name."""
    if style not in PROMPT_TEMPLATES:
        raise ValueError(
            f"unknown prompt style {style!r}; expected one of {', '.join(PROMPT_TEMPLATES)}"
        )
    return style


def render_prompt(doc: Mapping) -> str:
    """The model input for a doc: audio placeholder, released question, any instruction."""
    return PROMPT_TEMPLATES[check_prompt_style(doc.get("prompt_style") or "plain")].format(
        question=doc["question"]
    )


def render_question(doc: Mapping) -> str:
    """`render_prompt` without its leading audio placeholder.

    lmms-eval's audio models put the clip before the text themselves; `aqua-audiolm` adds the
    placeholder back in front, so its prompt is the same under both harnesses.
    """
    return render_prompt(doc).removeprefix(AUDIO_PLACEHOLDER + "\n")
