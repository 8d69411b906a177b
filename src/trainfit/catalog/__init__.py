"""Hardware catalogs: GPUs and instance types (bundled CSV data + refresh cache + user overlay).

Only the ``csv`` and ``yaml`` modules are used; nothing here imports pandas, torch or transformers.
"""

from trainfit.catalog.gpus import GPU, get_gpu, gpu_names, list_gpus, normalize_gpu_name
from trainfit.catalog.instances import Instance, get_instance, list_instances
from trainfit.catalog._schema import CURRENCIES, GPU_COLUMNS, INSTANCE_COLUMNS, CatalogRow, Cell, Column, parse_row, to_csv_value
from trainfit.catalog._store import bundled_rows, current_catalog, overlay_path, reset_cache, set_overlay_path

__all__ = ["CURRENCIES", "GPU", "GPU_COLUMNS", "INSTANCE_COLUMNS", "CatalogRow", "Cell", "Column", "Instance", "bundled_rows", "current_catalog",
           "get_gpu", "get_instance", "gpu_names", "list_gpus", "list_instances", "normalize_gpu_name", "overlay_path",
           "parse_row", "reset_cache", "set_overlay_path", "to_csv_value"]
