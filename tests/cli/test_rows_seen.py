"""``arrowmix rows-seen``: the rows of the steps after a checkpoint, from the command line."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from arrowmix._cli.main import main

SCRIPT = textwrap.dedent(
    """
    import arrowmix as am

    DS = am.Dataset.from_dict({"ids": [[i, i + 1] for i in range(0, 40, 2)]})

    def make_pipeline(provenance=False):
        s = DS.to_stream(seed=0, infinite=False, provenance=provenance)
        return s.shuffle(4, seed=1).batch(3).collate("ids")

    def plain():
        return make_pipeline()

    if __name__ == "__main__":
        raise SystemExit("the training run must not start")
    """
)


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "train.py"
    path.write_text(SCRIPT)
    return path


def test_prints_the_rows_of_the_steps_after_the_checkpoint(script, tmp_path, capsys):
    names: dict = {}
    exec(SCRIPT.replace('__name__ == "__main__"', "False"), names)
    run = names["make_pipeline"]()
    next(run)
    ckpt = tmp_path / "trainer.json"
    ckpt.write_text(json.dumps({"data": run.state_dict(), "step": 1}))
    next(run)
    step3 = next(run)
    assert main(["rows-seen", f"{script}:make_pipeline", str(ckpt), "--key", "data",
                 "--skip", "1"]) == 0  # fmt: skip
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1
    got = json.loads(lines[0])
    assert got["step"] == 2
    rows = [names["DS"][r["index"]]["ids"] for r in got["sources"]]
    assert rows == step3["input_ids"].tolist()
    assert main(["rows-seen", f"{script}:make_pipeline", "start", "--steps", "2"]) == 0
    assert [json.loads(x)["step"] for x in capsys.readouterr().out.splitlines()] == [1, 2]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["{s}:plain", "start"], "no source with provenance"),
        (["{s}:missing", "start"], "has no function 'missing'"),
        (["nowhere.py:f", "start"], "does not exist"),
        (["{s}", "start"], "must be file.py:function"),
        (["{s}:make_pipeline", "{bad}"], "is not JSON"),
        (["{s}:make_pipeline", "{s}.json"], "cannot be read (No such file or directory)"),
        (["{s}:make_pipeline", "{other}", "--key", "data"], "no key 'data'"),
        (["{s}:make_pipeline", "{other}"], "cannot load this state"),
    ],
)
def test_errors_name_the_problem(script, tmp_path, capsys, args, message):
    (tmp_path / "bad.json").write_text("{")
    (tmp_path / "other.json").write_text(json.dumps({"format": 1, "state": {}, "x": 1}))
    paths = {"s": script, "bad": tmp_path / "bad.json", "other": tmp_path / "other.json"}
    assert main(["rows-seen", *(a.format(**paths) for a in args)]) == 1
    assert message in capsys.readouterr().err


def test_counts_are_checked(script, capsys):
    assert main(["rows-seen", f"{script}:make_pipeline", "start", "--steps", "-1"]) == 2
    assert "invalid count '-1'" in capsys.readouterr().err
