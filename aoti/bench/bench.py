"""The AOTI benchmark (BENCHMARKS.md, "AOTInductor models"): each benchmark model
(aoti/bench/make_models.py: zoo.py at size "bench") on the same inputs through

- ours:    libtensor_aoti from a C host (bench_run.c), the freezing=False package;
- ours_frozen: libtensor_aoti from the same C host, the freezing=True package (its packed
           weights unpacked once at load, run by our kernels);
- libtorch: the same package through torch::inductor::AOTIModelPackageLoader from a C++
           host (bench_libtorch.cpp: the wheel's headers and libraries, no Python);
- frozen:  the freezing=True package (oneDNN-packed weights) through the same C++ host;
- eager:   the PyTorch module under torch.inference_mode() (Python, a reference);

at each thread count (OMP_NUM_THREADS for every process, torch.set_num_threads in the eager
one). The five processes of a model stay up side by side and are driven in interleaved
rounds of one run each (the order rotating each round), so that a change of the host's
load falls on every side alike, each run --gap-ms (50) after the one before: a process's
OpenMP threads spin on after its run (libgomp's GOMP_SPINCOUNT), and at 2 threads on 2 cores
that took about 10 ms from the next process's run (resnet18, ours: 35 ms alone, 45.6 ms
interleaved with a second copy, 35.3 with 20 ms gaps). A round also takes the host's noise
gauge (a malloc(160)/free pair, in the C host). Reports medians, the ratios of ours to
libtorch and to frozen, the cold load (process start to first output: spawn to the first
run's result), the peak RSS of each process and its RSS after the runs, the first outputs'
largest difference from eager PyTorch (relative to the output's largest magnitude; tokens:
equal or not), the machine's load average, and the bytes of shared libraries each host
loads beyond the system's.

Usage: python bench.py LIBDIR MODELDIR [--rounds N] [--threads 1,2] [--models a,b] [--json F]
       [--gap-ms MS]
(LIBDIR: bench_run, bench_libtorch, libtensor.so.0, libtensor_aoti.so; MODELDIR: made by
make_models.py). Prints markdown tables.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

EAGER = r"""
import os, sys, time
import numpy as np
import torch
sys.path.insert(0, sys.argv[1])
import zoo
torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
name, ins, prefix = sys.argv[2], sys.argv[3:], os.environ.get("BENCH_SAVE")
mod = zoo.models("bench", [name])[name][0]
xs = [torch.from_numpy(np.load(p)) for p in ins]
t0 = time.perf_counter()
with torch.inference_mode():
    outs = mod(*xs)
    first = time.monotonic()
    outs = outs if isinstance(outs, tuple) else (outs,)
    if prefix:
        for i, o in enumerate(outs):
            np.save(f"{prefix}{i}.npy", o.contiguous().numpy())
    print(f"ready {first:.6f} {(time.perf_counter() - t0) * 1e3:.3f}", flush=True)
    for line in sys.stdin:
        if line.strip() == "r":
            t0 = time.perf_counter_ns()
            mod(*xs)
            print(time.perf_counter_ns() - t0, flush=True)
        else:
            rss = [l for l in open("/proc/self/status") if l.startswith("VmHWM:")][0].split()[1]
            print(rss, flush=True)
            break
"""

SIDES = ("ours", "ours_frozen", "libtorch", "frozen", "eager")


class Side:
    """One host process under the line protocol of bench_run.c / bench_libtorch.cpp."""

    def __init__(self, name, argv, env):
        self.name = name
        self.t_spawn = time.monotonic()
        self.p = subprocess.Popen(argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, bufsize=1)
        line = self.p.stdout.readline().split()
        if not line or line[0] != "ready":
            self.p.kill()
            why = self.p.stderr.read().strip().splitlines()
            raise RuntimeError(f"{name} did not start", why[-1] if why else "no message")
        self.cold_ms = (float(line[1]) - self.t_spawn) * 1e3
        self.times = []

    def ask(self, cmd):
        self.p.stdin.write(cmd + "\n")
        self.p.stdin.flush()
        out = self.p.stdout.readline()
        if not out:
            raise RuntimeError(f"{self.name}: the host exited")
        return float(out)

    def finish(self):
        with open(f"/proc/{self.p.pid}/status") as f:
            self.steady_mb = next(int(l.split()[1]) for l in f if l.startswith("VmRSS:")) / 1024
        self.rss_mb = self.ask("q") / 1024
        self.p.wait()


_GAUGE = {}


def gauge_ns(lib):
    """The host's noise gauge now: ns of a malloc(160)/free pair, from a C host kept for it
    (bench_run's "g", no model loaded: it is only asked "g")."""
    if lib not in _GAUGE:
        _GAUGE[lib] = subprocess.Popen([os.path.join(lib, "bench_run"), "-"], stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, text=True, bufsize=1)
    p = _GAUGE[lib]
    p.stdin.write("g\n")
    p.stdin.flush()
    return float(p.stdout.readline())


def closeness(got_prefix, ref_prefix, n):
    """The largest |got - eager| / max |eager| over the outputs (integer outputs: 0 when
    equal, inf when not)."""
    worst = 0.0
    for i in range(n):
        got, ref = np.load(f"{got_prefix}{i}.npy"), np.load(f"{ref_prefix}{i}.npy")
        if got.shape != ref.shape:
            return float("inf")
        if ref.dtype.kind in "iub":
            worst = max(worst, 0.0 if np.array_equal(got, ref) else float("inf"))
        else:
            scale = float(np.abs(ref).max()) or 1.0
            worst = max(worst, float(np.abs(got.astype(np.float64) - ref).max()) / scale)
    return worst


def installed_bytes(binary):
    """Bytes of the shared libraries `binary` loads from outside the system's directories
    (ldd), i.e. what a deployment of that side ships."""
    out = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout
    total, seen = 0, set()
    for line in out.splitlines():
        if "=>" not in line:
            continue
        path = line.split("=>")[1].split("(")[0].strip()
        real = os.path.realpath(path)
        if not path or real in seen or real.startswith(("/lib/", "/usr/lib/", "/lib64/")):
            continue
        seen.add(real)
        total += os.path.getsize(real)
    return total


def bench_model(lib, models, name, threads, rounds, tmp, gap):
    nin = len([f for f in os.listdir(models) if f.startswith(f"{name}.in")])
    nout = len([f for f in os.listdir(models) if f.startswith(f"{name}.out")])
    ins = [os.path.join(models, f"{name}.in{i}.npy") for i in range(nin)]
    pt2 = os.path.join(models, f"{name}.pt2")
    frozen = os.path.join(models, f"{name}.frozen.pt2")
    base = dict(os.environ, OMP_NUM_THREADS=str(threads), TENSOR_AOTI_QUIET="1")
    argvs = {
        "ours": [os.path.join(lib, "bench_run"), pt2] + ins,
        "ours_frozen": [os.path.join(lib, "bench_run"), frozen] + ins,
        "libtorch": [os.path.join(lib, "bench_libtorch"), pt2] + ins,
        "frozen": [os.path.join(lib, "bench_libtorch"), frozen] + ins,
        "eager": [sys.executable, "-c", EAGER, os.path.join(HERE, "..", "tests"), name] + ins,
    }
    sides, failed = {}, {}
    # Every side starts from the same page cache: the packages and inputs read once before
    # any is timed (the first side to start would otherwise also pay the disk reads).
    for f in [pt2, frozen] + ins:
        if os.path.exists(f):
            with open(f, "rb") as fh:
                while fh.read(1 << 24):
                    pass
    try:
        # One at a time: a cold load is timed with no other host starting beside it.
        for s in SIDES:
            env = dict(base, BENCH_SAVE=os.path.join(tmp, f"{name}.{s}.out"))
            try:
                sides[s] = Side(s, argvs[s], env)
            except RuntimeError as e:
                failed[s] = e.args[1] if len(e.args) > 1 else str(e)
        up = [s for s in SIDES if s in sides]
        close = {s: closeness(os.path.join(tmp, f"{name}.{s}.out"),
                              os.path.join(models, f"{name}.out"), nout) for s in up}
        for s in up:  # warm-up
            sides[s].ask("r")
        gauge = []
        for r in range(rounds):
            order = up[r % len(up):] + up[:r % len(up)]
            for s in order:
                time.sleep(gap)
                sides[s].times.append(sides[s].ask("r") / 1e3)
            gauge.append(gauge_ns(lib))
        for s in up:
            sides[s].finish()
    finally:
        for s in sides.values():
            if s.p.poll() is None:
                s.p.kill()
    med = {s: statistics.median(sides[s].times) for s in up}
    return dict(model=name, threads=threads, rounds=rounds, median_us=med,
                cold_ms={s: sides[s].cold_ms for s in up},
                rss_mb={s: sides[s].rss_mb for s in up},
                steady_mb={s: sides[s].steady_mb for s in up}, close=close, failed=failed,
                gauge_ns=statistics.median(gauge), load=os.getloadavg()[0])


def fmt_ms(us):
    return f"{us / 1e3:.2f}"


def table(rows):
    cols = ("ours", "ours_frozen", "libtorch", "frozen")
    print("| model | threads | ours ms | ours (frozen pkg) ms | libtorch ms | frozen ms | eager ms "
          "| ours / libtorch | ours / frozen | ours (frozen pkg) / frozen "
          "| cold load ms ours / ours (frozen pkg) / libtorch / frozen "
          "| peak RSS MB ours / ours (frozen pkg) / libtorch / frozen "
          "| RSS after the runs MB ours / ours (frozen pkg) / libtorch / frozen "
          "| max rel. diff vs eager ours / ours (frozen pkg) / libtorch / frozen "
          "| malloc pair ns | load avg |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    nan = float("nan")
    for r in rows:
        m, c, rss, cl = r["median_us"], r["cold_ms"], r["rss_mb"], r["close"]
        steady = r.get("steady_mb", {})
        for s in SIDES:
            for d in (m, c, rss, steady, cl):
                d.setdefault(s, nan)
        fails = "".join(f" ({s} fails: {why})" for s, why in r["failed"].items())
        print(f"| {r['model']}{fails} | {r['threads']} | "
              + " | ".join(fmt_ms(m[s]) for s in cols + ("eager",)) + " | "
              f"{m['ours'] / m['libtorch']:.2f}x | {m['ours'] / m['frozen']:.2f}x | "
              f"{m['ours_frozen'] / m['frozen']:.2f}x | "
              + " / ".join(f"{c[s]:.0f}" for s in cols) + " | "
              + " / ".join(f"{rss[s]:.0f}" for s in cols) + " | "
              + " / ".join(f"{steady[s]:.0f}" for s in cols) + " | "
              + " / ".join(f"{cl[s]:.1e}" for s in cols) + " | "
              f"{r['gauge_ns']:.1f} | {r['load']:.1f} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("lib")
    ap.add_argument("models")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--models", dest="names", default=None)
    ap.add_argument("--json", default=None)
    ap.add_argument("--gap-ms", type=float, default=50.0)
    a = ap.parse_args()
    sys.path.insert(0, os.path.join(HERE, "..", "tests"))
    import zoo

    names = a.names.split(",") if a.names else list(zoo.BENCH_MODELS)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for t in [int(x) for x in a.threads.split(",")]:
            for name in names:
                rows.append(bench_model(a.lib, a.models, name, t, a.rounds, tmp, a.gap_ms / 1e3))
                print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    table(rows)
    ours = installed_bytes(os.path.join(a.lib, "bench_run"))
    theirs = installed_bytes(os.path.join(a.lib, "bench_libtorch"))
    print(f"\nShared libraries beyond the system's: libtensor_aoti's host {ours / 1e6:.1f} MB, "
          f"libtorch's host {theirs / 1e6:.1f} MB ({ours / theirs:.4f}x).")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
