"""Measurements that came with a results file but are not part of it: the H200 baseline's logs.

The first GPU results (``results/gpu-cupy-h200.json``, the engine's per-op CuPy path at
commit d52496d) were measured with three side experiments whose figures the benchmark page
needs: Hugging Face transformers on the same GPU and shape, a kernel profile of one step,
and the host cost of one CuPy launch. Their logs are committed byte for byte under
``baselines/<name>/`` with a ``provenance.json`` (source, commit, scripts, sha256 of each
log), and every number is parsed from the logs here, never typed.

A baseline belongs to one results file (same device, same commit): ``for_doc`` finds it,
so a page that shows only CPU results, or a newer GPU file, never shows these figures.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from importlib import resources

BASELINES_DIR = "baselines"


@dataclass(frozen=True)
class Kernel:
    name: str
    per_step: float  # launches of this kernel per decode step
    us_per_step: float  # GPU time per step, microseconds


@dataclass(frozen=True)
class Profile:
    """kernel-profile.log: one engine decode step as the GPU saw it."""

    dtype: str
    shape: str
    n_layers: int
    context: int
    wall_ms: float  # host clock per step (under the profiler)
    busy_ms: float  # GPU time per step, all kernels
    ops_per_step: float  # GPU operations per step
    kernels: tuple[Kernel, ...]  # the heaviest ones, heaviest first

    @property
    def ops_per_layer(self) -> float:
        return self.ops_per_step / self.n_layers


@dataclass(frozen=True)
class HFPoint:
    context: int
    median_ms: float


@dataclass(frozen=True)
class Baseline:
    name: str
    provenance: dict
    hf: tuple[HFPoint, ...]  # transformers on the same GPU and shape
    hf_setup: dict  # what the log's lines say: versions, shape, layers, dtype
    profile: Profile
    launch_us: float  # host time of one CuPy kernel launch

    def comparisons(self, doc: dict) -> list[dict]:
        """The transformers log beside ``doc``'s own cached step, at the contexts both measured.

        Shaped like ``doc["comparisons"]`` entries, with medians only (the log keeps no spread)
        and ``separate_run`` True: transformers ran in its own process with its own random
        weights of the same shape (the time of a step does not depend on the numbers).
        """
        s = self.hf_setup
        run = next((r for r in doc["runs"] if r["shape"] == s["shape"] and r["dtype"] == s["dtype"]
                    and r["config"]["n_layers"] == s["n_layers"]), None)
        if run is None:
            return []
        engine = {p["context"]: p["decode_cached"]["median_s"] for p in run["points"]}
        return [{"shape": s["shape"], "dtype": s["dtype"], "context": h.context,
                 "engine": {"median_s": engine[h.context]}, "transformers": {"median_s": h.median_ms / 1e3},
                 "ratio": h.median_ms / 1e3 / engine[h.context], "device": doc["provenance"]["device"]["name"],
                 "separate_run": True}
                for h in self.hf if h.context in engine]

    def matches(self, doc: dict) -> bool:
        """Whether results ``doc`` is the run these side measurements belong to."""
        p = doc["provenance"]
        return (p["device"]["name"] == self.provenance["device"]
                and (p["git"]["commit"] or "") == self.provenance["commit"])


# --------------------------------------------------------------------------- parsers

_HF_LINE = re.compile(r"HF transformers (?P<torch>\S+)/(?P<transformers>\S+) (?P<shape>\S+) x(?P<layers>\d+) "
                      r"(?P<dtype>fp16|fp32) ctx (?P<ctx>\d+): (?P<ms>[\d.]+) ms")
_PROFILE_HEAD = re.compile(r"^(?P<dtype>float16|float32): wall (?P<wall>[\d.]+) ms/step; GPU busy (?P<busy>[\d.]+) "
                           r"ms/step; (?P<ops>[\d.]+) GPU ops/step$")
_PROFILE_ROW = re.compile(r"^\s+(?P<n>[\d.]+)/step\s+(?P<us>[\d.]+) us/step\s+(?P<name>.+)$")
_LAUNCH = re.compile(r"tiny elementwise \((?P<k>\d+) kernels\): cpu (?P<cpu>[\d.]+) us")
DTYPES = {"fp16": "float16", "fp32": "float32"}


def parse_hf(text: str) -> tuple[tuple[HFPoint, ...], dict]:
    """Points and setup from hf-transformers-cuda.log; the closing JSON line gives full precision."""
    lines = [m.groupdict() for m in map(_HF_LINE.search, text.splitlines()) if m]
    if not lines:
        raise ValueError("no 'HF transformers ... ctx N: T ms' line in the transformers log")
    exact = json.loads(next(ln for ln in reversed(text.splitlines()) if ln.startswith("[")))
    by_ctx = {int(d["context"]): float(d["median_ms"]) for d in exact}
    points = tuple(HFPoint(int(m["ctx"]), by_ctx.get(int(m["ctx"]), float(m["ms"]))) for m in lines)
    first = lines[0]
    setup = {"torch": first["torch"], "transformers": first["transformers"], "shape": first["shape"],
             "n_layers": int(first["layers"]), "dtype": DTYPES[first["dtype"]]}
    return points, setup


def parse_profile(text: str, setup: dict) -> Profile:
    """kernel-profile.log (its head line and the per-kernel rows); ``setup`` from provenance.json."""
    head, kernels = None, []
    for line in text.splitlines():
        head = head or _PROFILE_HEAD.match(line)
        row = _PROFILE_ROW.match(line)
        if head and row:
            kernels.append(Kernel(row["name"].strip(), float(row["n"]), float(row["us"])))
    if head is None:
        raise ValueError("no '<dtype>: wall ... GPU ops/step' line in the kernel profile")
    if head["dtype"] != setup["dtype"]:
        raise ValueError(f"the profile is of {head['dtype']}, its provenance says {setup['dtype']}")
    return Profile(head["dtype"], setup["shape"], int(setup["n_layers"]), int(setup["context"]),
                   float(head["wall"]), float(head["busy"]), float(head["ops"]), tuple(kernels))


def parse_launch_us(text: str) -> float:
    """Host microseconds per CuPy launch: the two-kernel expression's host time / 2."""
    m = _LAUNCH.search(text)
    if m is None:
        raise ValueError("no 'tiny elementwise (N kernels): cpu T us' line in the launch log")
    return float(m["cpu"]) / int(m["k"])


# --------------------------------------------------------------------------- loading


def _folder(name: str):
    return resources.files("engine.bench_results").joinpath(BASELINES_DIR, name)


def names() -> list[str]:
    folder = resources.files("engine.bench_results").joinpath(BASELINES_DIR)
    if not folder.is_dir():
        return []
    return sorted(p.name for p in folder.iterdir() if p.joinpath("provenance.json").is_file())


def load(name: str) -> Baseline:
    folder = _folder(name)
    prov = json.loads(folder.joinpath("provenance.json").read_text(encoding="utf-8"))
    read = lambda f: folder.joinpath(f).read_text(encoding="utf-8")  # noqa: E731
    hf, hf_setup = parse_hf(read("hf-transformers-cuda.log"))
    profile = parse_profile(read("kernel-profile.log"), prov["files"]["kernel-profile.log"]["setup"])
    return Baseline(name, prov, hf, hf_setup, profile, parse_launch_us(read("matmul-and-launch.log")))


def load_all() -> list[Baseline]:
    return [load(n) for n in names()]


def for_doc(doc: dict, baselines: list[Baseline] | None = None) -> Baseline | None:
    """The baseline measured with results ``doc``, if any."""
    return next((b for b in (load_all() if baselines is None else baselines) if b.matches(doc)), None)
