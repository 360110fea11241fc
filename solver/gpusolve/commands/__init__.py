"""One module per CLI command or group; `gpusolve.cli` imports them only when invoked."""
