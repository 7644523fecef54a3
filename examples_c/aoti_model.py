"""Compiles the model examples_c/aoti_run.c runs: a tiny classifier (Linear + softmax over
8 features), with AOTInductor for CPU, without libtorch at run time.

    python examples_c/aoti_model.py classifier.pt2
    cc -std=c99 examples_c/aoti_run.c -Iinclude -Lbuild/lib -ltensor_aoti -ltensor -o aoti_run
    ./aoti_run classifier.pt2
"""

import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "aoti", "python"))
import tensor_aoti_compile  # noqa: E402


class Classifier(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x):
        return torch.softmax(self.fc(x), dim=1)


def compile_to(path):
    model = Classifier().eval()
    example = (torch.linspace(-1, 1, 8).reshape(1, 8),)
    # The recipe (aoti/python/tensor_aoti_compile.py; installed as
    # share/libtensor/python/): no libtorch in the model's NEEDED entries, plain weights (no
    # oneDNN packing), vectorized code for this machine's ISA.
    return tensor_aoti_compile.compile(model, example, path)


if __name__ == "__main__":
    print(compile_to(sys.argv[1] if len(sys.argv) > 1 else "classifier.pt2"))
