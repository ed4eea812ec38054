//! Behaviour of search and of the model-facing text.
