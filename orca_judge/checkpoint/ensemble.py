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
from orca_judge.checkpoint.native import ENSEMBLE_FILE as MANIFEST
from orca_judge.errors import CheckpointError
from orca_judge.judge import OrcaJudge, OrcaPrediction
from orca_judge.processes import Processes

FORMAT = "orca-ensemble/1"
# Per member: its folder inside the ensemble, the judge's fingerprint when it was written (for
# the reader), and the sha256 of its files (checked at every load).
MEMBER_FIELDS = ("folder", "fingerprint", "files_sha256")
MIN_MEMBERS = 2


class OrcaEnsemble:
    """Judges whose predicted rating distributions are averaged; scored like one OrcaJudge."""

    def __init__(self, members: Sequence[OrcaJudge]):
        if len(members) < MIN_MEMBERS:
            raise ValueError(f"an ensemble needs at least {MIN_MEMBERS} judges, got {len(members)}")
        _check_same_reading(members)
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
        return {
            **setups[0],
            "members": len(setups),
            "clamp_threshold": [s["clamp_threshold"] for s in setups],
            "clamp_reason": "each member clamps its own mean; the ensemble's clamped mean is "
            "the mean of theirs",
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
    mean = sum(p.expected_unit for p in predictions) / k
    variance = None
    if all(p.variance_unit is not None for p in predictions):
        second = sum(p.variance_unit + p.expected_unit**2 for p in predictions) / k
        variance = max(second - mean**2, 0.0)
    distribution: dict[str, Any] = {"members": [p.distribution for p in predictions]}
    if all("probs" in p.distribution for p in predictions):
        columns = zip(*(p.distribution["probs"] for p in predictions), strict=True)
        distribution["probs"] = [sum(column) / k for column in columns]
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
        if is_ensemble(path):
            raise ValueError(f"{path}: is an ensemble itself; name its member judges instead")
    output = check_output_folder(
        output,
        command="orca-ensemble",
        flag="--output",
        inputs=paths,
        overwrite=overwrite,
        is_own=lambda _: False,  # any non-empty folder needs --overwrite, an ensemble too
    )
    judges = [OrcaJudge.from_pretrained(p, device="cpu", backbone=backbone) for p in paths]
    fingerprints = [j.fingerprint() for j in judges]
    for i, fingerprint in enumerate(fingerprints):
        if fingerprint in fingerprints[:i]:
            first = paths[fingerprints.index(fingerprint)]
            raise ValueError(f"{paths[i]} is the same judge as {first}; each must count once")
    OrcaEnsemble(judges)  # refuses members that read their inputs differently
    members = [
        {"folder": f"member-{i}", "fingerprint": fp, "source": str(path.resolve())}
        for i, (path, fp) in enumerate(zip(paths, fingerprints, strict=True))
    ]
    # Replacing an ensemble replaces its manifest and members; the folder's other files stay.
    old_members = {e.name for e in output.glob("member-*")} if output.is_dir() else set()
    owned = {MANIFEST, *old_members, *(m["folder"] for m in members)}
    with atomic_dir(output, owned=owned) as tmp:
        for path, member in zip(paths, members, strict=True):
            # symlinks=False: a copied member must not point back at files that may change.
            shutil.copytree(path, tmp / member["folder"], symlinks=False)
            member["files_sha256"] = folder_digest(tmp / member["folder"])
        atomic_write_json(tmp / MANIFEST, {"format": FORMAT, "members": members})
    return members


def _check_same_reading(members: Sequence[OrcaJudge]) -> None:
    """Members must read the same input blocks under the same token limit, with one likelihood."""
    first = members[0]
    for i, member in enumerate(members[1:], 1):
        for what, mine, theirs in (
            ("likelihood", member.config.likelihood, first.config.likelihood),
            ("template", member.config.template, first.config.template),
            ("input blocks", member.describe()["inputs"], first.describe()["inputs"]),
            ("token limit", member.token_limit, first.token_limit),
        ):
            if mine != theirs:
                raise ValueError(
                    f"member {i} has {what} {mine}, member 0 {theirs}: an ensemble's members "
                    "must read items alike; combine judges of one configuration"
                )
