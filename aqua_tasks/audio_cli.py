"""Deprecated: `aqua-audio` is `aqua_tasks.cli_audio`; its logic is `aqua_tasks.audio_prepare`."""

from aqua_tasks.audio_prepare import (
    AUDIO_SUFFIXES,
    HUB_ID,
    NAME_COLUMNS,
    SOURCE_TRACKS,
    MissingAudio,
    PrepareError,
    PrepareReport,
    SourceClip,
    TrackCheck,
    check_track_audio,
    dataset_clips,
    folder_clips,
    load_source,
    prepare_audio,
    referenced_files,
    source_key,
    write_clip,
)
from aqua_tasks.cli_audio import LISTED, build_parser, main
from aqua_tasks.deprecation import module_moved

__all__ = [
    "AUDIO_SUFFIXES",
    "HUB_ID",
    "LISTED",
    "NAME_COLUMNS",
    "SOURCE_TRACKS",
    "MissingAudio",
    "PrepareError",
    "PrepareReport",
    "SourceClip",
    "TrackCheck",
    "build_parser",
    "check_track_audio",
    "dataset_clips",
    "folder_clips",
    "load_source",
    "main",
    "prepare_audio",
    "referenced_files",
    "source_key",
    "write_clip",
]

module_moved(__name__, "aqua_tasks.cli_audio (CLI) and aqua_tasks.audio_prepare (logic)")
