"""Read back what an offline W&B run recorded: its metrics, tables and logged results file.

wandb 0.31 writes no `wandb-summary.json` for an offline run; its record of the run is the
`run-<id>.wandb` file, a LevelDB-style log (32 KiB blocks of checksummed chunks after a
7-byte `:W&B` header) of protobuf `Record`s, the file `wandb sync` uploads. Tables are JSON
files under `files/media/table/`; a logged artifact's files stay staged under WANDB_DATA_DIR,
each recorded with the path it stands at.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from pathlib import Path

BLOCK = 32768
CHUNK_HEADER = 7  # crc32c (4), length (2), type (1)
FILE_HEADER = b":W&B"
FULL, LAST = 1, 4


@dataclass
class WandbRun:
    """One offline run as W&B recorded it."""

    folder: Path
    # key -> value: what the run page shows (the last logged value, then summary updates)
    summary: dict
    # key -> value of the metrics the run logged (its history)
    history: dict
    # table key (e.g. "evaluation/group_eval_results") -> list of row dicts
    tables: dict
    # artifact name -> {file name in the artifact: the staged local file}
    artifacts: dict


def _records(path: Path) -> list[bytes]:
    raw = path.read_bytes()
    assert raw.startswith(FILE_HEADER), f"{path}: not a W&B run file"
    records, pending, pos = [], b"", 7
    while pos + CHUNK_HEADER <= len(raw):
        room = BLOCK - pos % BLOCK
        if room < CHUNK_HEADER:  # a block's tail too short for a header is padding
            pos += room
            continue
        _crc, length, kind = struct.unpack("<IHB", raw[pos : pos + CHUNK_HEADER])
        start = pos + CHUNK_HEADER
        pos = start + length
        if kind == 0:
            continue
        pending += raw[start:pos]
        if kind in (FULL, LAST):
            records.append(pending)
            pending = b""
    return records


def _key(item) -> str:
    return item.key or "/".join(item.nested_key)


def read_offline_run(wandb_dir: Path) -> WandbRun:
    """The one offline run under `wandb_dir` (the `dir=` of wandb.init)."""
    from wandb.proto import wandb_internal_pb2

    (folder,) = sorted((wandb_dir / "wandb").glob("offline-run-*"))
    (path,) = sorted(folder.glob("run-*.wandb"))
    history: dict = {}
    updates: dict = {}
    artifacts: dict = {}
    for data in _records(path):
        record = wandb_internal_pb2.Record()
        record.ParseFromString(data)
        kind = record.WhichOneof("record_type")
        if kind == "history":
            history.update({_key(i): json.loads(i.value_json) for i in record.history.item})
        elif kind == "summary":
            updates.update({_key(i): json.loads(i.value_json) for i in record.summary.update})
        elif kind == "artifact":
            files = {c.path: Path(c.local_path) for c in record.artifact.manifest.contents}
            artifacts[record.artifact.name] = files
    tables = {}
    for table_file in sorted((folder / "files" / "media" / "table").rglob("*.table.json")):
        key = str(table_file.relative_to(folder / "files" / "media" / "table"))
        key = key.rsplit("_", 2)[0]  # `<key>_<step>_<digest>.table.json`
        table = json.loads(table_file.read_text())
        tables[key] = [dict(zip(table["columns"], row, strict=True)) for row in table["data"]]
    return WandbRun(folder, {**history, **updates}, history, tables, artifacts)
