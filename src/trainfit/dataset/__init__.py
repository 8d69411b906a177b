"""Plan from your data: token counts, lengths, truncation, packing and padding of a training dataset, counted with
the model's own tokenizer and chat template (``trainfit data``; the ``data`` extra). ``plan --dataset`` reads the
stats file it writes."""

from trainfit.dataset.stats import SCHEMA, DatasetStats

__all__ = ["DatasetStats", "SCHEMA", "load_stats"]


def load_stats(path: str) -> DatasetStats:
    """A stats file written by ``trainfit data --json`` (through the input gate)."""
    from trainfit import inputs
    from trainfit.errors import DatasetError

    text = inputs.read_text_file(path, max_bytes=8 * 2**20, what="dataset stats file", error=DatasetError,
                                 fix="write one with `trainfit data FILE --tokenizer DIR --json > stats.json`")
    return DatasetStats.from_dict(inputs.loads_json(text, what="dataset stats file", error=DatasetError))
