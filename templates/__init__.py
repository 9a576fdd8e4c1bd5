"""Jinja2 templates for the generated C source, header, cffi build and Python wrapper."""
