#!/usr/bin/env python3
"""Prints the criterion medians of `cargo bench -p tensor-bench --bench core` (from
target/criterion/<group>/<bench>/new/estimates.json) as a Markdown table, each with its
ratio to the malloc160_free pair of the same group."""
import json
import pathlib
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "target/criterion")
print("| group/bench | median ns | ratio to malloc(160)/free |")
print("|---|---|---|")
for group in ("handles", "views"):
    gdir = root / group
    if not gdir.is_dir():
        continue
    medians = {}
    for est in sorted(gdir.glob("*/new/estimates.json")):
        bench = json.loads(est.read_text())
        medians[est.parent.parent.name] = bench["median"]["point_estimate"]
    ref = medians.get("malloc160_free")
    names = sorted(medians, key=lambda n: (n != "malloc160_free", n))
    for name in names:
        ns = medians[name]
        ratio = f"{ns / ref:.2f}x" if ref else "-"
        print(f"| {group}/{name} | {ns:.1f} | {ratio} |")
