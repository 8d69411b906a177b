"""trainfit data: token counts equal the tokenizer's own (transformers' apply_chat_template on the same folder),
in every supported format, with and without the template; packing and padding figures against brute force; bad
input is one clear error, never a traceback."""

from __future__ import annotations

import json
import random

import pytest

from trainfit.cli import main
from trainfit.dataset.scan import ScanRequest, scan
from trainfit.dataset.stats import pack_count, padded_tokens
from trainfit.dataset.template import load_counter
from trainfit.errors import DatasetError

CONVS = [
    [("user", "What is 2 + 2?"), ("assistant", "It is 4.")],
    [("system", "You are terse."), ("user", "训练一个模型需要多少显存？"), ("assistant", "看模型。")],
    [("user", "The quick brown fox"), ("assistant", "jumps over"), ("user", "the lazy"), ("assistant", "dog.")],
    [("user", "Packing fills each sequence." * 30), ("assistant", "Qwen3 models are trained in bf16." * 40)],
]


def as_messages(c):
    return {"messages": [{"role": r, "content": t} for r, t in c]}


def as_sharegpt(c):
    who = {"user": "human", "assistant": "gpt", "system": "system"}
    sys_ = [t for r, t in c if r == "system"]
    row = {"conversations": [{"from": who[r], "value": t} for r, t in c if r != "system"]}
    if sys_:
        row["system"] = sys_[0]
    return row


def as_alpaca(c):
    sys_ = [t for r, t in c if r == "system"]
    pairs = [(c[i][1], c[i + 1][1]) for i in range(len(c) - 1) if c[i][0] == "user" and c[i + 1][0] == "assistant"]
    row = {"instruction": pairs[-1][0], "input": "", "output": pairs[-1][1], "history": [list(p) for p in pairs[:-1]]}
    if sys_:
        row["system"] = sys_[0]
    return row


def reference_counts(tok_dir, conv, template=True):
    """(total, loss) from transformers' own tokenizer and apply_chat_template on the same folder."""
    transformers = pytest.importorskip("transformers")
    tok = transformers.PreTrainedTokenizerFast.from_pretrained(str(tok_dir))
    msgs = [{"role": r, "content": t} for r, t in conv]
    if not template:
        total = sum(len(tok(t, add_special_tokens=False)["input_ids"]) for _, t in conv)
        return total, sum(len(tok(t, add_special_tokens=False)["input_ids"]) for r, t in conv if r == "assistant")

    def n(m, gen):
        out = tok.apply_chat_template(m, tokenize=True, add_generation_prompt=gen)
        return len(out["input_ids"] if hasattr(out, "keys") else out)

    loss = sum(n(msgs[: i + 1], False) - n(msgs[:i], True) for i, (r, _) in enumerate(conv) if r == "assistant")
    return n(msgs, False), loss


@pytest.mark.parametrize("make", [as_messages, as_sharegpt, as_alpaca])
@pytest.mark.parametrize("template", [True, False])
def test_counts_equal_tokenizer(tok_dir, tmp_path, make, template):
    f = tmp_path / "d.jsonl"
    f.write_text("\n".join(json.dumps(make(c), ensure_ascii=False) for c in CONVS) + "\n")
    counter = load_counter(str(tok_dir), use_template=template)
    for c in CONVS:
        assert counter.count(c) == reference_counts(tok_dir, c, template)
    st = scan(ScanRequest(files=(str(f),), counter=counter, seq_len=64))
    ref = [reference_counts(tok_dir, c, template) for c in CONVS]
    assert st.samples == len(CONVS) and st.skipped == 0
    assert st.tokens_total == sum(t for t, _ in ref)
    assert st.loss_tokens_total == sum(lo for _, lo in ref)
    assert st.tokens_after_cut == sum(min(t, 64) for t, _ in ref)
    assert st.max_len == max(t for t, _ in ref)


def test_json_and_parquet_equal_jsonl(tok_dir, tmp_path):
    rows = [as_messages(c) for c in CONVS]
    (tmp_path / "a.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    (tmp_path / "a.json").write_text(json.dumps(rows))
    counter = load_counter(str(tok_dir))
    base = scan(ScanRequest(files=(str(tmp_path / "a.jsonl"),), counter=counter, seq_len=128))
    other = scan(ScanRequest(files=(str(tmp_path / "a.json"),), counter=counter, seq_len=128))
    assert other.tokens_total == base.tokens_total and other.packed_sequences == base.packed_sequences
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "a.parquet")
    par = scan(ScanRequest(files=(str(tmp_path / "a.parquet"),), counter=counter, seq_len=128))
    assert par.tokens_total == base.tokens_total


def _ffd_brute(lengths, cap):
    """LLaMA-Factory's greedy knapsack, item by item (the reference for the histogram version)."""
    items = sorted(min(x, cap) for x in lengths if x > 0)
    bins = 0
    while items:
        bins += 1
        room = cap
        i = len(items) - 1
        while i >= 0:
            if items[i] <= room:
                room -= items.pop(i)
                i = min(i, len(items) - 1)
            else:
                i -= 1
    return bins


def test_pack_count_matches_item_by_item():
    rng = random.Random(3)
    for _ in range(50):
        lengths = [rng.randint(1, 700) for _ in range(rng.randint(1, 120))]
        cap = rng.choice([256, 512, 1024])
        assert pack_count(lengths, cap) == _ffd_brute(lengths, cap)


def test_padding_is_longest_in_micro_batch():
    lengths = [10, 20, 30, 40]
    assert padded_tokens(lengths, 1, 100) == 100
    assert padded_tokens(lengths, 4, 100) == 160
    assert padded_tokens(lengths, 4, 25) == 100  # cut to the cut-off


def test_bad_rows_reported_with_line_numbers(tok_dir, tmp_path):
    f = tmp_path / "d.jsonl"
    f.write_text('{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}\n'
                 "{not json\n"
                 '{"messages": [{"role": "wizard", "content": "x"}]}\n'
                 '[1, 2]\n')
    counter = load_counter(str(tok_dir))
    st = scan(ScanRequest(files=(str(f),), counter=counter, seq_len=64))
    assert st.samples == 1 and st.skipped == 3
    assert [e["line"] for e in st.errors] == [2, 3, 4]
    with pytest.raises(DatasetError, match="line 2"):
        scan(ScanRequest(files=(str(f),), counter=counter, seq_len=64, on_error="fail"))


def test_sample_estimates_with_interval(tok_dir, tmp_path):
    rng = random.Random(1)
    convs = [[("user", "q " * rng.randint(1, 50)), ("assistant", "a " * rng.randint(1, 200))] for _ in range(400)]
    f = tmp_path / "d.jsonl"
    f.write_text("\n".join(json.dumps(as_messages(c)) for c in convs))
    counter = load_counter(str(tok_dir))
    full = scan(ScanRequest(files=(str(f),), counter=counter, seq_len=256))
    est = scan(ScanRequest(files=(str(f),), counter=counter, seq_len=256, sample=100))
    assert est.sampled and est.samples == 100 and est.rows == 400
    lo, hi = est.tokens_ci95
    assert lo <= full.tokens_total <= hi
    assert abs(est.tokens_total - full.tokens_total) / full.tokens_total < 0.2


def run_cli(args, capsys):
    try:
        rc = main(args)
    except SystemExit as e:
        rc = e.code
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_cli_json_round_trip(tok_dir, tmp_path, capsys):
    from trainfit.dataset import load_stats

    f = tmp_path / "d.jsonl"
    f.write_text("\n".join(json.dumps(as_sharegpt(c), ensure_ascii=False) for c in CONVS))
    rc, out, err = run_cli(["data", str(f), "--tokenizer", str(tok_dir), "--seq-len", "64", "--json"], capsys)
    assert rc == 0, err
    (tmp_path / "s.json").write_text(out)
    st = load_stats(str(tmp_path / "s.json"))
    assert st.samples == len(CONVS) and st.seq_len == 64 and st.packed_sequences >= 1
    rc, out, err = run_cli(["data", str(f), "--tokenizer", str(tok_dir), "--seq-len", "64"], capsys)
    assert rc == 0 and "packing to 64" in out and "length histogram" in out


@pytest.mark.parametrize("case", ["folder", "binary", "notjson", "no_template", "no_tokenizer", "columns"])
def test_cli_errors_are_clear(tok_dir, tmp_path, capsys, case):
    good = tmp_path / "d.jsonl"
    good.write_text(json.dumps(as_messages(CONVS[0])))
    args = ["data", str(good), "--tokenizer", str(tok_dir)]
    if case == "folder":
        args[1] = str(tmp_path)
    elif case == "binary":
        (tmp_path / "b.bin").write_bytes(b"\x00\x01\x02" * 100)
        args[1] = str(tmp_path / "b.bin")
    elif case == "notjson":
        (tmp_path / "n.jsonl").write_text("hello\nworld\n")
        args[1] = str(tmp_path / "n.jsonl")
    elif case == "no_template":
        d = tmp_path / "tok"
        d.mkdir()
        (d / "tokenizer.json").write_text((tok_dir / "tokenizer.json").read_text())
        args[3] = str(d)
    elif case == "no_tokenizer":
        args[3] = str(tmp_path)
    elif case == "columns":
        args += ["--columns", "bogus=x"]
    rc, out, err = run_cli(args, capsys)
    assert rc == 2, (rc, out, err)
    assert "error:" in err and "fix:" in err and "Traceback" not in err
    if case == "no_template":
        assert "--chat-template" in err


def test_cutoffs_table(tok_dir, tmp_path):
    rng = random.Random(2)
    convs = [[("user", "q " * rng.randint(1, 100)), ("assistant", "a " * rng.randint(1, 600))] for _ in range(60)]
    f = tmp_path / "d.jsonl"
    f.write_text("\n".join(json.dumps(as_messages(c)) for c in convs))
    counter = load_counter(str(tok_dir))
    st = scan(ScanRequest(files=(str(f),), counter=counter, seq_len=300))
    lens = [counter.count(c)[0] for c in convs]
    caps = [c["seq_len"] for c in st.cutoffs]
    assert caps[0] == 256 and caps[-1] >= max(lens)
    for c in st.cutoffs:
        assert c["packed_sequences"] == pack_count(lens, c["seq_len"])
        assert c["tokens_after_cut"] == sum(min(x, c["seq_len"]) for x in lens)
    assert st.at(300)["packed_sequences"] == pack_count(lens, 300)
    with pytest.raises(DatasetError, match="--seq-len"):
        st.at(1000)
    assert st.steps_per_epoch(8, packing=False) == -(-60 // 8)
