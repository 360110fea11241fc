"""`python -m gpusolve`: the command line, as the `gpusolve` script runs it."""

from gpusolve.cli import main

main()
