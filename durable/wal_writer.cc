// Placeholder until wal_writer lands.
