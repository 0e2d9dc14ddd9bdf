// Placeholder: filled in by the export work.
