"""The reduction A/B's sets (``python -m validation.reduction_ab --set ...``): every config is a twin config the
kernel accepts, its variant differs only in the reduction, and each problem gets a stream-K work table whose
separate-reduction workspace holds a slot per non-final split of its most-split tile. CPU only."""

from dataclasses import asdict

import pytest

from hw_kernels import rules
from hw_kernels.schedule import stream_k_schedule
from validation import config_ab, reduction_ab


@pytest.mark.parametrize("name", sorted(reduction_ab.SETS))
def test_every_config_of_a_set_runs_on_the_twin_with_its_separate_variant(name):
    for (m, n, k), names in reduction_ab.SETS[name].items():
        assert rules.can_implement(m, n, k) == []
        cfgs = config_ab.configs(names, reduction_ab.variant)
        assert len(cfgs) == 2 * len(names)
        for base, var in zip(cfgs[::2], cfgs[1::2], strict=True):
            fields = {f: v for f, v in asdict(base).items() if f in rules.config_problems.__code__.co_varnames}
            assert rules.config_problems(**fields) == [], base.name()
            assert var.reduction == "separate" and asdict(var) == {**asdict(base), "reduction": "separate"}
            assert var.name().endswith("_sr_trace-span") and config_ab.variant_name(base.name(), reduction_ab.variant) == var.name()


def test_the_16_split_set_fills_the_sms_and_gives_each_split_a_slot():
    """128x256 on 2x1 clusters, split-K 16 at 512x512x32768: 4 cluster tiles x 16 splits = 64 cluster units, one
    each on 64 of the 66 clusters; the separate reduction keeps 15 slots per flag, the others one."""
    (m, n, k) = (512, 512, 32768)
    assert "128x256x64_c2x1_rn_sw1_e32_ds16_nd" in reduction_ab.SPLITS16[(m, n, k)]
    sep = stream_k_schedule(m, n, k, 128, 256, 64, 2, 1, "n", 1, "split_k", 16, "separate")
    nd = stream_k_schedule(m, n, k, 128, 256, 64, 2, 1, "n", 1, "split_k", 16, "nondeterministic")
    units = sum(row[0] for row in sep.table)
    assert (units, sep.max_segments, sep.slots, nd.slots) == (64, 1, 15, 1)
    assert sep.workspace_floats == 15 * nd.workspace_floats
