"""Plans on hardware: the accelerator table, serving fit and decode roofline, training, fine-tuning,
latency, local (llama.cpp-style) runs."""
