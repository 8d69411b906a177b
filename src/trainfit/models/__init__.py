"""Model shapes: the Qwen3 registry and Hugging Face config import."""

from trainfit.models.hf_config import SUPPORTED_MODEL_TYPES, from_hf_config, load_config_path
from trainfit.models.registry import get_model, model_names, resolve_name
from trainfit.models.shapes import ModelShape, ParamTensor

__all__ = ["ModelShape", "ParamTensor", "SUPPORTED_MODEL_TYPES", "from_hf_config", "get_model",
           "load_config_path", "model_names", "resolve_name"]
