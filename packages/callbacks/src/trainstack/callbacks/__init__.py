"""trainstack.callbacks: the callback library and the monitors, on TensorFlow 2."""
