"""Each of a few twin configs in two forms (a base and a variant of it) timed beside cuBLAS, alternating on
the same random-normal fp16 inputs, every output checked against a float32 reference first (the campaign's
``measure_shape``): the GPU run, the report's header and the command line that :mod:`validation.fixup_ab`
and :mod:`validation.reduction_ab` share.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from hw_kernels import records as R
from hw_kernels.host import KernelConfig

Variant = Callable[[KernelConfig], KernelConfig]


def configs(names, variant: Variant) -> list[KernelConfig]:
    """Each named config, span-instrumented, followed by its variant."""
    out = []
    for name in names:
        cfg = KernelConfig.from_name(name)
        if cfg is None:
            raise ValueError(f"config {name!r}: not a twin config name")
        cfg = replace(cfg, instrument=R.LEVEL_SPAN)
        out += [cfg, variant(cfg)]
    return out


def variant_name(name: str, variant: Variant) -> str:
    """The instrumented name of ``name``'s config in its variant form."""
    return variant(replace(KernelConfig.from_name(name.replace("_trace-span", "")), instrument=R.LEVEL_SPAN)).name()


def run(out: Path, time_limit: float, phase: str, cases: dict, variant: Variant, seed0: int) -> Path:
    """Every problem of ``cases`` (problem -> config names) while time is left; ``OUT/<phase>.json`` after each."""
    from validation.campaign import Campaign, Gpu
    out.mkdir(parents=True, exist_ok=True)
    command = f"python -m validation.{phase} " + " ".join(sys.argv[1:])
    camp = Campaign(Gpu(out, print), out, command, time.time() + time_limit, quick=False)
    path = out / f"{phase}.json"
    for i, (shape, names) in enumerate(cases.items()):
        if camp.left() < 30:
            camp.res["skipped"].append(f"{shape}: out of time")
            continue
        camp.res["rows"] += camp.measure_shape(phase, "fp16", shape, configs(names, variant), budget_s=6.0,
                                               max_rounds=40, min_rounds=5, seed=seed0 + i)
        path.write_text(json.dumps(camp.res, separators=(",", ":"), default=str))  # a cut run keeps its shapes
    return path


def header(res: dict, title: str, written_by: str = "") -> list[str]:
    """The report's title (``title`` then the device), who wrote it and the GPU run it reads."""
    env = res["env"]
    return [f"# {title} {env.get('device')}", "", *([f"Written by `{written_by}`.", ""] if written_by else []),
            f"GPU run: `{env.get('command')}`; {env.get('device')}, driver {env.get('driver')}, CuTe DSL "
            f"{env.get('nvidia_cutlass_dsl')}, {env.get('date_utc')}. Median CUDA-event time of queued launches, "
            "alternating with cuBLAS on the same inputs; every output checked against a float32 reference.", ""]


def main(argv, doc: str, phase: str, cases_of: Callable[[argparse.Namespace], dict], variant: Variant, seed0: int,
         report: Callable[[dict, str], str], add_args: Callable[[argparse.ArgumentParser], None]) -> int:
    """``--out OUT`` (GPU run, then the table) or ``--report RUN.json [--md OUT.md]`` (the table, anywhere)."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--out", type=Path)
    ap.add_argument("--time-limit", type=float, default=300.0)
    add_args(ap)
    ap.add_argument("--report", type=Path)
    ap.add_argument("--md", type=Path)
    a = ap.parse_args(argv)
    if a.report:
        text = report(json.loads(a.report.read_text()), f"python -m validation.{phase} " + " ".join(
            sys.argv[1:] if argv is None else argv))
        if a.md:
            a.md.write_text(text)
        print(text, end="")
        return 0
    if not a.out:
        ap.error("give --out (GPU run) or --report")
    print(report(json.loads(run(a.out, a.time_limit, phase, cases_of(a), variant, seed0).read_text()), ""), end="")
    return 0
