"""Bad sharded input in a config: one line naming the workload and the problem, exit 2, nothing
written (the check runs before any measurement)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from roofline_report import cli
from roofline_report.errors import EXIT_INPUT
from roofline_report.results.schema_sharding import ShardedCollective, Sharding

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


# --------------------------------------------------------------------------------------------
# What the analysis says instead of failing
# --------------------------------------------------------------------------------------------

FIXTURE = Path(__file__).parent / "fixtures" / "cpu_results.json"


def _steps_doc() -> Sharding:
    """The recorded run's sharded part: its training steps, as the sharding child wrote them."""
    from roofline_report.results.io import parse

    sharding = parse(json.loads(FIXTURE.read_text(encoding="utf-8"))).sharding
    assert isinstance(sharding, Sharding)
    return sharding


def test_a_preset_without_a_network_figure_is_not_projected_past_its_pod() -> None:
    from roofline_report.analysis.sharding_records import NotProjected, ShardingStudy
    from roofline_report.analysis.study import step_study
    from roofline_report.report.sharding_view import ShardingView, UnprojectedRow, sharding

    sh = _steps_doc()
    model = step_study(sh, 100e9, 20e9, 5e9, preset="TPU v5e")
    rows = [r for r in model.projection.rows if r.devices == 1024]
    assert rows and all(isinstance(r, NotProjected) for r in rows)
    reasons = [r.reason for r in rows if isinstance(r, NotProjected)]
    pod = ("beyond one TPU v5e pod of 256 chips: no published network figure across pods for "
           "TPU v5e")
    # A step whose weights split over 1,024 devices is refused for the pod; one whose weights
    # do not is refused for that first.
    assert all(reason == pod or "cannot be split over 1,024 devices" in reason
               for reason in reasons)
    assert pod in reasons
    view = sharding(ShardingStudy(sh, steps=model))
    assert isinstance(view, ShardingView) and view.steps is not None
    shown = [r for r in view.steps.projection if r.devices == "1,024"]
    assert shown and all(isinstance(r, UnprojectedRow) for r in shown)
    assert all(r.reason.startswith("not projected: ") for r in shown)  # type: ignore[union-attr]
    assert any(r.reason.startswith("not projected: beyond one TPU v5e pod")  # type: ignore[union-attr]
               for r in shown)


def test_a_collective_over_one_device_is_free_and_said_so() -> None:
    from roofline_report.analysis.comm_network import collective_cost, flat_network
    from roofline_report.analysis.sharding_records import StepCollective
    from roofline_report.report.sharding_view import _ab_collective

    cost = collective_cost("all-reduce", 4096, 1, flat_network(1e9, 1e-6))
    assert (cost.bytes, cost.steps, cost.time) == (0, 0, 0)
    record = ShardedCollective.model_validate(
        {"op": "all-reduce", "result_bytes": 4096, "group_size": 1, "bytes_per_device": 0,
         "replica_groups": None, "trip_count": 1, "loops": []})
    row = _ab_collective(StepCollective("w", record, cost, unit_axes=(), device_ids=None),
                         "hypothetical")
    assert row.groups == "one device: sends nothing"
    row = _ab_collective(StepCollective("w", record, cost, unit_axes=("one",), device_ids=None),
                         "hypothetical")
    assert row.groups == "one device (mesh axis 'one' of size 1): sends nothing"


@pytest.mark.slow
def test_a_sharded_workload_without_a_reference_renders(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It used to be an internal error after measuring (a null check in results.json): now it
    is measured like an unsharded workload and the report says the check was not run."""
    data = json.loads(FIXTURE.read_text(encoding="utf-8"))
    data["sharding"]["workloads"][0]["check"] = {
        "available": False, "ran": True, "reason": "no NumPy reference was declared"}
    saved = tmp_path / "results.json"
    saved.write_text(json.dumps(data), encoding="utf-8")
    out = tmp_path / "out"
    assert cli.main(["--from-json", str(saved), "--progress", "none", "--out", str(out)]) == 0
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "not checked: no NumPy reference was declared" in report


# --------------------------------------------------------------------------------------------
# Replica groups: device ids, and groups that are not a partition
# --------------------------------------------------------------------------------------------

_HLO = """HloModule jit_f, num_partitions=8

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

ENTRY %main (x: f32[8]) -> f32[8] {
  %x = f32[8]{0} parameter(0)
  ROOT %ar = f32[8]{0} all-reduce(%x), channel_id=1, replica_groups=GROUPS, use_global_device_ids=true, to_apply=%add
}
"""  # noqa: E501


@pytest.mark.parametrize(
    ("groups", "problem"),
    [
        ("{{0,1,2,3},{3,4,5,6}}", "device 3 is in two groups"),
        ("{{0,1,2},{3,4,5,6,7}}", "its groups have different sizes"),
        ("{{0,1,2,3},{4,5,6,9}}", "device 9 is not one of the program's 8"),
    ],
)
def test_a_replica_group_that_is_not_a_partition_is_refused(groups: str, problem: str) -> None:
    from roofline_report.errors import InputError
    from roofline_report.hlo.compiled import collective_records

    with pytest.raises(InputError) as caught:
        collective_records(_HLO.replace("GROUPS", groups), 8)
    message = str(caught.value)
    assert "\n" not in message and "not a partition of the devices" in message
    assert message.endswith(problem)
    [ok] = collective_records(_HLO.replace("GROUPS", "{{0,2,4,6},{1,3,5,7}}"), 8)
    assert ok["group_size"] == 4


def test_replica_groups_are_shown_as_device_ids() -> None:
    """The HLO numbers a device by its place in the program's device assignment: a mesh over
    devices [0,2,4,6,1,3,5,7] runs the group of places {0,1,2,3} on devices {0,2,4,6}."""
    from roofline_report.analysis.sharding_records import StepCollective
    from roofline_report.report.sharding_view import _ab_collective, device_groups

    order = [0, 2, 4, 6, 1, 3, 5, 7]
    groups = [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert device_groups(groups, order) == [[0, 2, 4, 6], [1, 3, 5, 7]]
    assert device_groups(groups, None) == groups
    record = ShardedCollective.model_validate(
        {"op": "all-reduce", "replica_groups": groups, "group_size": 4, "result_bytes": 32})
    row = StepCollective("w", record, priced=None, unit_axes=(), device_ids=tuple(order))
    assert _ab_collective(row, "hypothetical").groups == "2 x 4, device ids {0,2,4,6}{1,3,5,7}"


def test_errors_are_one_line_cut_at_a_word() -> None:
    from roofline_report.observe.sharded_analysis import clip, one_line

    assert one_line(AssertionError()) == "AssertionError"
    long = "shard_map " + "argument has an incompatible sharding " * 20
    line = one_line(ValueError(long))
    assert len(line) <= 300 and line.endswith("…") and "\n" not in line
    assert line[:-1].split()[-1] in long.split()
    assert clip("short") == "short"
