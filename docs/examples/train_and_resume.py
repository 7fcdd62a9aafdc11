"""Train a small model on an arrowmix stream through a StatefulDataLoader; resume after a kill.

Run it, kill it (Ctrl-C, ``kill -9``, a lost node), run it again: it continues from its last
checkpoint with the batches and the losses of a run that was never interrupted.

    python train_and_resume.py --workdir tutorial --steps 60
"""

from __future__ import annotations

import argparse
import hashlib
import os
import signal
from pathlib import Path

import torch

import arrowmix as am
from arrowmix.integrations.torch_loader import StreamLoader

VOCAB = 256  # byte-level "tokenizer": one id per byte


# 1. The corpus: written once as Arrow chunk files (a rerun finds them and skips this).
def corpus(workdir: Path) -> am.Dataset:
    chunks = workdir / "corpus"
    if not (chunks / "chunk-00000.arrow").exists():
        rows = ({"text": f"document {i}: " + "lorem ipsum " * (1 + i % 17)} for i in range(3000))
        am.write_chunks(rows, chunks, rows_per_chunk=1000)
    return am.Dataset.from_chunks(str(chunks))


# 2. Cached preprocessing: computed by the first run, read back by every later one.
def tokenize(batch: dict[str, list[str]]) -> dict[str, list[list[int]]]:
    return {"ids": [list(text.encode("utf-8")) for text in batch["text"]]}


# 3. The training stream: shuffled, batched by a token budget, padded into torch tensors,
#    and handed to its loader (a StatefulDataLoader) whose workers each read their own share.
def make_loader(ds: am.Dataset, workers: int) -> StreamLoader:
    stream = (
        ds.to_stream(shuffle="global", seed=0)
        .budget_bucket("ids", 4096, read_ahead=2000, seed=0, remainder="pad")
        .collate("ids", labels="shift", return_tensors="pt")
    )
    return stream.to_torch().loader(num_workers=workers)


class TinyLM(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, 32)
        self.out = torch.nn.Linear(32, VOCAB)

    def forward(self, input_ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        logits = self.out(self.embed(input_ids))
        return torch.nn.functional.cross_entropy(
            logits.reshape(-1, VOCAB), labels.reshape(-1), ignore_index=-100
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workdir", default="tutorial")
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--checkpoint-every", type=int, default=10)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--kill-at", type=int, default=None, help="SIGKILL itself at this step")
    args = parser.parse_args()
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    torch.set_num_threads(1)  # bitwise-reproducible losses on CPU

    ds = corpus(workdir).map(tokenize, batched=True, remove_columns=["text"])
    loader = make_loader(ds, args.workers)
    model = TinyLM()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    step = 0

    # 4. Resume: the model, the optimizer and the loader (every worker's stream) together.
    checkpoint = workdir / "checkpoint.pt"
    if checkpoint.exists():
        saved = torch.load(checkpoint, weights_only=False)
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        loader.load_state_dict(saved["loader"])
        step = saved["step"]
        print(f"resumed at step {step}")

    for batch in loader:
        if step == args.steps:
            break
        if step == args.kill_at:
            os.kill(os.getpid(), signal.SIGKILL)  # a crash, with no chance to clean up
        loss = model(batch["input_ids"], batch["labels"])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        digest = hashlib.sha1(batch["input_ids"].numpy().tobytes()).hexdigest()[:12]
        print(f"step {step} batch {digest} loss {loss.item():.6f}", flush=True)
        step += 1
        if step % args.checkpoint_every == 0:  # written beside, then renamed: never torn
            state = {
                "model": model.state_dict(),
                "optimizer": optimizer.state_dict(),
                "loader": loader.state_dict(),
                "step": step,
            }
            torch.save(state, workdir / "checkpoint.tmp")
            os.replace(workdir / "checkpoint.tmp", checkpoint)


if __name__ == "__main__":
    main()
