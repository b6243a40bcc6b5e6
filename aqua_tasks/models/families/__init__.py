"""The `aqua-audiolm` families whose processors cannot take text plus clips as they are: one
module each (Qwen Omni, Phi-4-multimodal, Voxtral) saying why, and what they share (parts)."""
