"""What a benchmark run records about the machine and the code it ran on."""
from __future__ import annotations

import importlib.util
import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Distributions whose versions every result file records (``None``: not installed).
PACKAGES = ("polytrav", "numpy", "scipy", "highspy", "cvxpy", "osqp", "clarabel", "ecos",
            "onnxruntime", "torch", "scikit-learn", "numba")  # numba: the `fast` extra's kernels
#: The folders of the library itself: local changes there make a run's numbers not the commit's.
LIBRARY = ("core", "plugins", "solvers")


def machine() -> dict:
    """CPU, cores (and those this process may use), memory, platform, load average."""
    try:
        import psutil

        memory = psutil.virtual_memory().total
    except ImportError:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    cpu = platform.processor()
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                   if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "affinity": sorted(os.sched_getaffinity(0)),
            "memory": f"{memory / 2**30:.1f} GB", "platform": platform.platform(),
            "loadavg": list(os.getloadavg())}


def checkout() -> Path:
    """The checkout ``import polytrav`` loads (found without importing it), else this one."""
    spec = importlib.util.find_spec("polytrav")
    return Path(spec.origin).resolve().parents[1] if spec and spec.origin else ROOT


def commit(root: Path | None = None) -> dict:
    """The commit of a checkout (default: polytrav's, :func:`checkout`), whether any tracked
    file differs from it, and which library files do (``{}`` outside a git checkout)."""
    root = checkout() if root is None else root
    def git(*args):
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True,
                              check=True).stdout

    try:
        sha = git("rev-parse", "HEAD").strip()
        changed = [line.strip() for line in
                   git("status", "--porcelain", "--untracked-files=no").splitlines() if line.strip()]
    except (OSError, subprocess.CalledProcessError):
        return {}
    return {"sha": sha, "dirty": bool(changed),
            "dirty_library_files": [c for c in changed if c.split()[-1].startswith(LIBRARY)]}


def versions() -> dict:
    """Python's and :data:`PACKAGES`' versions."""
    out = {"python": platform.python_version()}
    for pkg in PACKAGES:
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = None
    return out
