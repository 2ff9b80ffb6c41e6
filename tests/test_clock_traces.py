"""validation.clock_traces: rounds split at the campaign's gaps, variance shares, and the committed
wide campaign's dev traces read end to end (never its held-out part)."""

import json

import numpy as np
import pytest

from validation import clock_traces as ct


def test_split_rounds_cuts_at_long_gaps_only():
    starts = np.array([0.0, 0.001, 0.002, 0.050, 0.051, 0.052, 0.0525, 0.200])
    assert ct.split_rounds(starts).tolist() == [0, 0, 0, 1, 1, 1, 1, 2]
    assert ct.split_rounds(np.array([0.0, 0.001, 0.002])).tolist() == [0, 0, 0]


def test_explained_is_one_for_group_constant_values_and_zero_for_uninformative_groups():
    g = np.array([0, 0, 1, 1, 2, 2])
    assert ct.explained(np.array([1.0, 1.0, 2.0, 2.0, 5.0, 5.0]), g) == pytest.approx(1.0)
    # every group holds the same two values: the group means are all equal, nothing explained
    assert ct.explained(np.array([1.0, 3.0, 1.0, 3.0, 1.0, 3.0]), g) == pytest.approx(0.0)
    assert ct.explained(np.full(6, 2.0), g) == 0.0


def test_measured_util_is_flops_over_peak_at_the_rows_clock():
    r = {"m": 1024, "n": 1024, "k": 1024, "span_us": 10.0, "clock_ghz": 1.5}
    want = 2 * 1024**3 / 10e-6 / (132 * 4096 * 1.5e9)
    assert ct.measured_util(r, 4096, 132) == pytest.approx(want)
    assert ct.measured_util({**r, "span_us": None, "event_us": None}, 4096, 132) is None


def test_committed_dev_traces_give_every_problem_and_both_round_classes():
    res = ct.run()
    assert len(res["problems"]) == len({k.rsplit("|", 1)[0] for k in np.load(ct.LAUNCHES)["keys"]})
    for s in res["problems"].values():
        assert s["rounds"] >= 1 and s["launches"] >= s["rounds"]
        for k in ("r2_config", "r2_round", "r2_position"):
            assert -1e-9 <= s[k] <= 1 + 1e-9
    assert set(res["classes"]) == {"short rounds", "long rounds"}
    assert sum(t["rows"] for t in res["free_rows"]) > 0
    md = ct.markdown(res, "cmd")
    assert "| short rounds |" in md and "neighbours.round_heavy" in md


def test_rows_of_another_split_are_refused(tmp_path, monkeypatch):
    d = json.loads(ct.ROWS.read_text())
    i = d["columns"].index("split")
    d["rows"][0][i] = "held_out"
    p = tmp_path / "rows.json"
    p.write_text(json.dumps(d))
    monkeypatch.setattr(ct, "ROWS", p)
    with pytest.raises(ValueError, match="dev part only"):
        ct.run()
    assert ct.main([]) == 2


def test_round_clock_figure_has_a_panel_per_problem_and_names_a_missing_one():
    import matplotlib
    matplotlib.use("Agg")
    fig = ct.plot_round_clocks(["wide|fp16|1408x4224x4096", "wide|fp16|2048x2048x256"], rounds=2)
    panels = [ax for ax in fig.axes if ax.get_ylabel() == "in-kernel GHz"]
    assert len(panels) == 2 and "1408x4224x4096" in panels[0].get_title()
    assert all(len(ax.lines) == 2 for ax in panels)          # one line per round shown
    with pytest.raises(ValueError, match="not in"):
        ct.plot_round_clocks(["wide|fp16|1x1x1"])
