"""An ensemble judge: K trained judges in one folder, scored as the mixture of their predictions.

Layout (written by `write_ensemble`, one atomic directory swap)::

    orca_ensemble.json   format; per member its folder, fingerprint and files' sha256
    member-0/ …          each a native judge checkpoint, copied whole

Each item's prediction is the equal-weight mixture of the members' predicted rating
distributions: its mean is the mean of their means, its variance E[var + mean²] − mean² (so
disagreement between members adds to the predicted disagreement of annotators). Scoring costs
K forward passes per item and K judges in memory.

Loading checks every member's files against the sha256 recorded when the folder was written:
a member replaced, retrained or edited afterwards is refused, not mixed in silently.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from eval_common.inputs import read_json
from eval_common.outputs import check_output_folder
from orca_judge.checkpoint.atomic import atomic_dir, atomic_write_json
from orca_judge.checkpoint.native import CONFIG_FILE, OWNED
from orca_judge.checkpoint.native import ENSEMBLE_FILE as MANIFEST
from orca_judge.errors import CheckpointError
from orca_judge.judge import OrcaJudge, OrcaPrediction
from orca_judge.processes import Processes

FORMAT = "orca ensemble/1"
# Per member: its folder inside the ensemble, the judge's fingerprint when it was written (for
# the reader), and the sha256 of its files (checked at every load).
MEMBER_FIELDS = ("folder", "fingerprint", "files_sha256")
MIN_MEMBERS = 2


class OrcaEnsemble:
    """Judges whose predicted rating distributions are averaged; scored like one OrcaJudge."""

    def __init__(self, members: Sequence[OrcaJudge]):
        if len(members) < MIN_MEMBERS:
            raise ValueError(f"an ensemble needs at least {MIN_MEMBERS} judges, got {len(members)}")
        names = [f"member {i}" for i in range(len(members))]
        if problem := reading_problem([reading(m) for m in members], names):
            raise ValueError(problem)
        self.members = list(members)
        self.config = members[0].config  # the input settings, which every member shares

    @property
    def token_limit(self) -> int | None:
        return self.members[0].token_limit

    def fingerprint(self) -> str:
        """Identity of the mixture: its members' fingerprints, in any order."""
        digest = hashlib.sha256(FORMAT.encode())
        for member in sorted(m.fingerprint() for m in self.members):
            digest.update(member.encode())
        return digest.hexdigest()[:16]

    def describe(self) -> dict[str, Any]:
        """As OrcaJudge.describe; the clamp is each member's own, listed in member order."""
        setups = [m.describe() for m in self.members]
        reasons = "; ".join(f"member {i}: {s['clamp_reason']}" for i, s in enumerate(setups))
        return {
            **setups[0],
            "members": len(setups),
            "clamp_threshold": [s["clamp_threshold"] for s in setups],
            "clamp_reason": "the mean of the members' clamped means, each clamped by its own "
            f"threshold ({reasons})",
        }

    def score(
        self,
        records: Iterable[Any],
        batch_size: int | None = None,
        progress: bool = False,
        processes: Processes | None = None,
    ) -> list[OrcaPrediction]:
        """The mixture's prediction for each record (K forward passes per record)."""
        records = list(records)
        per_member = [
            m.score(records, batch_size=batch_size, progress=progress, processes=processes)
            for m in self.members
        ]
        return [mixture(list(preds)) for preds in zip(*per_member, strict=True)]


def mixture(predictions: Sequence[OrcaPrediction]) -> OrcaPrediction:
    """The equal-weight mixture of several judges' predictions for one item."""
    k = len(predictions)
    if len({p.id for p in predictions}) != 1:
        raise ValueError(f"mixing predictions of different items: {[p.id for p in predictions]}")
    mean = sum(p.expected_unit for p in predictions) / k
    variance = None
    if all(p.variance_unit is not None for p in predictions):
        second = sum(p.variance_unit + p.expected_unit**2 for p in predictions) / k
        variance = max(second - mean**2, 0.0)
    distribution: dict[str, Any] = {"members": [p.distribution for p in predictions]}
    if all("probs" in p.distribution for p in predictions):
        columns = zip(*(p.distribution["probs"] for p in predictions), strict=True)
        distribution["probs"] = [sum(column) / k for column in columns]
    if all("p" in p.distribution for p in predictions):  # a mixture of Bernoullis is one
        distribution["p"] = sum(p.distribution["p"] for p in predictions) / k
    clamped = sum(p.clamped_unit for p in predictions) / k
    return OrcaPrediction(
        id=predictions[0].id,
        expected=1 + 4 * mean,
        expected_unit=mean,
        variance=None if variance is None else 16 * variance,
        variance_unit=variance,
        distribution=distribution,
        clamped=1 + 4 * clamped,
        clamped_unit=clamped,
        n_tokens=max(p.n_tokens for p in predictions),
        truncated=any(p.truncated for p in predictions),
    )


def is_ensemble(path: str | Path) -> bool:
    """Whether `path` is an ensemble folder (holds the manifest)."""
    return (Path(path) / MANIFEST).is_file()


def load_judge(path_or_hub_id: str | Path, **settings: Any) -> OrcaJudge | OrcaEnsemble:
    """A judge checkpoint or an ensemble folder, loaded with OrcaJudge.from_pretrained's settings.

    Every member gets the same settings (device, backbone, clamp threshold, input blocks, …).
    """
    path = Path(path_or_hub_id)
    if not path.exists():
        from orca_judge.judge import hub_snapshot

        path = hub_snapshot(str(path_or_hub_id))
    if not is_ensemble(path):
        return OrcaJudge.from_pretrained(path, **settings)
    members = []
    for folder, recorded in read_manifest(path):
        # Checked on the files, not the loaded judge: load settings (a clamp threshold, the
        # input blocks) change a judge's fingerprint but not which judge it is.
        if (found := folder_digest(folder)) != recorded:
            raise CheckpointError(
                f"{folder}: its files (sha256 {found[:16]}…) are not those recorded in "
                f"{path / MANIFEST} ({recorded[:16]}…) when the ensemble was written; the member "
                "was replaced or changed — write the ensemble again from the judges you mean"
            )
        members.append(OrcaJudge.from_pretrained(folder, **settings))
    try:
        return OrcaEnsemble(members)
    except ValueError as err:
        raise CheckpointError(f"{path}: {err}") from None


def folder_digest(folder: Path) -> str:
    """sha256 over every file below `folder`: its path inside the folder, then its bytes."""
    # A link could lead out of the ensemble to files that change; copies hold none.
    if links := [p for p in [folder, *folder.rglob("*")] if p.is_symlink()]:
        raise CheckpointError(f"{links[0]}: a symbolic link in an ensemble member; copy it whole")
    digest = hashlib.sha256()
    for file in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(file.relative_to(folder).as_posix().encode() + b"\0")
        with file.open("rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
        digest.update(b"\0")
    return digest.hexdigest()


def read_manifest(root: Path) -> list[tuple[Path, str]]:
    """(member folder, recorded sha256 of its files) per member, or CheckpointError saying why."""
    where = root / MANIFEST
    data = read_json(where, CheckpointError)
    if not isinstance(data, Mapping) or data.get("format") != FORMAT:
        found = data.get("format") if isinstance(data, Mapping) else type(data).__name__
        raise CheckpointError(f"{where}: format {found!r}, expected {FORMAT!r}")
    members = data.get("members")
    if not isinstance(members, list) or len(members) < MIN_MEMBERS:
        raise CheckpointError(f"{where}: 'members' must list at least {MIN_MEMBERS} judges")
    out = []
    for i, member in enumerate(members):
        fields = [member.get(k) if isinstance(member, Mapping) else None for k in MEMBER_FIELDS]
        if not all(isinstance(value, str) for value in fields):
            named = ", ".join(repr(k) for k in MEMBER_FIELDS)
            raise CheckpointError(f"{where}: members[{i}] needs {named} as strings")
        folder, _, files_sha256 = fields
        # Members live inside the ensemble: a path that leads out of it is not ours to load.
        if Path(folder).name != folder or folder in ("", ".", ".."):
            raise CheckpointError(f"{where}: members[{i}] folder {folder!r} is not a plain name")
        if not (root / folder).is_dir():
            raise CheckpointError(f"{root / folder}: member {i} of the ensemble is missing")
        for earlier, (earlier_folder, earlier_sha) in enumerate(out):
            if root / folder == earlier_folder or files_sha256 == earlier_sha:
                raise CheckpointError(
                    f"{where}: members[{i}] repeats members[{earlier}]; each judge counts once"
                )
        out.append((root / folder, files_sha256))
    return out


def write_ensemble(
    checkpoints: Sequence[str | Path],
    output: str | Path,
    *,
    overwrite: bool = False,
    backbone: str | None = None,
) -> list[dict[str, str]]:
    """Copy the judges at `checkpoints` into one ensemble folder; returns its members' records.

    Each judge is loaded first (on the CPU; its backbone from `backbone` when given) so that a
    broken one, one that reads other input blocks than the rest, or the same judge twice is
    refused before anything is written.
    """
    paths = [Path(c) for c in checkpoints]
    if len(paths) < MIN_MEMBERS:
        raise ValueError(f"an ensemble needs at least {MIN_MEMBERS} judges, got {len(paths)}")
    for path in paths:
        if not path.is_dir():
            raise ValueError(
                f"{path}: not a folder; name local judge checkpoints (a Hub judge: "
                "download it first, e.g. `huggingface-cli download ID --local-dir D`)"
            )
        if is_ensemble(path):
            raise ValueError(f"{path}: is an ensemble itself; name its member judges instead")
    output = check_output_folder(
        output,
        command="orca ensemble",
        flag="--output",
        inputs=paths,
        overwrite=overwrite,
        is_own=lambda _: False,  # any non-empty folder needs --overwrite, an ensemble too
    )
    # One judge in memory at a time: what the checks need is its fingerprint and how it reads.
    fingerprints, readings = [], []
    for path in paths:
        judge = OrcaJudge.from_pretrained(path, device="cpu", backbone=backbone)
        fingerprints.append(judge.fingerprint())
        readings.append(reading(judge))
        del judge
    for i, fingerprint in enumerate(fingerprints):
        if fingerprint in fingerprints[:i]:
            first = paths[fingerprints.index(fingerprint)]
            raise ValueError(f"{paths[i]} is the same judge as {first}; each must count once")
    if problem := reading_problem(readings, [str(p) for p in paths]):
        raise ValueError(problem)
    members = [
        {"folder": f"member-{i}", "fingerprint": fp, "source": str(path.resolve())}
        for i, (path, fp) in enumerate(zip(paths, fingerprints, strict=True))
    ]
    # Replacing an ensemble replaces its manifest and the members it lists; nothing else.
    owned = {MANIFEST, *_listed_members(output), *(m["folder"] for m in members)}
    with atomic_dir(output, owned=owned) as tmp:
        for path, member in zip(paths, members, strict=True):
            _copy_member(path, tmp / member["folder"])
            member["files_sha256"] = folder_digest(tmp / member["folder"])
        atomic_write_json(tmp / MANIFEST, {"format": FORMAT, "members": members})
    return members


def _listed_members(folder: Path) -> list[str]:
    """The member folders an existing ensemble's manifest lists (none when there is none)."""
    if not is_ensemble(folder):
        return []
    try:
        return [path.name for path, _ in read_manifest(folder)]
    except CheckpointError:
        return []  # a broken manifest: its folders are not known to be ours, so they stay


def _copy_member(source: Path, target: Path) -> None:
    """A judge's own files (a native checkpoint's names; else the whole folder), links resolved."""
    if not (source / CONFIG_FILE).is_file():
        shutil.copytree(source, target, symlinks=False)
        return
    target.mkdir()
    for name in sorted(OWNED):
        entry = source / name
        if entry.is_dir():
            shutil.copytree(entry, target / name, symlinks=False)
        elif entry.is_file():
            shutil.copy2(entry, target / name)


def reading(judge: OrcaJudge) -> dict[str, Any]:
    """How a judge reads an item: what the members of one ensemble must share."""
    return {
        "likelihood": judge.config.likelihood,
        "template": judge.config.template,
        "input blocks": judge.describe()["inputs"],
        "token limit": judge.token_limit,
    }


def reading_problem(readings: Sequence[Mapping[str, Any]], names: Sequence[str]) -> str | None:
    """Why judges that read items like `readings` cannot form one ensemble (None: they can)."""
    first = readings[0]
    for name, mine in zip(names[1:], readings[1:], strict=True):
        for what, value in mine.items():
            if value != first[what]:
                return (
                    f"{name} has {what} {value}, {names[0]} {first[what]}: an ensemble's "
                    "members must read items alike; combine judges of one configuration"
                )
    return None
