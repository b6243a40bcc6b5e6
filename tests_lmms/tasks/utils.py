"""Functions of the lmms-eval test tasks."""


def no_media(doc):
    """Text-only items: no audio or images."""
    return []


def reply_words(doc, results):
    """The task's own per-doc scoring: words in the reply."""
    return {"reply_words": float(len(str(results[0]).split()))}
