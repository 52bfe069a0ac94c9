"""Where this installation keeps the user's own data: saved scenarios, client profiles, the
profile-signing key. Below both the store and the client profiles, which both need it."""

from __future__ import annotations

import os
from pathlib import Path

ENV_VAR = "INFERENCE_ARCHITECT_DATA_DIR"
DEFAULT_DIR = Path("~/.local/share/inference-architect")


def data_dir() -> Path:
    """The user data folder: ``$INFERENCE_ARCHITECT_DATA_DIR`` or ~/.local/share/inference-architect."""
    raw = os.environ.get(ENV_VAR, "").strip()
    return Path(raw).expanduser() if raw else DEFAULT_DIR.expanduser()
