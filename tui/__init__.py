"""The faces of the tour: the command line, the plain printer, and (soon) the Textual app."""
