// Placeholder until data_dir lands.
