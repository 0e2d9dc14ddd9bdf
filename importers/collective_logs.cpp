// Placeholder: filled in by the importer work.
