"""Hardware catalogs: GPUs and instance types (bundled CSV data + refresh cache + user overlay).

Only the ``csv`` and ``yaml`` modules are used; nothing here imports pandas, torch or transformers.
"""

from trainfit.catalog.gpus import GPU, get_gpu, gpu_names, list_gpus, normalize_gpu_name
from trainfit.catalog.instances import Instance, get_instance, list_instances

__all__ = ["GPU", "Instance", "get_gpu", "get_instance", "gpu_names", "list_gpus", "list_instances",
           "normalize_gpu_name"]
