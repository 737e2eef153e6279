"""What a benchmark ran on, for its JSON: the CPU (model, cores, the bf16-relevant flags) or the accelerator,
the host's page settings, and the versions of the stack. A figure without its machine cannot be compared with
another."""

from __future__ import annotations

import os
import pathlib
import platform
import sys
import time

BF16_CPU_FLAGS = ("amx_bf16", "amx_tile", "amx_int8", "avx512_bf16", "avx512_vnni", "avx512f", "avx2")


CPUINFO_IDS = {"cpu family": "family", "model": "model_number", "stepping": "stepping"}


def cpu_description(cpuinfo: str = "/proc/cpuinfo", cache_dir: str = "/sys/devices/system/cpu/cpu0/cache") -> dict:
    """CPU model name, logical cores this process may use, which bf16-relevant flags /proc/cpuinfo lists, and,
    where Linux says, the family/model/stepping (one model name covers several generations, which differ in
    speed) and the cache sizes of core 0."""
    model, flags, ids = platform.processor() or platform.machine(), set(), {}
    try:
        with open(cpuinfo, encoding="utf-8") as handle:
            for line in handle:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "model name":
                    model = value.strip()
                elif key == "flags":
                    flags = set(value.split())
                elif key in CPUINFO_IDS and CPUINFO_IDS[key] not in ids and value.strip().isdigit():
                    ids[CPUINFO_IDS[key]] = int(value)
    except OSError:  # not Linux: the model from platform, no flags
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    report = {"model": model, "cores": cores, "flags": [f for f in BF16_CPU_FLAGS if f in flags], **ids}
    caches = cache_sizes(cache_dir)
    return {**report, "caches": caches} if caches else report


def cache_sizes(cache_dir: str) -> dict:
    """{"L1d": "32K", "L1i": "32K", "L2": "512K", "L3": "32768K"} as sysfs names them; {} where it has none."""
    sizes = {}
    for index in sorted(pathlib.Path(cache_dir).glob("index*")):
        try:
            level, kind, size = (
                (index / name).read_text(encoding="utf-8").strip() for name in ("level", "type", "size")
            )
        except OSError:
            continue
        suffix = {"Data": "d", "Instruction": "i"}.get(kind, "")
        sizes[f"L{level}{suffix}"] = size
    return sizes


def host_memory(environ=os.environ) -> dict:
    """The kernel's transparent-huge-page mode and the glibc tunables this process started with: XLA:CPU steps
    ran up to 1.58× faster (median 1.27×) with huge pages (t2t_jax/huge_pages.py), so a CPU figure depends on them."""
    from t2t_jax.huge_pages import TUNABLES_ENV, thp_mode

    return {"transparent_huge_pages": thp_mode(), "glibc_tunables": environ.get(TUNABLES_ENV, "")}


def describe() -> dict:
    """The machine and versions: CPU, JAX backend and devices, and the CUDA/cuDNN and torch versions where present."""
    import jax
    import jaxlib

    device = jax.devices()[0]
    report = {
        "cpu": cpu_description(),
        "python": platform.python_version(),
        "jax": jax.__version__,
        "jaxlib": jaxlib.__version__,
        "backend": jax.default_backend(),
        "device_kind": device.device_kind,
        "device_count": jax.device_count(),
        "platform_version": getattr(device.client, "platform_version", None),
        "host_memory": host_memory(),
    }
    try:
        import torch

        report["torch"] = torch.__version__
        if torch.cuda.is_available():
            report["torch_cuda"] = torch.version.cuda
    except ImportError:
        pass
    return report


def recorded(report: dict) -> dict:
    """``report`` as a benchmark prints it: the machine (``describe``, merged into any machine fields it has),
    the command line and the date first."""
    machine = report.get("machine")
    stamped = {
        "machine": {**describe(), **(machine if isinstance(machine, dict) else {})},
        "command": "python " + " ".join(sys.argv),
        "date": time.strftime("%Y-%m-%d"),
    }
    return {**stamped, **{key: value for key, value in report.items() if key not in stamped}}
