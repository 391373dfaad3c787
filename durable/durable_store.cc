// Placeholder until durable_store lands.
