"""Peak memory of the running benchmark: process RSS (CPU) and, where the backend reports it, device memory."""

from __future__ import annotations

import resource
import sys


def peak_memory() -> dict:
    """{"process_peak_rss_mb": ..., "device_peak_mb": ... or None} for this process so far."""
    rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    rss_mb = rss_kb / (1024 * 1024 if sys.platform == "darwin" else 1024)  # macOS reports bytes
    device_mb = None
    if "jax" in sys.modules:
        import jax

        stats = [d.memory_stats() for d in jax.local_devices()]
        peaks = [s.get("peak_bytes_in_use") for s in stats if s]
        if peaks and all(p is not None for p in peaks):
            device_mb = max(peaks) / 2**20
    return {"process_peak_rss_mb": round(rss_mb, 1), "device_peak_mb": device_mb and round(device_mb, 1)}


def minor_page_faults() -> int:
    """Page faults this process has taken so far that needed no disk read: a fresh page's first touch, which
    is what XLA:CPU's per-execution buffers cost without huge pages (t2t_jax/huge_pages.py)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
