"""Thin Click commands: parse options, call one core function, hand the result to ``ui``."""
