// Placeholder until file_io lands.
