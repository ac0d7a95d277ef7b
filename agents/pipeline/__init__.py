"""The design's phased pipeline: record expert games, then BC -> teacher -> student -> league."""
