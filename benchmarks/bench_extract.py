"""Throughput of the answer extractors and where they disagree, on a realistic mix of replies.

Replies are built from the released AQUA-Bench items: short letters, option texts, free-text
rejections, answers first with a justification after, non-answers (errors, refusals, chatter)
and long reasoning replies that weigh several options before answering. Every extractor
(`aqua-rules`, the default; `official`; `mmau-string-match`) reads the same replies in the
same run; the table counts, per reply kind, the replies on which two extractors choose
differently (an unparsed reply chooses nothing).

The mix also holds the replies reasoning and multilingual models write: 4 000+ character
reasoning replies (`long-reasoning`), `<think>` blocks finished and cut off (`think`),
structured answers (`structured`), non-English replies (`multilingual`) and paraphrased
rejections (`paraphrase`), and since 3.1 localised IASD option words (`iasd-words`), CJK
answers stated before their frame (`cjk-order`), short replies that only lean (`lean`) and
homonyms whose other sense is not an option (`homonym`). The cost of `aqua-rules` relative
to each of the other two, timed on the same replies in the same run, is the figure to compare
between machines.

    python benchmarks/bench_extract.py --n 20000 --json
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import sys
import time
from collections.abc import Callable
from importlib import resources
from pathlib import Path

from aqua_tasks.core.data import TRACKS, VARIANT_SUFFIXES, AquaItem, load_items
from aqua_tasks.core.extract import (
    Extraction,
    extract_aqua_rules,
    extract_official,
    extract_string_match,
)
from aqua_tasks.errors import AquaDataError

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA_DIR = REPO.parent / "shared" / "data" / "aqua-bench"
LEXICON = json.loads(
    resources.files("aqua_tasks.core.extract").joinpath("lexicon.json").read_text("utf-8")
)
# Reasoning replies written by models such as Qwen3-Omni-Thinking: long, and weighing options.
THINKING = (
    "Okay, let me analyze the audio. First I will listen for the onset and the pitch contour. ",
    "The spectrum shows energy concentrated in the lower bands, with a few harmonics above. ",
    "I should compare the timbre against what each option would typically sound like. ",
    "There is some reverberation, so the recording was probably made indoors or near walls. ",
)
MULTILINGUAL = ("正确答案：{L}", "我选 {l}", "答えは({l})です。", "답: ({l})",
                "Elijo la opción {l}", "Richtige Antwort ist ({l})",
                "La bonne réponse est ({l}).")  # fmt: skip
PARAPHRASES = ("What I hear is not among these.", "Every one of the choices is incorrect.",
               "选项都不对", "ninguna opción es correcta", "nichts davon stimmt")  # fmt: skip
FILLER = (
    "The recording is about five seconds long with some background noise. ",
    "The timbre is bright and the onset is sharp, with a clear harmonic structure. ",
    "There is a repeated pattern at a steady rhythm. ",
    "The question asks about something the audio may not convey. ",
)
# Each language's frame for a localised option word; the CJK ones put the frame last.
WORD_FRAMES = {"zh": "答案是{w}。", "ja": "{w}が正解です。", "ko": "{w}이 정답입니다.",
               "es": "La respuesta es {w}.", "de": "Die Antwort ist {w}.",
               "fr": "La réponse est {w}."}  # fmt: skip
CJK_ORDER = ("({l})が正解です。", "({l})번이 맞습니다.", "{L}是正确答案。", "({l})를 선택합니다.",
             "赤は正解ではありません。({l})が正解です。")  # fmt: skip
LEANS = ("It might be {t}, the sound is faint.", "Maybe {t}.", "{t}, perhaps.",
         "It could be ({l}), the clip is short.")  # fmt: skip
HOMONYMS = ("答えはラッパです。", "答案是喇叭。", "나팔이 정답입니다.", "Die Antwort ist Tröte.")
NON_ANSWERS = (
    "Error: rate limited",
    "Sorry, I cannot process audio.",
    "I don't know.",
    "lol",
    "As a text-based AI, I am unable to listen to audio files.",
)


def _letter(i: int) -> str:
    return chr(ord("a") + i)


def make_reply(item: AquaItem, rng: random.Random) -> tuple[str, str]:
    """One reply of a randomly drawn kind, as a model might write it about this item."""
    i = rng.randrange(len(item.options))
    text, letter = item.options[i], _letter(i)
    kinds = ["letter", "text", "rejection", "answer-first", "non-answer", "reasoning",
             "long-reasoning", "think", "structured", "multilingual", "paraphrase",
             "iasd-words", "cjk-order", "lean", "homonym"]  # fmt: skip
    kind = rng.choices(kinds, weights=[3, 3, 1, 2, 1, 3, 3, 2, 1, 1, 1, 1, 1, 1, 1])[0]
    if kind == "letter":
        reply = rng.choice([f"({letter})", letter.upper(), f"Answer: {letter.upper()}",
                            f"**({letter.upper()})**", f"({letter}) {text}"])  # fmt: skip
    elif kind == "text":
        reply = rng.choice([text, text.lower(), f"It is {text.lower()}.", f"The answer is {text}."])
    elif kind == "rejection":
        reply = rng.choice(["None of the above.", "It cannot be determined from the audio.",
                            "It is not possible to tell from the recording."])  # fmt: skip
    elif kind == "answer-first":
        # The option first, then a justification that names other options.
        others = [o for j, o in enumerate(item.options) if j != i][:3]
        reply = rng.choice(
            [
                f"({letter}) {text}\n\nThe clip rules out the other options "
                f"({', '.join(o.lower() for o in others)}).",
                f"**{text}**\n\nIt is not {others[0].lower()} or {others[1].lower()}.",
                f"{letter.upper()}. {text} — {others[0].lower()} would sound different.",
            ]
        )
    elif kind == "non-answer":
        reply = rng.choice(NON_ANSWERS)
    elif kind == "reasoning":
        # Reasoning replies weigh other options before committing, as chain-of-thought does.
        others = rng.sample(range(len(item.options)), k=min(3, len(item.options)))
        steps = [f"({_letter(j)}) {item.options[j]} would sound different. " for j in others]
        body = "".join(rng.choice(FILLER) for _ in range(rng.randint(5, 40)))
        ending = rng.choice([f"So the answer is ({letter}) {text}.", f"Final answer: **{text}**",
                             f"Therefore, ({letter})."])  # fmt: skip
        reply = body + "".join(steps) + ending
    else:
        reply = _modern_reply(kind, item, i, rng)
    return kind, reply


def _modern_reply(kind: str, item: AquaItem, i: int, rng: random.Random) -> str:
    """A reply in the styles of 2026 reasoning and multilingual models."""
    text, letter = item.options[i], _letter(i)
    others = [f"({_letter(j)}) {item.options[j]}" for j in range(len(item.options)) if j != i][:3]
    weighing = "".join(f"Could it be {o}? That would sound different. " for o in others)
    if kind == "long-reasoning":
        body = "".join(rng.choice(THINKING) for _ in range(rng.randint(50, 80)))
        return body + weighing + rng.choice([f"So the answer is ({letter}) {text}.",
                                             f"Final answer: ({letter})"])  # fmt: skip
    if kind == "think":
        body = "".join(rng.choice(THINKING) for _ in range(rng.randint(5, 40))) + weighing
        # Finished, cut off inside the thinking, and cut off in the answer frame.
        lean = f"It sounds most like ({letter}) {text}, though the"
        return rng.choice([f"<think>{body}</think>\n\n({letter}) {text}", f"<think>{body}{lean}",
                           f"<think>{body}</think>\nFinal answer: ("])  # fmt: skip
    if kind == "structured":
        return rng.choice([f"$\\boxed{{{letter}}}$",
                           json.dumps({"choice": letter, "explanation": weighing}),
                           f"| option | chosen |\n|---|---|\n| ({letter}) {text} | ✓ |"],
                          )  # fmt: skip
    if kind == "multilingual":
        return rng.choice(MULTILINGUAL).format(l=letter, L=letter.upper())
    if kind == "paraphrase":
        return rng.choice(PARAPHRASES)
    return _reply_3_1(kind, item, i, rng)


def _reply_3_1(kind: str, item: AquaItem, i: int, rng: random.Random) -> str:
    """The reply kinds 3.1 reads: localised option words, CJK word order, leans, homonyms."""
    text, letter = item.options[i], _letter(i)
    if kind == "iasd-words":
        lang = rng.choice(list(WORD_FRAMES))
        table = LEXICON[lang]
        words = [w for key, ws in [*table["vocabulary"].items(), *table["options"].items()]
                 if text in key.split("|") for w in ws]  # fmt: skip
        return WORD_FRAMES[lang].format(w=rng.choice(words) if words else text)
    if kind == "cjk-order":
        return rng.choice(CJK_ORDER).format(l=letter, L=letter.upper())
    if kind == "lean":
        return rng.choice(LEANS).format(t=f"a {text.lower()}", l=letter)
    return rng.choice(HOMONYMS)


def time_extractor(fn: Callable[[str, AquaItem], Extraction], work: list) -> float:
    """Replies per second of one extractor over the whole work list (best of two passes)."""
    best = float("inf")
    # The first pass also fills the per-item caches. No progress bar: it would be timed too.
    for _ in range(2):
        start = time.perf_counter()
        for reply, item in work:
            fn(reply, item)
        best = min(best, time.perf_counter() - start)
    return len(work) / best


EXTRACTORS: dict[str, Callable[[str, AquaItem], Extraction]] = {
    "aqua-rules": lambda reply, item: extract_aqua_rules(
        reply, item.options, item.rejection_strings
    ),
    "official": lambda reply, item: extract_official(reply, item.options),
    "mmau-string-match": lambda reply, item: extract_string_match(reply, item.options),
}
PAIRS = (("aqua-rules", "official"), ("aqua-rules", "mmau-string-match"),
         ("official", "mmau-string-match"))  # fmt: skip


def disagreement_table(kinds: list[str], choices: dict[str, list[int | None]]) -> dict:
    """Per reply kind (and "all"): replies, and for each pair of extractors how many differ."""
    table: dict[str, dict[str, int]] = {}
    for kind in [*sorted(set(kinds)), "all"]:
        rows = [k for k, name in enumerate(kinds) if kind in ("all", name)]
        table[kind] = {"replies": len(rows)} | {
            f"{a} vs {b}": sum(choices[a][k] != choices[b][k] for k in rows) for a, b in PAIRS
        }
    return table


def main(argv: list[str] | None = None) -> int:
    """Build the reply mix, time every extractor, print replies/second and the disagreements."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=20000, help="number of replies (default 20000)")
    parser.add_argument("--seed", type=int, default=0, help="random seed of the reply mix")
    parser.add_argument(
        "--data-dir", type=Path, default=DEFAULT_DATA_DIR, help="folder of released JSON files"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    if args.n < 1:
        parser.error("--n must be at least 1")
    try:
        items = [
            item
            for track in TRACKS
            for variant in VARIANT_SUFFIXES
            for item in load_items(args.data_dir, track, variant)
        ]
    except AquaDataError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2

    rng = random.Random(args.seed)
    drawn = [rng.choice(items) for _ in range(args.n)]
    replies = [make_reply(item, rng) for item in drawn]
    work = [(reply, item) for item, (_, reply) in zip(drawn, replies, strict=True)]
    speed = {name: time_extractor(fn, work) for name, fn in EXTRACTORS.items()}
    results = {name: [fn(r, item) for r, item in work] for name, fn in EXTRACTORS.items()}
    choices = {name: [x.choice for x in rs] for name, rs in results.items()}
    kind_of = [kind for kind, _ in replies]
    kinds = {k: kind_of.count(k) for k in sorted(set(kind_of))}
    result = {
        "replies": args.n,
        "mix": kinds,
        "mean_reply_chars": round(sum(len(r) for _, r in replies) / args.n, 1),
        "replies_per_s": {name: round(v) for name, v in speed.items()},
        # aqua-rules' time per reply over each other extractor's.
        "cost_ratio_of_aqua_rules": {
            name: round(rate / speed["aqua-rules"], 2)
            for name, rate in speed.items()
            if name != "aqua-rules"
        },
        "unparsed": {name: sum(not x.parsed for x in rs) for name, rs in results.items()},
        "truncated": sum(x.reason.startswith("truncated") for x in results["aqua-rules"]),
        "disagreements": disagreement_table(kind_of, choices),
        "python": platform.python_version(),
        "machine": platform.machine(),
    }
    if args.json:
        print(json.dumps(result))
        return 0
    print(f"{args.n} replies {kinds}, mean {result['mean_reply_chars']} chars")
    for name, value in speed.items():
        unparsed = result["unparsed"][name]
        print(f"{name:<18} {value:12,.0f} replies/s   unparsed {unparsed}")
    for name, ratio in result["cost_ratio_of_aqua_rules"].items():
        print(f"aqua-rules cost / {name} cost: {ratio}")
    print("\nreplies on which two extractors choose differently")
    header = ["kind", "replies", *(f"{a} vs {b}" for a, b in PAIRS)]
    print(" | ".join(header))
    for kind, row in result["disagreements"].items():
        print(" | ".join([kind, *(str(v) for v in row.values())]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
