// Placeholder until record_framing lands.
