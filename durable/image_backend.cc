// Placeholder until image_backend lands.
