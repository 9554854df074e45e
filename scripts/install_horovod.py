#!/usr/bin/env python3
"""Get a working Horovod 0.28.1 for the installed TensorFlow with one command.

Nobody ships a Horovod wheel for current TensorFlow, and `pip install horovod`
fails to compile against it. This script downloads Horovod's source
distribution from the package index, applies the build fix recorded in
DESIGN.md section 6, builds a wheel (Gloo always; MPI when `mpicxx` is on the
PATH; NCCL GPU operations when CUDA and NCCL are found), caches the wheel
outside the repository keyed by the Horovod, TensorFlow and Python versions,
installs it into the running Python and checks that `hvd.init()` works.

    python scripts/install_horovod.py                  # build once, then reuse the cached wheel
    python scripts/install_horovod.py --force          # rebuild even if a wheel is cached
    python scripts/install_horovod.py --print-cache-dir

The cache lives in ${TRAINSTACK_CACHE:-~/.cache/trainstack}/horovod/. The
build takes about 2 minutes on two cores (115 s measured); its log is written next to the
wheel (build.log) and streamed as a heartbeat. Standard library only, so it
runs before anything else is installed (TensorFlow must be installed).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from pathlib import Path

HOROVOD_VERSION = "0.28.1"
# horovod's own runtime requirements; setup.py also wants them at build time
HOROVOD_REQUIREMENTS = ["cloudpickle", "psutil", "pyyaml", "packaging", "cffi>=1.4.0"]
# the one CMake line that breaks the build: XLA's headers moved in current TensorFlow
XLA_SOURCE_LINE = 'list(APPEND TF_SOURCES "${PROJECT_SOURCE_DIR}/horovod/tensorflow/xla_mpi_ops.cc")'
HEARTBEAT_SECONDS = 30
VERIFY_CODE = "import horovod.tensorflow as hvd; hvd.init(); print('horovod size', hvd.size(), 'rank', hvd.rank())"


class InstallError(RuntimeError):
    """A step failed; the message says which and what to do."""


def run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    print("+", " ".join(cmd), flush=True)
    return subprocess.run(cmd, check=True, **kwargs)


def tensorflow_info() -> dict[str, str]:
    """TensorFlow's version and header directory, asked of a child Python (TF's import is noisy and slow)."""
    code = ("import json, sys, tensorflow as tf; "
            "json.dump({'version': tf.__version__, 'include': tf.sysconfig.get_include()}, sys.stdout)")
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise InstallError(f"TensorFlow is not importable by {sys.executable}; install tensorflow first.\n"
                           f"{proc.stderr.strip()[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def cache_root() -> Path:
    return Path(os.environ.get("TRAINSTACK_CACHE", "~/.cache/trainstack")).expanduser() / "horovod"


def cache_dir(tf_version: str) -> Path:
    py = f"cp{sys.version_info.major}{sys.version_info.minor}"
    return cache_root() / f"horovod-{HOROVOD_VERSION}-tf{tf_version}-{py}"


def find_nccl() -> str | None:
    """NCCL's home when CUDA (nvcc) and nccl.h are both found, else None."""
    cuda_home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or "/usr/local/cuda"
    if not (shutil.which("nvcc") or Path(cuda_home, "bin", "nvcc").exists()):
        return None
    candidates = [os.environ.get("HOROVOD_NCCL_HOME"), os.environ.get("NCCL_HOME"), cuda_home, "/usr"]
    for home in filter(None, candidates):
        if Path(home, "include", "nccl.h").exists():
            return home
    return None


def build_config() -> dict[str, str]:
    """The HOROVOD_* switches for this machine: which optional backends get compiled in."""
    env = {"HOROVOD_WITH_TENSORFLOW": "1", "HOROVOD_WITH_GLOO": "1",
           "HOROVOD_WITHOUT_PYTORCH": "1", "HOROVOD_WITHOUT_MXNET": "1"}
    if shutil.which("mpicxx"):
        env["HOROVOD_WITH_MPI"] = "1"
    else:
        env["HOROVOD_WITHOUT_MPI"] = "1"
    nccl = find_nccl()
    if nccl:
        env["HOROVOD_GPU_OPERATIONS"] = "NCCL"
        env["HOROVOD_NCCL_HOME"] = nccl
    return env


def cached_wheel(directory: Path, config: dict[str, str]) -> Path | None:
    """The cached wheel if it was built with the same backends as this machine would build now."""
    wheels = sorted(directory.glob("horovod-*.whl"))
    info = directory / "build.json"
    if not wheels or not info.exists():
        return None
    if json.loads(info.read_text()).get("config") != config:
        print(f"cached wheel in {directory} was built with other backends; rebuilding", flush=True)
        return None
    return wheels[-1]


def download_sdist(workdir: Path) -> Path:
    run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
         f"horovod=={HOROVOD_VERSION}", "-d", str(workdir)])
    archives = list(workdir.glob(f"horovod-{HOROVOD_VERSION}.tar.gz"))
    if not archives:
        raise InstallError(f"pip download left no horovod-{HOROVOD_VERSION}.tar.gz in {workdir}")
    with tarfile.open(archives[0]) as tar:
        if hasattr(tarfile, "data_filter"):
            tar.extractall(workdir, filter="data")
        else:  # Python < 3.12 without the backported filter
            tar.extractall(workdir)
    return workdir / f"horovod-{HOROVOD_VERSION}"


def patch_sources(source: Path) -> None:
    """Drop the XLA ops from the TensorFlow extension (DESIGN.md section 6); fail loudly if the line moved."""
    cmake = source / "horovod" / "tensorflow" / "CMakeLists.txt"
    lines = cmake.read_text().splitlines(keepends=True)
    kept = [line for line in lines if line.strip() != XLA_SOURCE_LINE]
    if len(lines) - len(kept) != 1:
        raise InstallError(f"expected exactly one line {XLA_SOURCE_LINE!r} in {cmake}, found "
                           f"{len(lines) - len(kept)}; the sdist is not Horovod {HOROVOD_VERSION} as expected")
    cmake.write_text("".join(kept))
    print(f"patched {cmake.relative_to(source)}: removed xla_mpi_ops.cc", flush=True)


def stream_to_log(cmd: list[str], env: dict[str, str], log: Path) -> None:
    """Run a long build with its output in `log`; print a heartbeat, and the log's tail on failure."""
    print("+", " ".join(cmd), f"(log: {log})", flush=True)
    start = time.monotonic()
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
        done = threading.Event()

        def heartbeat() -> None:
            while not done.wait(HEARTBEAT_SECONDS):
                print(f"  ... building, {time.monotonic() - start:.0f}s: {_progress(log)}", flush=True)

        thread = threading.Thread(target=heartbeat, daemon=True)
        thread.start()
        code = proc.wait()
        done.set()
        thread.join()
    if code != 0:
        print(_tail(log, 60), file=sys.stderr)
        raise InstallError(f"building the Horovod wheel failed (exit {code}) after "
                           f"{time.monotonic() - start:.0f}s; full log: {log}")
    print(f"built in {time.monotonic() - start:.0f}s", flush=True)


def _progress(log: Path) -> str:
    """The build's latest progress line (CMake's "[ 42%] Building ..."), else its last line."""
    lines = _tail(log, 200).splitlines()
    marked = [line for line in lines if "%]" in line]
    return (marked or lines or [""])[-1].strip()[:150]


def _tail(path: Path, n: int) -> str:
    try:
        return "".join(path.read_text(errors="replace").splitlines(keepends=True)[-n:])
    except OSError:
        return ""


def build_wheel(tf: dict[str, str], config: dict[str, str], target: Path, jobs: int) -> Path:
    target.mkdir(parents=True, exist_ok=True)
    if not shutil.which("cmake"):
        raise InstallError("cmake (>= 3.13) is not on the PATH; install it (apt-get install cmake, "
                           "or pip install cmake)")
    if not (shutil.which(os.environ.get("CXX", "c++")) or shutil.which("g++")):
        raise InstallError("no C++ compiler (c++, g++ or $CXX) is on the PATH; install one (apt-get install g++)")
    # build-time requirements; pip wheel --no-build-isolation builds against this environment's TensorFlow
    run([sys.executable, "-m", "pip", "install", "setuptools", "wheel", *HOROVOD_REQUIREMENTS])
    with tempfile.TemporaryDirectory(prefix="horovod-build-") as tmp:
        workdir = Path(tmp)
        source = download_sdist(workdir)
        patch_sources(source)
        highwayhash = Path(tf["include"], "external", "highwayhash")
        env = {**os.environ, **config,
               "CXXFLAGS": f"{os.environ.get('CXXFLAGS', '')} -I{highwayhash}".strip(),
               "MAKEFLAGS": f"-j{jobs}"}
        print("build switches:", " ".join(f"{k}={v}" for k, v in sorted(config.items())), flush=True)
        wheel_dir = workdir / "wheel"
        stream_to_log([sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "--no-build-isolation",
                       "--wheel-dir", str(wheel_dir), str(source)], env, target / "build.log")
        built = list(wheel_dir.glob("horovod-*.whl"))
        if len(built) != 1:
            raise InstallError(f"expected one horovod wheel in {wheel_dir}, found {built}")
        # copy under a temporary name, then rename: a killed copy never looks like a cached wheel
        partial = target / (built[0].name + ".partial")
        shutil.copyfile(built[0], partial)
        partial.rename(target / built[0].name)
    (target / "build.json").write_text(json.dumps(
        {"horovod": HOROVOD_VERSION, "tensorflow": tf["version"], "python": sys.version.split()[0],
         "config": config}, indent=2))
    return target / built[0].name


def install_and_verify(wheel: Path, verify: bool) -> None:
    run([sys.executable, "-m", "pip", "install", "--force-reinstall", "--no-deps", str(wheel)])
    run([sys.executable, "-m", "pip", "install", *HOROVOD_REQUIREMENTS])
    if verify:
        proc = subprocess.run([sys.executable, "-c", VERIFY_CODE], capture_output=True, text=True,
                              env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
        if proc.returncode != 0:
            raise InstallError(f"Horovod installed from {wheel} but `{VERIFY_CODE}` failed:\n{proc.stderr[-3000:]}")
        print(proc.stdout.strip().splitlines()[-1], flush=True)
    print(f"Horovod {HOROVOD_VERSION} installed from {wheel}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--force", action="store_true", help="rebuild even if a matching wheel is cached")
    parser.add_argument("--print-cache-dir", action="store_true",
                        help="print the cache directory for the installed TensorFlow and exit")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="parallel compile jobs")
    parser.add_argument("--build-only", action="store_true", help="build and cache the wheel, do not install it")
    parser.add_argument("--no-verify", action="store_true", help="skip the hvd.init() check after installing")
    args = parser.parse_args(argv)
    try:
        tf = tensorflow_info()
        target = cache_dir(tf["version"])
        if args.print_cache_dir:
            print(target)
            return 0
        config = build_config()
        wheel = None if args.force else cached_wheel(target, config)
        if wheel:
            print(f"using cached wheel {wheel}", flush=True)
        else:
            print(f"building Horovod {HOROVOD_VERSION} for TensorFlow {tf['version']} into {target}", flush=True)
            wheel = build_wheel(tf, config, target, args.jobs)
        if not args.build_only:
            install_and_verify(wheel, verify=not args.no_verify)
    except (InstallError, subprocess.CalledProcessError) as exc:
        print(f"install_horovod: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
