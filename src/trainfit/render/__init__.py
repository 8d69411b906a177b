"""Renderers: terminal tables now; job files (DeepSpeed, ms-swift, DLC...) later."""
