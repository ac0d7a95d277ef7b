"""Small helpers below everything else: console progress, memory reports, CUDA lowering, finiteness checks, device
meshes."""
