"""What the host says about itself: the CPU's caches (sysfs, else ``lscpu``) and a device's free
memory (its allocator, or /proc/meminfo on CPU). Best effort: None or [] where unknown.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

from roofline_report.observe.ceilings.sampling import GiB, MiB

CPU_SYSFS_CACHE = Path("/sys/devices/system/cpu/cpu0/cache")

def read_cache_bytes(root: Path = CPU_SYSFS_CACHE) -> int | None:
    """Size in bytes of one instance of the CPU's last-level data cache, or None if unknown.

    Reads sysfs (``index*/level``, ``type``, ``size``) and falls back to ``lscpu``.
    """
    found = _sysfs_cache_bytes(root)
    return found if found is not None else _lscpu_cache_bytes()


def read_cache_hierarchy(root: Path = CPU_SYSFS_CACHE) -> list[dict[str, Any]]:
    """The data and unified caches of CPU 0 from sysfs: ``[{"level", "type", "size"}]`` by
    level, one entry per level (the largest where several share one); [] when unknown."""
    by_level: dict[int, dict[str, Any]] = {}
    try:
        for index in sorted(root.glob("index*")):
            kind = (index / "type").read_text().strip()
            if kind == "Instruction":
                continue
            level = int((index / "level").read_text().strip())
            size = parse_size((index / "size").read_text())
            if size is None:
                continue
            if level not in by_level or size > by_level[level]["size"]:
                by_level[level] = {"level": level, "type": kind, "size": size}
    except (OSError, ValueError):
        return []
    return [by_level[k] for k in sorted(by_level)]


def _sysfs_cache_bytes(root: Path) -> int | None:
    best: tuple[int, int] | None = None
    try:
        for index in sorted(root.glob("index*")):
            if (index / "type").read_text().strip() == "Instruction":
                continue
            level = int((index / "level").read_text().strip())
            size = parse_size((index / "size").read_text())
            if size is not None and (best is None or level > best[0]):
                best = (level, size)
    except (OSError, ValueError):
        return None
    return best[1] if best else None


_UNITS = {
    "": 1,
    "B": 1,
    "K": 1 << 10,
    "KB": 1 << 10,
    "KIB": 1 << 10,
    "M": MiB,
    "MB": MiB,
    "MIB": MiB,
    "G": GiB,
    "GB": GiB,
    "GIB": GiB,
}


def parse_size(text: str) -> int | None:
    """Parse a cache size such as '491520K', '32 MiB' or '2048 KB' (binary units); None if not."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*", text)
    if not match or match.group(2).upper() not in _UNITS:
        return None
    return int(float(match.group(1)) * _UNITS[match.group(2).upper()])


def parse_lscpu(text: str) -> int | None:
    """Last-level cache per instance from ``lscpu`` output (``L3 cache: 32 MiB (2 instances)``)."""
    best: tuple[int, int] | None = None
    for line in text.splitlines():
        match = re.match(
            r"\s*L(\d)\w?\s+cache:\s*([\d.]+\s*[A-Za-z]*)\s*(?:\((\d+) instances?\))?", line
        )
        if not match or "L1i" in line:
            continue
        size = parse_size(match.group(2))
        if size is None:
            continue
        per_instance = size // int(match.group(3) or 1)
        level = int(match.group(1))
        if best is None or level > best[0]:
            best = (level, per_instance)
    return best[1] if best else None


def _lscpu_cache_bytes() -> int | None:
    try:
        done = subprocess.run(
            ["lscpu"],
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
            env={**os.environ, "LC_ALL": "C"},
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return parse_lscpu(done.stdout)


def free_memory_bytes(device: Any) -> int | None:
    """Free memory of ``device``: the allocator's limit minus use on accelerators, MemAvailable
    from /proc/meminfo on CPU; None if unknown."""
    try:
        stats = device.memory_stats()
    except Exception:
        stats = None
    if stats and "bytes_limit" in stats:
        return int(stats["bytes_limit"]) - int(stats.get("bytes_in_use", 0))
    if getattr(device, "platform", "") != "cpu":
        return None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None

