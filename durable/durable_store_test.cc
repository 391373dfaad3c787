// Placeholder until durable_store tests lands.
