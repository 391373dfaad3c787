// Placeholder until wal_writer tests lands.
