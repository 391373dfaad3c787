// Placeholder until image_backend tests lands.
