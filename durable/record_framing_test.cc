// Placeholder until record_framing tests lands.
