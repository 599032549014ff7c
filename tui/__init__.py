"""The faces of the tour: the Textual app, the plain printer and the command line."""
