"""C generation from straight-line programs, cffi build, cache and loader."""
