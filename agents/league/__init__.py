"""The league's opponent pool: snapshots, prioritised fictitious self-play sampling."""
