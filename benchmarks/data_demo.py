"""A demo folder for the README's "Plan from your data" flow: a byte-level BPE tokenizer with a ChatML template like
Qwen3's (no model download is possible here) and a JSONL chat dataset in ms-swift's messages format, both from
benchmarks/data_throughput.py (same seeds, so the same files every time).

Run: python benchmarks/data_demo.py DIR [--mb 4]   -> DIR/tokenizer/ and DIR/train.jsonl
With a real model folder (`modelscope download --model Qwen/Qwen3-8B --local_dir ./Qwen3-8B`) the counts are
Qwen3's own; this tokenizer's 5,000 tokens split text differently.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from data_throughput import build_tokenizer, write_jsonl  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("dir", help="folder to write tokenizer/ and train.jsonl into (created)")
    ap.add_argument("--mb", type=float, default=4, help="size of train.jsonl in MiB (default 4)")
    args = ap.parse_args()
    out = Path(args.dir)
    (out / "tokenizer").mkdir(parents=True, exist_ok=True)
    build_tokenizer(out / "tokenizer")
    rows = write_jsonl(out / "train.jsonl", int(args.mb * 2**20))
    print(f"wrote {out / 'tokenizer'} (tokenizer.json, tokenizer_config.json) and {out / 'train.jsonl'} ({rows:,} rows)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
