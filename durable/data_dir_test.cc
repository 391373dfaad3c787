// Placeholder until data_dir tests lands.
