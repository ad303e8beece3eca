"""What the benchmark scripts record about the machine and the code they ran on."""
from __future__ import annotations

import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("numpy", "scipy", "highspy", "cvxpy", "clarabel", "onnxruntime", "polytrav")


def _proc_field(path: str, key: str) -> str | None:
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(key):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def machine_info() -> dict:
    """CPU, cores, memory, platform, package versions, git commit (and dirty library files), load."""
    mem = _proc_field("/proc/meminfo", "MemTotal")
    versions = {}
    for pkg in PACKAGES:
        try:
            versions[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            versions[pkg] = None
    git = {}
    try:
        run = lambda *args: subprocess.run(["git", *args], cwd=ROOT, capture_output=True,  # noqa: E731
                                           text=True, check=True).stdout
        git["commit"] = run("rev-parse", "HEAD").strip()
        dirty = run("status", "--porcelain", "core", "plugins", "solvers").split("\n")
        git["dirty_library_files"] = [d.strip() for d in dirty if d.strip()]
    except (OSError, subprocess.CalledProcessError):
        pass
    return {"cpu": _proc_field("/proc/cpuinfo", "model name") or platform.processor(),
            "cores": os.cpu_count(),
            "memory": None if mem is None else f"{int(mem.split()[0]) / 2**20:.1f} GB",
            "platform": platform.platform(), "python": platform.python_version(),
            "versions": versions, "git": git, "loadavg_start": os.getloadavg()}
