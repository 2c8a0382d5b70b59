"""What a user names → a validated model description: files, bundled configs, the Hugging Face cache
and Hub, checkpoint headers (safetensors, GGUF), transformers' declared defaults."""
