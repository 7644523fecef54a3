"""Picks a fuzz target's seed corpus from a libFuzzer merge control file (what
`FUZZ_MINIMIZE=1 bash .ci/fuzz.sh 0 <target>` runs after libFuzzer's set-cover merge step,
`-merge_inner=2 -use_counters=0`, ran every input of the seeds and the campaign corpus and
wrote down the edges of each): the hand-made seeds (files not named by a
SHA-1: fuzz/make_file_seeds.py's) first, then greedily the input that reaches the most edges
not reached yet (ties: the shorter, then the first listed), until every edge that some input
reaches is reached. Inputs are cut to `--max-len` bytes (CI's `-max_len`: the fuzzer never
reads past it) and named by the SHA-1 of what is kept, as libFuzzer names them; hand-made
seeds keep their names and bytes.

    python3 fuzz/minimize.py [--max-len 512] CONTROL_FILE OUT_DIR

The control file (libFuzzer's FuzzerMerge.cpp format): the number of inputs, the number in
the first corpus, one path per input, then per input `STARTED <i> <size run>`, `FT <i>
<features...>` and `COV <i> <edges...>`. In the set-cover step (`-merge_inner=2`) FT lists
every feature of the input (the plain merge's lists only those new in the run so far),
and with `-use_counters=0` the features are the edges.
"""

import argparse
import hashlib
import heapq
import os
import re
import shutil
from array import array

HASH_NAME = re.compile(r"[0-9a-f]{40}")


def read_control(path):
    with open(path) as f:
        n = int(f.readline())
        f.readline()  # inputs in the first corpus (the merge's output: none here)
        files = [f.readline().rstrip("\n") for _ in range(n)]
        features = [array("l") for _ in range(n)]
        size = [0] * n
        for line in f:
            if line.startswith("FT "):
                parts = line.split()
                features[int(parts[1])] = array("l", map(int, parts[2:]))
            elif line.startswith("STARTED "):
                _, i, s = line.split()
                size[int(i)] = int(s)
    return files, features, size


def cover(files, features, size):
    """Indices of the chosen inputs: the hand-made ones, then the greedy cover; and the
    number of edges they reach."""
    covered = set()
    chosen = []
    for i, path in enumerate(files):
        if not HASH_NAME.fullmatch(os.path.basename(path)):
            chosen.append(i)
            covered.update(features[i])
    # Lazy greedy: a gain only shrinks as edges get covered, so a popped input whose
    # recomputed gain still tops the heap is the best one.
    heap = [(-len(set(features[i])), size[i], i) for i in range(len(files)) if features[i]]
    heapq.heapify(heap)
    while heap:
        _, s, i = heapq.heappop(heap)
        new = set(features[i]) - covered
        if not new:
            continue
        if heap and len(new) < -heap[0][0]:
            heapq.heappush(heap, (-len(new), s, i))
            continue
        covered |= new
        chosen.append(i)
    return chosen, len(covered)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-len", type=int, default=512)
    ap.add_argument("control")
    ap.add_argument("out")
    a = ap.parse_args()
    files, features, size = read_control(a.control)
    chosen, edges = cover(files, features, size)
    os.makedirs(a.out, exist_ok=True)
    written = set()
    for i in chosen:
        name = os.path.basename(files[i])
        if not HASH_NAME.fullmatch(name):
            shutil.copyfile(files[i], os.path.join(a.out, name))
            continue
        with open(files[i], "rb") as f:
            data = f.read(a.max_len)
        name = hashlib.sha1(data).hexdigest()
        if name not in written:
            written.add(name)
            with open(os.path.join(a.out, name), "wb") as f:
                f.write(data)
    print(f"minimize: {len(chosen)} of {len(files)} inputs reach all {edges} edges")


if __name__ == "__main__":
    main()
