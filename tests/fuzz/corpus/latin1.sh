#!/bin/sh
# café résumé
torchrun -m swift.cli.sft --model Qwen/Qwen3-8B
