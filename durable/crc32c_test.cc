// Placeholder until crc32c tests lands.
