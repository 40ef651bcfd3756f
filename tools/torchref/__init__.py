# tools/torchref — DeepSeek-V4.1 as docs/model.md states it, written as a PyTorch user would (tools/torch_ref.py runs it).
