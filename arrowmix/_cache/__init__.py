"""The cache: where results live, how they are named, and the caching switch."""
