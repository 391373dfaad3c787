// Placeholder until wal_reader tests lands.
