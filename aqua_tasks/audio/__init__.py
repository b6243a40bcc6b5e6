"""The clips: finding and lazily decoding them at 16 kHz mono, checking them, preparing them."""
