// Placeholder until checkpoint_file tests lands.
