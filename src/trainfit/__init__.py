"""trainfit: will a Qwen3 training job fit, how fast, at what cost, and how to launch it.

The public API is re-exported here; submodules whose names start with ``_`` are private.
"""

__version__ = "0.1.0"

from trainfit.errors import TrainfitError  # noqa: E402
from trainfit.models import ModelShape, from_hf_config, get_model, load_config_path, model_names  # noqa: E402
from trainfit.workload import Workload  # noqa: E402

__all__ = ["ModelShape", "TrainfitError", "Workload", "__version__", "from_hf_config", "get_model",
           "load_config_path", "model_names"]
