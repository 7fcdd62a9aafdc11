"""Train a tiny causal LM on packed rows whose labels and attention stop at every document.

    python docs/examples/train_packed.py --attention mask    # SDPA with pack's segment mask
    python docs/examples/train_packed.py --attention varlen  # attention per cu_seqlens run
    python docs/examples/train_packed.py --attention causal  # ids only, plain causal attention

Each document follows its own rule (token ``k + 1`` is ``(5 * token k + 1) % 64`` from a
random first token), so the next token is predictable inside a document and not across a
boundary: the labels of ``pack(labels="shift")`` never ask for it. The script prints the
loss per token every 10 steps and the first and last loss; it needs torch.
"""

from __future__ import annotations

import argparse
import itertools
from typing import Any

import numpy as np
import pyarrow as pa
import torch
import torch.nn.functional as F

import arrowmix

VOCAB, SEQ_LEN, ROWS, HEADS, DIM = 64, 64, 8, 2, 32


def corpus(n: int = 2000, seed: int = 0) -> arrowmix.Dataset:
    """``n`` documents of 4 to 40 tokens, each following the rule from a random start."""
    rng = np.random.default_rng(seed)
    docs = []
    for length in rng.integers(4, 41, n):
        doc = [int(rng.integers(1, VOCAB))]
        for _ in range(length - 1):
            doc.append((5 * doc[-1] + 1) % VOCAB)
        docs.append(doc)
    return arrowmix.Dataset.from_arrow(pa.table({"input_ids": docs}))


def packed_batches(attention: str) -> Any:
    """The stream: what each attention needs beside the ids, and shifted labels."""
    stream = corpus().to_stream(shuffle="global", seed=0)  # infinite: epoch after epoch
    if attention == "causal":  # ids only: no segment or position ids are built
        return stream.pack("input_ids", SEQ_LEN, batch_size=ROWS, labels="shift", outputs=())
    outputs = ("position_ids", "segment_mask" if attention == "mask" else "cu_seqlens")
    return stream.pack(
        "input_ids",
        SEQ_LEN,
        strategy="best_fit",
        batch_size=ROWS,
        read_ahead=256,
        labels="shift",
        outputs=outputs,
        return_tensors="pt",
    )


def varlen_attention(q: Any, k: Any, v: Any, cu_seqlens: Any) -> Any:
    """Causal attention inside each run of ``cu_seqlens``, on ``(tokens, heads, dim)``.

    What ``flash_attn_varlen_func(q, k, v, cu_seqlens, cu_seqlens, max_seqlen,
    max_seqlen, causal=True)`` computes on a GPU; here one SDPA call per run, on the CPU.
    """
    out = torch.empty_like(q)
    bounds = cu_seqlens.tolist()
    for lo, hi in itertools.pairwise(bounds):
        run = [x[lo:hi].transpose(0, 1) for x in (q, k, v)]  # (heads, run, dim)
        out[lo:hi] = F.scaled_dot_product_attention(*run, is_causal=True).transpose(0, 1)
    return out


class TinyLM(torch.nn.Module):
    """Token and position embeddings, one attention layer, an MLP, a linear head."""

    def __init__(self) -> None:
        super().__init__()
        self.tok = torch.nn.Embedding(VOCAB, DIM)
        self.pos = torch.nn.Embedding(SEQ_LEN, DIM)
        self.qkv = torch.nn.Linear(DIM, 3 * DIM)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(DIM, 4 * DIM), torch.nn.GELU())
        self.head = torch.nn.Linear(4 * DIM, VOCAB)

    def forward(self, batch: dict[str, Any]) -> Any:
        """Logits ``[rows, seq_len, VOCAB]`` of a packed batch."""
        ids = batch["input_ids"]
        b, s = ids.shape
        pos = batch.get("position_ids", torch.arange(s).expand(b, s))
        x = self.tok(ids) + self.pos(pos)
        q, k, v = (t.reshape(b, s, HEADS, DIM // HEADS) for t in self.qkv(x).chunk(3, dim=-1))
        if "cu_seqlens" in batch:  # flash-attn's layout: the batch as one row of runs
            flat = [t.reshape(b * s, HEADS, -1) for t in (q, k, v)]
            h = varlen_attention(*flat, batch["cu_seqlens"]).reshape(b, s, DIM)
        else:
            q, k, v = (t.transpose(1, 2) for t in (q, k, v))  # (b, heads, s, dim)
            if "segment_mask" in batch:  # block diagonal, made causal; one mask per row
                mask = batch["segment_mask"] & torch.ones(s, s, dtype=torch.bool).tril()
                h = F.scaled_dot_product_attention(q, k, v, attn_mask=mask[:, None])
            else:
                h = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            h = h.transpose(1, 2).reshape(b, s, DIM)
        return self.head(self.mlp(x + h))


def main(argv: list[str] | None = None) -> list[float]:
    """Train for ``--steps`` steps; the loss of every step."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--attention", choices=["mask", "varlen", "causal"], default="mask")
    p.add_argument("--steps", type=int, default=30)
    args = p.parse_args(argv)
    torch.set_num_threads(1)  # a tiny model: more threads only wait on each other
    torch.manual_seed(0)
    model = TinyLM()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    losses = []
    for step, batch in zip(range(args.steps), packed_batches(args.attention), strict=False):
        if not isinstance(batch["input_ids"], torch.Tensor):  # the ids-only stream is numpy
            batch = {k: torch.from_numpy(v) for k, v in batch.items()}
        logits = model(batch)
        # -100 (the last token of every document, and padding) is ignored
        loss = F.cross_entropy(logits.flatten(0, 1), batch["labels"].flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if step % 10 == 0:
            print(f"step {step} loss {loss.item():.3f}")
    print(f"first loss {losses[0]:.3f} last loss {losses[-1]:.3f}")
    return losses


if __name__ == "__main__":
    main()
