"""Throughput and peak memory of `trainfit data` on a large JSONL file (issue: plan from your data).

Builds a byte-level BPE tokenizer on the fly (5,000 tokens, the tokenizers library; no model download is possible
here) with a ChatML template like Qwen3's, writes a JSONL file of synthetic chat rows in ms-swift's messages format
(lengths drawn from a log-normal, 50 to 8,000 words), runs `trainfit data FILE --tokenizer DIR --json` in a child
process and records wall time, samples/s, MB/s and the child's peak resident memory (getrusage). Writes
benchmarks/results/data_throughput.json.

Run: python benchmarks/data_throughput.py [--mb 1024]   (the README quotes the 1 GB run)
Tokenizing speed depends on the tokenizer: Qwen3's byte-level BPE has 151,669 tokens, so its encode per byte differs.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

CHATML = ("{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + "
          "'<|im_end|>' + '\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")
WORDS = ("the model trains on packed sequences of tokens with a global batch chosen by the planner while the GPU "
         "memory holds weights gradients optimizer states and activations 训练 数据 显存 模型 参数").split()


def build_tokenizer(folder: Path) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    rng = random.Random(0)
    corpus = [" ".join(rng.choice(WORDS) for _ in range(200)) for _ in range(2000)]
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(corpus, trainers.BpeTrainer(
        vocab_size=5000, special_tokens=["<unk>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps({"chat_template": CHATML}))


def write_jsonl(path: Path, target_bytes: int) -> int:
    rng = random.Random(1)
    n = written = 0
    with open(path, "w", encoding="utf-8") as f:
        while written < target_bytes:
            q = " ".join(rng.choice(WORDS) for _ in range(int(min(2000, rng.lognormvariate(4.0, 0.8)))))
            a = " ".join(rng.choice(WORDS) for _ in range(int(min(8000, 50 + rng.lognormvariate(5.0, 1.0)))))
            line = json.dumps({"messages": [{"role": "user", "content": q}, {"role": "assistant", "content": a}]},
                              ensure_ascii=False) + "\n"
            f.write(line)
            written += len(line.encode("utf-8"))
            n += 1
    return n


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=1024, help="size of the JSONL file in MiB (default 1024)")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "data_throughput.json"))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmpd = Path(tmp)
        build_tokenizer(tmpd)
        data = tmpd / "big.jsonl"
        rows = write_jsonl(data, args.mb * 2**20)
        size = data.stat().st_size
        cmd = [sys.executable, "-c", "import sys; from trainfit.cli import main; sys.exit(main())", "data", str(data),
               "--tokenizer", str(tmpd), "--seq-len", "4096", "--json", "--no-progress"]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            print(proc.stderr, file=sys.stderr)
            return proc.returncode
        peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        stats = json.loads(proc.stdout)
    result = {
        "date": date.today().isoformat(), "python": platform.python_version(), "cpus": os.cpu_count(),
        "load_avg_1min": round(os.getloadavg()[0], 2), "file_mib": round(size / 2**20, 1), "rows": rows,
        "samples": stats["samples"], "tokens_total": stats["tokens_total"], "wall_s": round(wall, 1),
        "samples_per_s": round(stats["samples"] / wall), "mib_per_s": round(size / 2**20 / wall, 2),
        "peak_rss_mib": round(peak_mib), "command": "python benchmarks/data_throughput.py --mb " + str(args.mb),
    }
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
