// Placeholder until checkpoint_file lands.
