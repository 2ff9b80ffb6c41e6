"""Compile the microbenchmark kernels for sm_90a with nvcc (on this CPU, or on the GPU machine).

    python -m validation.microbench.build [--out DIR]   # every cubin, with ptxas's report beside it

Sources: the ``.cu`` files of ``cuda/`` and the generated wgmma source (:mod:`.wgmma_cuda`). Cubins go to
``$WSIM_MICROBENCH_BUILD`` or ``validation/microbench/build/`` (git-ignored); a kernel module is
rebuilt when its source is newer than its cubin (unless ``$WSIM_MICROBENCH_PREBUILT`` is set: the GPU job
ships cubins built here, whose file times may not survive the copy). ptxas's warnings are kept: a wgmma kernel that ptxas
serialised (``wgmma.mma_async instructions are serialized``) would time something else, so
:func:`build_all` raises on it.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
from pathlib import Path

from .mainloop_cuda import cuda_source as mainloop_source
from .wgmma_cuda import cuda_source

CUDA_DIR = Path(__file__).resolve().parent / "cuda"
ARCH_FLAGS = ("-gencode=arch=compute_90a,code=sm_90a",)
#: Kernel modules: name -> source (a file of cuda/, or a callable returning generated source).
STATIC_MODULES = ("util", "tma", "epilogue", "sync", "cluster", "power", "l2share", "fixup_l2")
GENERATED_MODULES = ("wgmma_f16", "wgmma_bf16", "mainloop_f16")


def build_dir() -> Path:
    d = Path(os.environ.get("WSIM_MICROBENCH_BUILD", Path(__file__).resolve().parent / "build"))
    d.mkdir(parents=True, exist_ok=True)
    return d


def nvcc() -> str | None:
    return shutil.which("nvcc")


def _source(name: str) -> tuple[Path, bool]:
    """The .cu file of module ``name`` (generated ones are written into the build dir)."""
    if name in STATIC_MODULES:
        return CUDA_DIR / f"{name}.cu", False
    if name in GENERATED_MODULES:
        path = build_dir() / f"{name}.cu"
        text = mainloop_source() if name == "mainloop_f16" else cuda_source(name.split("_", 1)[1])
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
        return path, True
    raise KeyError(f"unknown kernel module {name!r}; known: {', '.join(STATIC_MODULES + GENERATED_MODULES)}")


def compile_module(name: str, *, force: bool = False) -> tuple[Path, str]:
    """Compile one kernel module to ``<build>/<name>.cubin``; returns (cubin, ptxas report)."""
    src, _ = _source(name)
    out = build_dir() / f"{name}.cubin"
    log = build_dir() / f"{name}.log"
    deps = [src, CUDA_DIR / "common.cuh"]
    fresh = all(out.stat().st_mtime >= d.stat().st_mtime for d in deps) if out.exists() else False
    if not force and out.exists() and log.exists() and (fresh or os.environ.get("WSIM_MICROBENCH_PREBUILT")):
        return out, log.read_text()
    exe = nvcc()
    if exe is None:
        raise RuntimeError(f"kernel module {name}: no cubin in {build_dir()} and no nvcc on PATH to build it")
    cmd = [exe, *ARCH_FLAGS, "-cubin", "-O3", "-std=c++17", "-diag-suppress", "550", "-Xptxas", "-v", "-I", str(CUDA_DIR),
           "-o", str(out), str(src)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    report = p.stdout + p.stderr
    if p.returncode != 0:
        raise RuntimeError(f"nvcc failed on {src.name} (exit {p.returncode}):\n{report[-4000:]}")
    log.write_text(report)
    return out, report


def ptxas_problems(report: str) -> list[str]:
    """Lines of a ptxas report that make a timing meaningless: serialised wgmma, spills, stack frames."""
    bad = []
    for line in report.splitlines():
        if "serialized" in line or "Potential Performance Loss" in line:
            bad.append(line.strip())
        m = re.search(r"(\d+) bytes spill stores", line)
        if m and int(m.group(1)) > 0:
            bad.append(line.strip())
    return bad


def cubin_path(name: str) -> Path:
    """The cubin of ``name``, building it if needed (and possible)."""
    return compile_module(name)[0]


def build_all(force: bool = False) -> dict[str, list[str]]:
    """Build every module; returns {module: ptxas problems}; raises if any module has one."""
    problems = {}
    for name in STATIC_MODULES + GENERATED_MODULES:
        _, rep = compile_module(name, force=force)
        problems[name] = ptxas_problems(rep)
    bad = {k: v for k, v in problems.items() if v}
    if bad:
        raise RuntimeError(f"ptxas problems: {bad}")
    return problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="build directory (default: $WSIM_MICROBENCH_BUILD or validation/microbench/build)")
    ap.add_argument("--force", action="store_true")
    a = ap.parse_args(argv)
    if a.out:
        os.environ["WSIM_MICROBENCH_BUILD"] = a.out
    build_all(force=a.force)
    for name in STATIC_MODULES + GENERATED_MODULES:
        print(f"{name}: {cubin_path(name)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
