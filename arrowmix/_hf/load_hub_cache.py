"""A Hub dataset already downloaded into the local Hugging Face cache, found by its name.

``huggingface_hub`` (``snapshot_download``, ``hf download``, or HF ``datasets`` itself) keeps
a dataset repository's files under ``$HF_HUB_CACHE/datasets--<org>--<name>/snapshots/<commit>/``
and the commit of each branch or tag in ``refs/<ref>``. ``load_dataset("org/name")`` reads that
folder when it is there, as HF does offline: nothing is downloaded and nothing is checked
against the Hub, so a missing or partial copy raises as any local folder would.
"""

from __future__ import annotations

import os
import re

__all__ = ["hub_cache_dir", "hub_snapshot"]

_NAME = re.compile(r"^[\w.-]+(/[\w.-]+)?$")


def hub_cache_dir() -> str:
    """``$HF_HUB_CACHE``, else ``$HUGGINGFACE_HUB_CACHE``, else ``$HF_HOME/hub`` (HF's rule)."""
    home = os.environ.get("HF_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "huggingface",
    )
    default = os.environ.get("HUGGINGFACE_HUB_CACHE") or os.path.join(home, "hub")
    path = os.environ.get("HF_HUB_CACHE") or default
    return os.path.expandvars(os.path.expanduser(path))


def hub_snapshot(repo_id: str, revision: str | None = None) -> str | None:
    """The local snapshot folder of dataset ``repo_id`` at ``revision`` (``"main"``), or None.

    ``revision`` is a branch or tag (read from ``refs/``) or a commit hash.
    """
    if not _NAME.match(repo_id) or repo_id.startswith((".", "/")) or ".." in repo_id:
        return None
    repo = os.path.join(hub_cache_dir(), "datasets--" + repo_id.replace("/", "--"))
    ref = revision or "main"
    ref_file = os.path.join(repo, "refs", ref)
    commit = ref
    if os.path.isfile(ref_file):
        with open(ref_file, encoding="utf-8") as f:
            commit = f.read().strip()
    folder = os.path.join(repo, "snapshots", commit)
    return folder if commit and os.path.isdir(folder) else None
