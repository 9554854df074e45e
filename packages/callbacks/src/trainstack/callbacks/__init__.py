"""trainstack.callbacks: the callback library and the monitors, on TensorFlow 2."""
# --- monitors, logger directory, profiling ---
# --- scheduling, progress, time, stopping ---
# --- checkpoints, hyperparameters ---
# --- summaries, graph and tensors ---
