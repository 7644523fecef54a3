"""The model zoo of the AOTI tests: real architectures built from their configs with random
weights (nothing is downloaded), small inputs, compiled by make_models.py (`--zoo`) with the
documented recipe (aoti/python/tensor_aoti_compile.py) and run from the C host against eager
PyTorch, under valgrind in CI.

- classification: torchvision resnet18, mobilenet_v2, efficientnet_b0;
- segmentation: torchvision lraspp_mobilenet_v3_large;
- encoder: a transformers BERT (tiny config) with its attention mask;
- decoders: a transformers GPT-2 and a Llama (tiny configs) with one generation step that
  samples the next token: top-k, then top-p (nucleus) over the sorted probabilities, drawn
  with a uniform number given as an input (so eager and compiled draw the same token);
- recurrent: a 2-layer LSTM classifier.

`models(size)` returns name -> (module, example inputs, dynamic_shapes, extra runs, options),
as make_models.py's own models(). `size="tiny"` (CI's): small configs and inputs; `size=
"bench"` (aoti/bench/, BENCHMARKS.md): the same code at the architectures' real sizes
(224 x 224 images and 1000 classes; BERT-base at sequence 128; a GPT-2-small step over a
16-token prefix, with the sampling and without: gpt2_step, the last position's logits), for BENCH_MODELS only, so that CI's zoo run checks the code the benchmark
models are built from.
"""

import torch
import torch.nn as nn

# The model family of each zoo model (docs/aoti.md's coverage table names them).
FAMILIES = {
    "resnet18": "CNN classifiers",
    "mobilenet_v2": "CNN classifiers",
    "efficientnet_b0": "CNN classifiers",
    "lraspp": "segmentation",
    "bert": "encoders (BERT)",
    "gpt2_sample": "decoders + sampling (GPT-2, Llama)",
    "gpt2_step": "decoders + sampling (GPT-2, Llama)",
    "llama_sample": "decoders + sampling (GPT-2, Llama)",
    "lstm": "recurrent (LSTM)",
}


class SampleNext(nn.Module):
    """One generation step of a causal LM: logits of the last position, top-k, softmax,
    top-p over the probabilities sorted in descending order (stable), then the token whose
    cumulative probability first exceeds `u` (searchsorted). Returns (token [B, 1] int64,
    the last position's logits)."""

    def __init__(self, lm, k=8, p=0.9):
        super().__init__()
        self.lm, self.k, self.p = lm, k, p

    def forward(self, ids, u):
        logits = self.lm(input_ids=ids).logits[:, -1, :]
        top, top_i = torch.topk(logits, self.k, dim=-1)
        probs = torch.softmax(top, dim=-1)
        sp, si = torch.sort(probs, dim=-1, descending=True, stable=True)
        before = torch.cumsum(sp, dim=-1) - sp
        sp = torch.where(before < self.p, sp, torch.zeros_like(sp))
        sp = sp / sp.sum(dim=-1, keepdim=True)
        j = torch.searchsorted(torch.cumsum(sp, dim=-1), u).clamp(max=self.k - 1)
        token = torch.gather(top_i, 1, torch.gather(si, 1, j))
        return token, logits


class LastLogits(nn.Module):
    """One decoder step of a causal LM without the sampling: the last position's logits."""

    def __init__(self, lm):
        super().__init__()
        self.lm = lm

    def forward(self, ids):
        return self.lm(input_ids=ids).logits[:, -1, :]


class LstmClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(16, 32, num_layers=2, batch_first=True)
        self.fc = nn.Linear(32, 5)

    def forward(self, x):
        y, (h, c) = self.lstm(x)
        return self.fc(y[:, -1]), h, c


class Bert(nn.Module):
    def __init__(self, bert):
        super().__init__()
        self.bert = bert

    def forward(self, ids, mask):
        out = self.bert(input_ids=ids, attention_mask=mask)
        return out.last_hidden_state, out.pooler_output


def calibrated(model, example, batches=2):
    """`model` in eval mode, with its batch-norm statistics measured on random batches shaped
    like `example` (cumulative averages): with the default statistics (mean 0, variance 1)
    the activations of a deep randomly initialised CNN shrink layer by layer to ~1e-13, and
    an output that small would compare equal to anything."""
    bns = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    for m in bns:
        m.reset_running_stats()
        m.momentum = None
    g = torch.Generator().manual_seed(1)
    model.train()
    with torch.no_grad():
        for _ in range(batches):
            model(torch.randn((4,) + tuple(example.shape[1:]), generator=g))
    return model.eval()


# The zoo models aoti/bench/ times at size "bench".
BENCH_MODELS = ("resnet18", "mobilenet_v2", "efficientnet_b0", "bert", "gpt2_step", "gpt2_sample")

# size -> image side, classes, BERT sequence, GPT-2 prefix, vocabulary and the BERT / GPT-2
# config fields (vocab None and no fields: the transformers defaults, BERT-base and GPT-2
# small).
SIZES = {
    "tiny": dict(side=32, classes=10, seq=12, prefix=12, vocab=128,
                 bert=dict(num_hidden_layers=2, num_attention_heads=2, hidden_size=32,
                           intermediate_size=64, max_position_embeddings=64),
                 gpt2=dict(n_layer=2, n_head=2, n_embd=32, n_positions=64)),
    "bench": dict(side=224, classes=1000, seq=128, prefix=16, vocab=None, bert={}, gpt2={}),
}


def models(size="tiny", names=None):
    """The zoo at `size` ("tiny" or "bench": only BENCH_MODELS), or only `names`. Each model
    and its inputs are drawn from seeds of their own, so that one model built alone is the
    same as in the whole table."""
    import torchvision
    from transformers import (BertConfig, BertModel, GPT2Config, GPT2LMHeadModel, LlamaConfig,
                              LlamaForCausalLM)

    torch.manual_seed(0)
    z = SIZES[size]
    tv = torchvision.models
    voc = {} if z["vocab"] is None else dict(vocab_size=z["vocab"])

    def image():
        return torch.randn(1, 3, z["side"], z["side"], generator=torch.Generator().manual_seed(0))

    def cnn(f):
        img = image()
        return calibrated(f(weights=None, num_classes=z["classes"]), img), (img,), None, [], {}

    def bert():
        cfg = BertConfig(**z["bert"], **voc)
        g = torch.Generator().manual_seed(0)
        ids = torch.randint(0, cfg.vocab_size, (1, z["seq"]), generator=g)
        mask = torch.ones(1, z["seq"], dtype=torch.int64)
        mask[0, z["seq"] * 3 // 4:] = 0
        return Bert(BertModel(cfg)).eval(), (ids, mask), None, [], {}

    def lm_step(model_cls, cfg, sample=True):
        g = torch.Generator().manual_seed(0)
        ids = torch.randint(0, cfg.vocab_size, (1, z["prefix"]), generator=g)
        u = torch.rand(1, 1, generator=g)
        lm = model_cls(cfg).eval()
        if not sample:
            return LastLogits(lm).eval(), (ids,), None, [], {}
        return SampleNext(lm).eval(), (ids, u), None, [], {}

    def gpt2_config():
        return GPT2Config(**z["gpt2"], bos_token_id=0, eos_token_id=0, **voc)

    class Seg(nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, x):
            return self.m(x)["out"]

    def seg():
        img = image()
        m = tv.segmentation.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None,
                                                      num_classes=3)
        return calibrated(Seg(m), img), (img,), None, [], {}

    def lstm():
        x = torch.randn(2, 7, 16, generator=torch.Generator().manual_seed(0))
        return LstmClassifier().eval(), (x,), None, [], {}

    builders = {
        "resnet18": lambda: cnn(tv.resnet18),
        "mobilenet_v2": lambda: cnn(tv.mobilenet_v2),
        "efficientnet_b0": lambda: cnn(tv.efficientnet_b0),
        "lraspp": seg,
        "bert": bert,
        "gpt2_sample": lambda: lm_step(GPT2LMHeadModel, gpt2_config()),
        "gpt2_step": lambda: lm_step(GPT2LMHeadModel, gpt2_config(), sample=False),
        "llama_sample": lambda: lm_step(LlamaForCausalLM, LlamaConfig(
            num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, hidden_size=32,
            intermediate_size=64, max_position_embeddings=64, bos_token_id=0, eos_token_id=0,
            **voc)),
        "lstm": lstm,
    }
    if names is None:
        names = BENCH_MODELS if size != "tiny" else tuple(builders)
    table = {}
    for name in names:
        torch.manual_seed(0)
        table[name] = builders[name]()
    return table
