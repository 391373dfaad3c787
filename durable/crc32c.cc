// Placeholder until crc32c lands.
