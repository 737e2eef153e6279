"""Export trained params to other frameworks: flat safetensors/npz, Hugging Face Marian, PyTorch, CTranslate2."""
