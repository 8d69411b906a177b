"""Holds the ``sitecustomize`` that ``trainfit watch --hf-callback`` puts on the trainer's PYTHONPATH."""
