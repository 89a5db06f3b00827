"""Assemble a local Pyodide distribution with NumPy, for offline classrooms and the live tests.

    python tools/site/pyodide_local.py --numpy-wheel PATH/numpy-...-pyodide_2025_0_wasm32.whl \
        --out /work/pyodide-dist [--version 0.28.0] [--tarball pyodide-0.28.0.tgz]

The npm package ``pyodide`` holds the core runtime (pyodide.mjs, pyodide.asm.js/.wasm,
python_stdlib.zip, pyodide-lock.json) but no packages; the NumPy wheel built for the same
Pyodide ABI comes from elsewhere (see tools/site/pyodide_local.md). This script unpacks the npm
tarball (running ``npm pack`` when none is given), adds the wheel, and rewrites the lock
file's NumPy entry (file_name, sha256) so Pyodide accepts it. Nothing here is committed:
write the output outside the repository, then run the live tests with
``KV_PYODIDE_DIST=<out>``, or point ``extra.pyodide.index_url`` at a copy served by the site.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

CORE = ("pyodide.mjs", "pyodide.asm.js", "pyodide.asm.wasm", "python_stdlib.zip", "pyodide-lock.json")
WHEEL = re.compile(r"^numpy-(?P<version>[^-]+)-cp\d+-cp\d+-pyodide_(?P<abi>\d{4}_\d+)_wasm32\.whl$")


def npm_pack(version: str, workdir: Path) -> Path:
    """Download the npm package's tarball with npm's own client."""
    proc = subprocess.run(["npm", "pack", f"pyodide@{version}"], cwd=workdir, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"npm pack pyodide@{version} failed:\n{proc.stderr.strip()}")
    return workdir / proc.stdout.strip().splitlines()[-1]


def unpack(tarball: Path, out: Path) -> None:
    with tarfile.open(tarball) as tar:
        for member in tar.getmembers():
            name = Path(member.name)
            if member.isfile() and len(name.parts) == 2 and name.parts[0] == "package":
                member.name = name.name
                tar.extract(member, out, filter="data")


def add_numpy(out: Path, wheel: Path) -> dict:
    m = WHEEL.match(wheel.name)
    if not m:
        sys.exit(f"{wheel.name} is not a Pyodide NumPy wheel (numpy-X-cpXY-cpXY-pyodide_YYYY_N_wasm32.whl)")
    lock_path = out / "pyodide-lock.json"
    lock = json.loads(lock_path.read_text())
    abi = lock["info"].get("abi_version")
    if abi != m["abi"]:
        sys.exit(f"ABI mismatch: the wheel is for pyodide_{m['abi']}, this Pyodide is {abi}")
    entry = lock["packages"]["numpy"]
    if entry["version"] != m["version"]:
        sys.exit(f"version mismatch: the lock file expects NumPy {entry['version']}, the wheel is {m['version']}")
    shutil.copy2(wheel, out / wheel.name)
    entry["file_name"] = wheel.name
    entry["sha256"] = hashlib.sha256(wheel.read_bytes()).hexdigest()
    lock_path.write_text(json.dumps(lock))
    return entry


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--numpy-wheel", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--version", default="0.28.0", help="Pyodide version on npm (default 0.28.0)")
    ap.add_argument("--tarball", type=Path, help="an npm pack tarball already downloaded")
    args = ap.parse_args(argv)
    if (Path(__file__).resolve().parents[2] / ".git").exists() and Path(__file__).resolve().parents[2] in args.out.resolve().parents:
        sys.exit("write the distribution outside the repository: fetched files are never committed")
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        tarball = args.tarball or npm_pack(args.version, Path(tmp))
        unpack(tarball, args.out)
    missing = [n for n in CORE if not (args.out / n).is_file()]
    if missing:
        sys.exit(f"the npm package lacks {', '.join(missing)}")
    entry = add_numpy(args.out, args.numpy_wheel)
    print(f"Pyodide {args.version} + NumPy {entry['version']} in {args.out} (numpy sha256 {entry['sha256'][:16]}…)")
    print(f"Live tests:  KV_PYODIDE_DIST={args.out} .venv/bin/pytest tests/browser/test_live.py -x -q")


if __name__ == "__main__":
    main()
