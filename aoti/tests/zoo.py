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

`models()` returns name -> (module, example inputs, dynamic_shapes, extra runs, options), as
make_models.py's own models().
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


def models():
    import torchvision
    from transformers import (BertConfig, BertModel, GPT2Config, GPT2LMHeadModel, LlamaConfig,
                              LlamaForCausalLM)

    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    img = torch.randn(1, 3, 32, 32, generator=g)
    tv = torchvision.models
    vocab = 128
    ids = torch.randint(0, vocab, (1, 12), generator=g)
    u = torch.rand(1, 1, generator=g)
    mask = torch.ones(1, 12, dtype=torch.int64)
    mask[0, 9:] = 0
    tiny = dict(vocab_size=vocab)
    gpt2 = GPT2LMHeadModel(GPT2Config(n_layer=2, n_head=2, n_embd=32, n_positions=64,
                                      bos_token_id=0, eos_token_id=0, **tiny))
    llama = LlamaForCausalLM(LlamaConfig(num_hidden_layers=2, num_attention_heads=4,
                                         num_key_value_heads=2, hidden_size=32,
                                         intermediate_size=64, max_position_embeddings=64,
                                         bos_token_id=0, eos_token_id=0, **tiny))
    bert = BertModel(BertConfig(num_hidden_layers=2, num_attention_heads=2, hidden_size=32,
                                intermediate_size=64, max_position_embeddings=64, **tiny))
    seg = tv.segmentation.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None,
                                                    num_classes=3)

    class Seg(nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, x):
            return self.m(x)["out"]

    return {
        "resnet18": (calibrated(tv.resnet18(weights=None, num_classes=10), img), (img,), None, [],
                     {}),
        "mobilenet_v2": (calibrated(tv.mobilenet_v2(weights=None, num_classes=10), img), (img,),
                         None, [], {}),
        "efficientnet_b0": (calibrated(tv.efficientnet_b0(weights=None, num_classes=10), img),
                            (img,), None, [], {}),
        "lraspp": (calibrated(Seg(seg), img), (img,), None, [], {}),
        "bert": (Bert(bert).eval(), (ids, mask), None, [], {}),
        "gpt2_sample": (SampleNext(gpt2.eval()).eval(), (ids, u), None, [], {}),
        "llama_sample": (SampleNext(llama.eval()).eval(), (ids, u), None, [], {}),
        "lstm": (LstmClassifier().eval(), (torch.randn(2, 7, 16, generator=g),), None, [], {}),
    }
