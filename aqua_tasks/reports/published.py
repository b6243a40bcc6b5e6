"""The paper's published Table 1, as printed: the rows `aqua report --paper` adds."""

from __future__ import annotations

PUBLISHED_SOURCE = "Kuan & Lee, ICASSP 2026 (arXiv 2601.12248), Table 1"
PUBLISHED_EXTRACTOR = "authors' rule (official), published"
# Table 1 of the paper, % (Ori, AAD CA, IASD CA, IAQD CA) per track; † = chain-of-thought.
PUBLISHED_TABLE1: dict[str, dict[str, tuple[float, float, float, float]]] = {
    "Qwen2-Audio": {
        "animal": (91.9, 23.6, 78.0, 25.7),
        "vocal": (91.1, 14.0, 55.2, 25.6),
        "music": (78.1, 19.2, 64.4, 24.9),
        "mmau": (63.1, 39.5, 63.8, 42.9),
    },
    "Qwen2.5-Omni": {
        "animal": (96.4, 20.5, 83.6, 86.5),
        "vocal": (92.2, 7.2, 87.1, 86.8),
        "music": (83.1, 22.1, 78.3, 84.0),
        "mmau": (75.4, 28.3, 77.3, 90.8),
    },
    "Audio Flamingo 3": {
        "animal": (77.5, 0.7, 0.4, 0.7),
        "vocal": (84.4, 0.0, 3.0, 1.6),
        "music": (58.1, 0.5, 0.0, 0.5),
        "mmau": (79.3, 48.5, 42.8, 9.8),
    },
    "BALSa-MA": {
        "animal": (96.4, 74.9, 90.2, 79.5),
        "vocal": (74.7, 28.6, 97.4, 84.0),
        "music": (40.6, 39.7, 85.6, 80.8),
        "mmau": (64.6, 70.7, 55.8, 89.8),
    },
    "Qwen2.5-Omni†": {
        "animal": (96.4, 59.1, 91.6, 89.6),
        "vocal": (92.2, 51.8, 94.0, 91.6),
        "music": (83.1, 76.6, 90.6, 95.3),
        "mmau": (75.4, 59.3, 80.7, 94.7),
    },
    "Gemini-2.5-Flash": {
        "animal": (83.6, 40.2, 86.4, 76.1),
        "vocal": (77.8, 25.0, 87.5, 72.9),
        "music": (58.1, 33.0, 86.6, 76.1),
        "mmau": (67.6, 64.0, 83.1, 76.9),
    },
    "GPT-4o-Audio": {
        "animal": (86.1, 51.0, 86.1, 80.0),
        "vocal": (88.9, 29.4, 87.2, 83.8),
        "music": (58.6, 7.6, 87.2, 90.1),
        "mmau": (69.4, 37.2, 71.9, 91.3),
    },
}
