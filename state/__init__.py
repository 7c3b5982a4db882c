"""Graph state schemas, input models and reducers."""
