// Placeholder until wal_reader lands.
