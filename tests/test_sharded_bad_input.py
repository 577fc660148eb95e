"""Bad sharded input in a config: one line naming the workload and the problem, exit 2, nothing
written (the check runs before any measurement)."""

from __future__ import annotations

from pathlib import Path

import pytest

from roofline_report import cli
from roofline_report.errors import EXIT_INPUT

BASE = """
[[workload]]
name = "{name}"
function = "my_mod:f"
dims = {{ n = 12 }}
args = [ {{ shape = ["n", 8], dtype = "float32" }} ]
{extra}
"""


@pytest.mark.parametrize(
    ("name", "extra", "problem"),
    [
        ("too big", 'mesh = { d = 16 }\npartition = [ ["d", ""] ]',
         "the mesh has 16 devices; the sharded analysis runs on 8"),
        ("unknown axis", 'mesh = { d = 4 }\npartition = [ ["x", ""] ]',
         "unknown axis 'x' (mesh axes: d)"),
        ("not dividing", 'mesh = { d = 8 }\npartition = [ ["d", ""] ]',
         "dimension 0 of args[0] (12 at the declared dims) is not divisible by mesh axis 'd' (8)"),
    ],
)
def test_bad_mesh_or_partition(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str,
                               extra: str, problem: str) -> None:
    config = tmp_path / "bad.toml"
    config.write_text(BASE.format(name=name, extra=extra), encoding="utf-8")
    out = tmp_path / "out"
    code = cli.main(["--config", str(config), "--only-config", "--progress", "none",
                     "--out", str(out)])  # fmt: skip
    assert code == EXIT_INPUT == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert f"'{name}'" in err[0] and problem in err[0]
    assert not out.exists()
