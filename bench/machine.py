"""What a benchmark ran on, for its JSON: the CPU (model, cores, the bf16-relevant flags) or the accelerator,
and the versions of the stack. A figure without its machine cannot be compared with another."""

from __future__ import annotations

import os
import platform
import sys
import time

BF16_CPU_FLAGS = ("amx_bf16", "amx_tile", "amx_int8", "avx512_bf16", "avx512_vnni", "avx512f", "avx2")


def cpu_description() -> dict:
    """CPU model name, logical cores this process may use, and which bf16-relevant flags /proc/cpuinfo lists."""
    model, flags = platform.processor() or platform.machine(), set()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                key, _, value = line.partition(":")
                if key.strip() == "model name":
                    model = value.strip()
                elif key.strip() == "flags":
                    flags = set(value.split())
    except OSError:  # not Linux: the model from platform, no flags
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"model": model, "cores": cores, "flags": [f for f in BF16_CPU_FLAGS if f in flags]}


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
