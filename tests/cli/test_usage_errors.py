"""Every numeric flag of every subcommand, given 0, a negative number and a non-number.

Through the real parser (``main``): a usage error exits 2 with one line on stderr naming the
flag, and nothing is written; a value the flag documents as meaningful (``--max-size 0``) runs.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator

import pytest

from arrowmix._cli import humanize
from arrowmix._cli.main import build_parser, main

NUMERIC_TYPES = {
    int,
    float,
    humanize.parse_size,
    humanize.positive_size,
    humanize.positive_int,
    humanize.parse_duration,
}

#: (command, flag) -> the values that are usage errors ("0" is valid for --max-size).
CASES = {
    ("chunk", "--rows-per-chunk"): ["0", "-1", "-5", "ten", "1.5"],
    ("chunk", "--chunk-size"): ["0", "0MB", "-1", "-5", "ten", "64XB"],
    ("cleanup-cache", "--older-than"): ["0", "-1", "-5", "ten", "7"],
    ("cleanup-cache", "--max-size"): ["-1", "-5", "ten", "20 G B"],
}


def numeric_flags(
    parser: argparse.ArgumentParser, prog: tuple[str, ...] = ()
) -> Iterator[tuple[str, str]]:
    """``(command, flag)`` of every option whose type parses a number, in every subcommand."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from numeric_flags(sub, (*prog, name))
        elif action.option_strings and action.type in NUMERIC_TYPES:
            yield " ".join(prog), max(action.option_strings, key=len)


def test_every_numeric_flag_is_covered() -> None:
    assert sorted(numeric_flags(build_parser())) == sorted(CASES)


def _args(command: str, tmp_path) -> list[str]:
    if command == "chunk":
        (tmp_path / "a.txt").write_text("one\ntwo\n")
        return ["chunk", str(tmp_path / "a.txt"), "--out", str(tmp_path / "out")]
    return [*command.split(), str(tmp_path), "--dry-run"]


@pytest.mark.parametrize(
    ("command", "flag", "value"),
    [(c, f, v) for (c, f), values in CASES.items() for v in values],
)
def test_bad_value_is_one_line_naming_the_flag(tmp_path, capsys, command, flag, value) -> None:
    status = main([*_args(command, tmp_path), flag, value])
    out, err = capsys.readouterr()
    assert status == 2, (out, err)
    assert err.count("\n") == 1 and err.startswith(f"arrowmix {command}: error: argument {flag}")
    assert f"`arrowmix {command} --help`" in err and "Traceback" not in err
    assert out == "" and not (tmp_path / "out").exists()


@pytest.mark.parametrize("value", ["1", "1B", "1KiB"])
def test_smallest_chunk_size_runs(tmp_path, capsys, value) -> None:
    assert main([*_args("chunk", tmp_path), "--chunk-size", value]) == 0
    assert "2 rows from 1 text file(s)" in capsys.readouterr().out


@pytest.mark.parametrize(("flag", "value"), [("--max-size", "0"), ("--older-than", "0s")])
def test_zero_selects_every_entry_not_in_use(tmp_path, make_cache, capsys, flag, value) -> None:
    paths = make_cache("0123456789abcdef", age=60)
    assert main(["cleanup-cache", str(tmp_path), "--dry-run", flag, value]) == 0
    out = capsys.readouterr().out
    assert f"would remove  {paths[0]}" in out
    assert main(["cleanup-cache", str(tmp_path), flag, value]) == 0
    assert not any(os.path.exists(p) for p in paths)


def test_decimal_and_binary_sizes_are_both_taken_and_printed(tmp_path, make_cache, capsys) -> None:
    """--max-size 2KB (2000 bytes) and 2KiB (2048) differ, and the output says which is which."""
    for i, age in enumerate((300, 200, 100)):
        make_cache(f"{i:016x}", rows=100, age=age)
    sizes = sorted(os.path.getsize(p) for p in tmp_path.iterdir())
    assert main(["cleanup-cache", str(tmp_path), "--dry-run", "--max-size", "2KiB"]) == 0
    out = capsys.readouterr().out
    assert "max 2.0 KiB = 2048 bytes" in out
    total = out.splitlines()[-1]
    freed = int(total.split("(")[1].split(" bytes")[0])
    assert total.startswith(
        f"Would free {freed / 1024:.1f} KiB = {freed / 1000:.1f} KB ({freed} bytes)"
    )
    assert sum(sizes) - freed <= 2048 < sum(sizes) - freed + max(sizes)
    assert main(["cleanup-cache", str(tmp_path), "--dry-run", "--max-size", "2KB"]) == 0
    assert "max 2.0 KiB = 2000 bytes" in capsys.readouterr().out  # not 2048
