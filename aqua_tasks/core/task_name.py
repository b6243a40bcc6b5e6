"""AQUA task names, `<family>_<track>`: the one place they are parsed and formatted.

The main family `aqua` asks the released questions (`aqua_animal`, `aqua_music`,
`aqua_vocal`, and the built `aqua_mmau`); its released tracks are lm-eval's `aqua` group.
The ablations sit outside the `aqua_*` glob: `aqua-design1` and `aqua-design2` (the other
released option designs), `aqua-hint` (the uncertainty design) and `aqua-cot` (our
chain-of-thought prompt). Every multiple-choice family pools its tracks into an all-tracks
row named by the family (`aqua`, `aqua-cot`). `aqua-open` names open-ended tasks of the same
tracks: parsed and formatted alike, but in no multiple-choice row and rebuilt from no
released multiple-choice file.
"""

from __future__ import annotations

from dataclasses import dataclass

from aqua_tasks.core.data import BUILT_TRACKS, KNOWN_TRACKS, check_track
from aqua_tasks.errors import AquaDataError

MAIN_FAMILY = "aqua"
OPEN_FAMILY = "aqua-open"
# The multiple-choice families → the released design (variant) and prompt style they ask.
CHOICE_FAMILIES: dict[str, tuple[str, str]] = {
    MAIN_FAMILY: ("main", "plain"),
    "aqua-design1": ("option_design1", "plain"),
    "aqua-design2": ("option_design2", "plain"),
    "aqua-hint": ("uncertainty", "plain"),
    "aqua-cot": ("main", "cot"),
}
FAMILIES: tuple[str, ...] = (*CHOICE_FAMILIES, OPEN_FAMILY)
SEPARATOR = "_"


def family_setting(family: str) -> str:
    """The setting a family names in tables: '' for `aqua`, 'cot' for `aqua-cot`."""
    return "" if family == MAIN_FAMILY else family.removeprefix(MAIN_FAMILY + "-")


@dataclass(frozen=True)
class TaskName:
    """An AQUA task's name: its family (`aqua`, an ablation, `aqua-open`) and its track."""

    family: str
    track: str

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise AquaDataError(
                f"unknown task family {self.family!r}; expected one of {', '.join(FAMILIES)}"
            )
        check_track(self.track)

    @classmethod
    def parse(cls, name: str) -> TaskName | None:
        """The AQUA task a name names ('aqua-cot_music'), or None for any other name."""
        family, separator, track = name.partition(SEPARATOR)
        if not separator or family not in FAMILIES or track not in KNOWN_TRACKS:
            return None
        return cls(family, track)

    @classmethod
    def for_questions(
        cls, track: str, variant: str = "main", prompt_style: str = "plain"
    ) -> TaskName:
        """The task asking a track's questions in a released design and prompt style."""
        check_track(track)
        if track in BUILT_TRACKS and (variant, prompt_style) != ("main", "plain"):
            raise AquaDataError(f"the {track} track has one task only, {cls(MAIN_FAMILY, track)}")
        for family, asked in CHOICE_FAMILIES.items():
            if asked == (variant, prompt_style):
                return cls(family, track)
        raise AquaDataError(f"no task for variant {variant!r} with prompt {prompt_style!r}")

    def format(self) -> str:
        """The name as lm-eval and lmms-eval know the task: 'aqua-cot_music'."""
        return f"{self.family}{SEPARATOR}{self.track}"

    def __str__(self) -> str:
        return self.format()

    @property
    def is_open_ended(self) -> bool:
        """Whether the task is open-ended (`aqua-open`), not multiple choice."""
        return self.family == OPEN_FAMILY

    @property
    def setting(self) -> str:
        """The family's setting in tables: '' for the main tasks, else e.g. 'cot', 'open'."""
        return family_setting(self.family)

    @property
    def group(self) -> str | None:
        """The all-tracks row the task pools into (`aqua`, `aqua-cot`); None if open-ended."""
        return None if self.is_open_ended else self.family

    @property
    def variant(self) -> str | None:
        """The released design a multiple-choice task asks; None if open-ended."""
        asked = CHOICE_FAMILIES.get(self.family)
        return asked[0] if asked is not None else None

    @property
    def prompt_style(self) -> str | None:
        """The prompt style of a multiple-choice task ('plain', 'cot'); None if open-ended."""
        asked = CHOICE_FAMILIES.get(self.family)
        return asked[1] if asked is not None else None


def choice_task(name: str) -> TaskName | None:
    """The multiple-choice AQUA task a name names, or None (another task, or open-ended)."""
    parsed = TaskName.parse(name)
    return parsed if parsed is not None and not parsed.is_open_ended else None
