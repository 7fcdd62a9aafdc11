"""The ``configs:`` of a local dataset folder's ``README.md`` (its dataset card), as HF reads them.

A dataset card's YAML header may list configurations::

    ---
    configs:
    - config_name: main
      data_files:
      - split: train
        path: data/train-*.jsonl
      - split: test
        path: data/test.jsonl
      default: true
    - config_name: raw
      data_dir: raw
      field: rows
    ---

HF's rules (``datasets.load.LocalDatasetModuleFactory``), which ``load_dataset`` follows when
neither ``data_files`` nor ``data_dir`` is given:

- the builder is inferred from the first configuration's files, and reads every one;
- ``name`` picks a configuration; without it, the default one: marked ``default: true``,
  named ``"default"``, or the only one (several defaults, or several configurations and no
  default, raise as HF does);
- its ``data_files`` (a pattern, a list, or ``{split, path}`` items) and ``data_dir`` are
  relative to the folder; its other keys are builder options (``sep``, ``field``...); those
  the builder does not take are ignored with a warning, as in HF.

Reading the YAML needs PyYAML (``pip install pyyaml``; HF ``datasets`` depends on it).
"""

from __future__ import annotations

import os
import re
from typing import Any

from arrowmix._warn import warn

__all__ = ["card_configs", "pick_config"]

#: HF's ``DatasetCard`` front matter: a YAML block between ``---`` lines at the top.
_FRONT = re.compile(r"^(\s*---[\r\n]+)([\S\s]*?)([\r\n]+---(\r\n|\n|$))")
_SPLIT = re.compile(r"^\w+(\.\w+)*$")
_DATA_FILES_HELP = (
    "Expected data_files in YAML to be either a string or a list of strings or a list of "
    "dicts with two keys: 'split' and 'path'"
)


def card_configs(folder: str) -> dict[str, dict[str, Any]]:
    """``{config name: its parameters}`` from ``folder``'s README.md (empty without any).

    Raises:
        ValueError: the ``configs`` field is malformed (HF's messages).
        ImportError: the card has a YAML header and PyYAML is not installed.
    """
    readme = os.path.join(folder, "README.md")
    if not os.path.isfile(readme):
        return {}
    with open(readme, encoding="utf-8") as f:
        m = _FRONT.match(f.read())
    if m is None or "configs" not in m.group(2):
        return {}
    try:
        import yaml
    except ImportError as exc:  # pragma: no cover - installed with HF datasets
        raise ImportError(
            f"{readme} lists `configs:` in its YAML header; reading it needs PyYAML "
            "(`pip install pyyaml`)."
        ) from exc
    data = yaml.safe_load(m.group(2)) or {}
    configs = data.get("configs") if isinstance(data, dict) else None
    if not configs:
        return {}
    if not isinstance(configs, list):
        raise ValueError(f"Expected configs to be a list, but got '{configs}'")
    out: dict[str, dict[str, Any]] = {}
    for config in configs:
        if not isinstance(config, dict) or "config_name" not in config:
            raise ValueError(
                "Each config must include `config_name` field with a string name of a "
                f"config, but got {config}. "
            )
        _check_data_files(config.get("data_files"))
        params = dict(config)
        out[str(params.pop("config_name"))] = params
    return out


def _check_data_files(value: Any) -> None:
    if value is None:
        return
    items = value if isinstance(value, list) else [value]
    for item in items:
        ok = isinstance(item, str) or (
            isinstance(item, dict)
            and set(item) == {"split", "path"}
            and isinstance(item["split"], str)
            and _SPLIT.match(item["split"]) is not None
            and isinstance(item["path"], (str, list))
        )
        if not ok or not isinstance(value, (str, list)):
            raise ValueError(f"{_DATA_FILES_HELP}, but got {value}")


def pick_config(configs: dict[str, dict[str, Any]], name: str | None) -> dict[str, Any]:
    """The parameters of the configuration ``name``, or of the default one (HF's rule).

    Raises:
        ValueError: ``name`` is not a configuration, or none is the default and there are
            several (the message lists them).
    """
    if name is not None:
        if name not in configs:
            raise ValueError(f"BuilderConfig '{name}' not found. Available: {list(configs)}")
        return configs[name]
    default = None
    for config_name, params in configs.items():
        if len(configs) == 1 or config_name == "default" or params.get("default"):
            if default is not None:
                raise ValueError(
                    f"Dataset has several default configs: '{default}' and '{config_name}'."
                )
            default = config_name
    if default is None:
        raise ValueError(
            "Config name is missing.\nPlease pick one among the available configs: "
            f"{list(configs)}\nExample of usage:\n\t`load_dataset(PATH, '{next(iter(configs))}')`"
        )
    return configs[default]


def config_options(params: dict[str, Any], known: set[str]) -> dict[str, Any]:
    """The builder options among a configuration's ``params``; the others warned of."""
    reserved = {"default", "data_files", "data_dir"}
    ignored = [p for p in params if p not in known and p not in reserved]
    if ignored:
        warn(f"Some datasets params were ignored: {ignored}. The builder takes {sorted(known)}.")
    return {k: v for k, v in params.items() if k in known}
