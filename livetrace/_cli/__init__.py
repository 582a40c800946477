"""The ``livetrace`` command line, one module per command, and the renderers
(JSON lines, text, Go's dump formats) in render/."""
